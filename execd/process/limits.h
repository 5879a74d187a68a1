/*
 * limits.h -- the resource limits of one job: memory, processes, CPU time,
 * file size, open files, core dumps.
 *
 * A struct limits holds the keys that are set and a mask of which; kinds
 * of job (command, session, context, terminal) each have defaults, a
 * request's "limits" object goes over them (limits_over), and spawn.c
 * applies the result to the child (a cgroup where execd has one, rlimits
 * otherwise; see cgroup.h).  Sizes are bytes, written as a number or with
 * a binary unit ("256MiB", "1GiB", "64K"); counts and seconds are plain
 * numbers.  Pure: any thread.
 */
#ifndef EXECD_LIMITS_H
#define EXECD_LIMITS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

/* Bits of struct limits.set. */
#define LIMITS_F_MEMORY		0x01
#define LIMITS_F_PROCESSES	0x02
#define LIMITS_F_CPU		0x04
#define LIMITS_F_FILE_SIZE	0x08
#define LIMITS_F_OPEN_FILES	0x10
#define LIMITS_F_CORE		0x20

struct limits {
	uint64_t	 memory;	/* bytes */
	uint64_t	 processes;	/* processes (and threads) at once */
	uint64_t	 cpu_seconds;
	uint64_t	 file_size;	/* bytes, largest file written */
	uint64_t	 open_files;
	uint64_t	 core;		/* bytes of a core dump */
	unsigned	 set;		/* LIMITS_F_*: the keys given */
};

/* The kinds of job, each with its own defaults. */
enum limits_kind {
	LIMITS_COMMAND,
	LIMITS_SESSION,
	LIMITS_CONTEXT,
	LIMITS_PTY,
	LIMITS_NKINDS
};

/* Per-language limits of contexts, over the context defaults. */
struct limits_lang {
	char		 lang[64];
	struct limits	 l;
};

/*
 * Set one key ("memory", "processes", "cpu_seconds", "file_size",
 * "open_files", "core") from text ("256MiB", "1048576", "64").  0, or
 * -EINVAL with a message naming the key in err.
 */
int	limits_set(struct limits *, const char *key, const char *text,
	    char *err, size_t errlen);
/*
 * Set the keys of a request's "limits" object (numbers, or strings with a
 * unit for sizes).  0, or -EINVAL with a message naming the unknown key or
 * the bad value in err; l is then partly set.
 */
int	limits_from_json(struct limits *, const json_t *obj, char *err,
	    size_t errlen);
/*
 * A job's limits: defaults (NULL: none), and over them those of the
 * "limits" field of a request body, when there and not null.  0, or
 * -EINVAL with a message in err.
 */
int	limits_for(struct limits *out, const struct limits *defaults,
	    const json_t *body, char *err, size_t errlen);
/* The keys set in src replace dst's. */
void	limits_over(struct limits *dst, const struct limits *src);
/* One key's value as text ("256 MiB", "64", "30 s"), into buf. */
void	limits_format(const struct limits *, unsigned flag, char *buf,
	    size_t len);
/* The set keys as a JSON object (sizes in bytes); new reference. */
json_t	*limits_json(const struct limits *);
/* "command", "session", "context", "pty"; -EINVAL for other names. */
int	limits_kind_parse(const char *, enum limits_kind *);
const char *limits_kind_name(enum limits_kind);
/* The key's name for one LIMITS_F_ flag. */
const char *limits_key_name(unsigned flag);

#endif
