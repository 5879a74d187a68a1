/*
 * policy.h -- the policy file: execd's options as YAML (--config), read
 * into a struct conf through conf.h's table of options, and printed back
 * (--print-config) in a form this reader accepts.
 *
 * The file is one mapping.  Its keys are the options' names with '_' for
 * '-' (max_body_size, seccomp, no_new_privs, user ...), each with one
 * value, checked as the option's flag is; and "limits", a mapping of the
 * kinds of job (command, session, context, pty) and "languages" (a
 * mapping of language names) to mappings of limits.h's keys.  An unknown
 * key, a value of the wrong shape (a list or mapping where one value is
 * due, or the reverse) or a value the option refuses is an error that
 * names the file, line and column; the first one stops the reading.
 * Main thread.
 */
#ifndef EXECD_POLICY_H
#define EXECD_POLICY_H

#include <stddef.h>
#include <stdio.h>

struct conf;

#define POLICY_MAX	(1 << 20)	/* largest file read, in bytes */

/*
 * Read the file at path over what c holds.  0, or -EINVAL with
 * "PATH:LINE:COL: what" in err (or "PATH: what" when it cannot be read);
 * c is then partly set.
 */
int	policy_load(struct conf *c, const char *path, char *err,
	    size_t errlen);
/* The same from len bytes at text, named name in messages. */
int	policy_parse(struct conf *c, const char *name, const char *text,
	    size_t len, char *err, size_t errlen);
/*
 * Print c's options in force as a commented policy file.  The access
 * token is never printed (a comment says so); options with no value
 * are printed as comments.  Reading the output back and printing again
 * gives the same text.
 */
void	policy_print(const struct conf *c, FILE *f);

#endif
