/*
 * rk_desc.h -- the description of a REPL that execd-repl-kernel turns
 * into a Jupyter kernel: the "repl" object of its kernelspec's metadata
 * (docs/kernels.md gives the format and an example per REPL).
 *
 * Every string may hold "{marker}", replaced at parse time by the
 * kernel's random marker, so that what the REPL prints to end a run or
 * to frame a value cannot be mistaken for the user's own output.  Pure;
 * any thread.
 */
#ifndef RK_DESC_H
#define RK_DESC_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#define RK_ERRORS_MAX	8

/* How a REPL's error looks: a line starting with prefix begins it. */
struct rk_error {
	char	*prefix;	/* "|  Exception " */
	char	*ename;		/* the error's name for Jupyter */
	char	*cont;		/* lines starting so continue it ("": none) */
	bool	 discard;	/* program: the cell's declarations are not
				 * kept after it (a compile error) */
	bool	 rest;		/* every later line of its stream (up to
				 * the marker) continues it */
};

struct rk_desc {
	char		**argv;		/* NULL-terminated, non-empty */
	char		**init;		/* lines sent once at start */
	char		 *program;	/* "": a REPL; "go", "whole": each run
					 * runs argv on a file it writes */
	char		 *end;		/* line sent after each run's code;
					 * "{seq}" in it: the run's number */
	char		 *marker;	/* the line end prints */
	bool		  end_stderr;	/* end prints the marker on stderr too */
	char		 *result_open;	/* a value starts after this */
	char		 *result_close;	/* and ends before this */
	struct rk_error	  errors[RK_ERRORS_MAX];
	size_t		  nerrors;
	char		 *intr_write;	/* interrupt: bytes to the REPL's stdin */
	int		  intr_signal;	/* or a signal to its group (0: none) */
	char		 *intr_ename;	/* an interrupted run's error name */
	bool		  brackets;	/* is_complete by (), [], {} and quotes */
	char		 *incomplete_ename; /* code refused as incomplete */
	int		  ready_ms;	/* how long the start may take */
	char		 *language;	/* language_info.name */
	char		 *extension;	/* language_info.file_extension */
};

/*
 * Parse the description o (the "repl" object) with marker in place of
 * "{marker}".  0 with *out set, or -EINVAL with a message in err.
 */
int	rk_desc_parse(const json_t *o, const char *marker,
	    struct rk_desc **out, char *err, size_t errlen);
void	rk_desc_free(struct rk_desc *);	/* NULL ok */

/*
 * Replace "{file}" by path in argv and in the errors' prefixes (the
 * program file of a "program" description).
 */
void	rk_desc_set_file(struct rk_desc *, const char *path);

struct kp_kernelspec;
/*
 * Read dir/kernel.json (at most 1 MiB) as a kernelspec (*specp) and its
 * metadata.repl as a description (*out).  0, or -errno with a message.
 */
int	rk_desc_load(const char *dir, const char *marker,
	    struct kp_kernelspec **specp, struct rk_desc **out, char *err,
	    size_t errlen);

/*
 * "complete", "incomplete" or "invalid" for code by bracket and quote
 * balance (C-like languages: //, block comments, '', ""), or "unknown"
 * when the description does not ask for it.
 */
const char *rk_desc_is_complete(const struct rk_desc *, const char *code);

#endif
