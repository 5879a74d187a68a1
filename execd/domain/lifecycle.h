/*
 * lifecycle.h -- lifecycle hooks as upstream 1.1 configures them: a
 * preStart hook run before execd is ready, and periodic hooks on cron
 * schedules, never two runs of one hook at once.
 *
 * A configuration comes from OPENSANDBOX_LIFECYCLE (JSON, or TOML) at
 * start, or from the "lifecycle" object of POST /internal/init.  Hooks are argv
 * lists run without a shell interpreting them, as jobs (job.h), so under
 * the same sandbox, default user and limits as commands; their
 * environment is execd's without its configuration names, under the
 * runtime binding's and the EXECD_ENVS file's; their output goes to
 * execd's log, a line at a time.  A run past its timeout is stopped
 * (its whole tree).  The parsers are pure (any thread); the runner is
 * the loop thread's.
 */
#ifndef EXECD_LIFECYCLE_H
#define EXECD_LIFECYCLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <jansson.h>

#define LIFECYCLE_TIMEOUT_S	60	/* a hook's timeout when it gives 0 */
#define LIFECYCLE_HOOKS_MAX	64	/* periodic hooks */
#define LIFECYCLE_ARGV_MAX	256	/* items of a command */
#define LIFECYCLE_ENV		"OPENSANDBOX_LIFECYCLE"
#define LIFECYCLE_PATH_ENV	"EXECD_LIFECYCLE_CONFIG"

struct limits;
struct loop;

/* A schedule: @every N seconds, or the minutes a cron spec matches. */
struct lifecycle_cron {
	uint64_t	 every_s;	/* > 0: every this many seconds */
	uint64_t	 min;		/* bit per minute 0..59 */
	uint32_t	 hour;		/* bit per hour 0..23 */
	uint32_t	 dom;		/* bit per day 1..31 */
	uint16_t	 month;		/* bit per month 1..12 */
	uint8_t		 dow;		/* bit per weekday 0..6, Sunday 0 */
	bool		 dom_any;	/* day of month was * or ? */
	bool		 dow_any;	/* day of week was * or ? */
	bool		 utc;		/* TZ=UTC; else execd's local time */
};

struct lifecycle_hook {
	char		*name;		/* "preStart", or the periodic name */
	char	       **argv;		/* NULL-terminated */
	uint64_t	 timeout_s;	/* > 0 */
	char		*schedule;	/* periodic: the spec as given */
	struct lifecycle_cron cron;	/* periodic */
};

struct lifecycle {
	struct lifecycle_hook	*pre_start;	/* NULL: none */
	struct lifecycle_hook	*periodic;
	size_t			 nperiodic;
};

/*
 * A configuration from JSON (an object: version, preStart, periodic),
 * checked by upstream's rules and in its words ("preStart command must
 * not be empty", "duplicate periodic hook name \"x\"", "unsupported
 * lifecycle config version 2", "periodic hook \"x\" has invalid
 * schedule: ...").  0 with *out set, or -EINVAL with the message.
 */
int	 lifecycle_parse(const json_t *v, struct lifecycle **out, char *err,
	    size_t errlen);
/*
 * The same from text (OPENSANDBOX_LIFECYCLE, the saved file): JSON when
 * its first character that is not blank is '{', else TOML (toml.h's
 * subset) with the keys version, preStart, periodic, name, schedule,
 * command and timeout_seconds.
 */
int	 lifecycle_parse_text(const char *s, size_t n, struct lifecycle **out,
	    char *err, size_t errlen);
void	 lifecycle_free(struct lifecycle *);	/* NULL ok */
/* The configuration as JSON, as lifecycle_parse reads it back. */
json_t	*lifecycle_json(const struct lifecycle *);
/* The configuration as TOML text (a new string), as it is saved. */
char	*lifecycle_toml(const struct lifecycle *);

/*
 * A schedule: 5 cron fields (minute hour day-of-month month day-of-week;
 * *, ?, lists, ranges, steps, month and day names), or @yearly,
 * @annually, @monthly, @weekly, @daily, @midnight, @hourly, or @every D
 * (a Go duration, a whole number of seconds of at least 1 s); a TZ= or
 * CRON_TZ= prefix of UTC (or Etc/UTC, GMT) counts in UTC.  0, or -EINVAL
 * with the reason.  Pure.
 */
int	 lifecycle_cron_parse(const char *s, struct lifecycle_cron *out,
	    char *err, size_t errlen);
/*
 * The first time after `after` (seconds since the epoch) that c
 * matches, or -1 when none does within eight years.  Pure but for the
 * local time zone.
 */
int64_t	 lifecycle_cron_next(const struct lifecycle_cron *c, int64_t after);

/*
 * Read the template's hooks: OPENSANDBOX_LIFECYCLE, then saved as TOML
 * (mode 0600, written whole) to EXECD_LIFECYCLE_CONFIG, or
 * ~/.execd/lifecycle.toml, so that a restarted execd finds them without
 * it; else that file (JSON or TOML, as the variable), or, without
 * EXECD_LIFECYCLE_CONFIG and that file, ~/.execd/lifecycle.json that
 * execd wrote before, which is then saved as TOML and removed.  Both
 * variables are then removed from execd's environment.  0 (none is no
 * error), or -errno with the reason.  Main thread, at start.
 */
int	 lifecycle_load(char *err, size_t errlen);
/* What lifecycle_load() read, or NULL. */
const struct lifecycle *lifecycle_template(void);

/*
 * The runner.  Jobs get grace_ms from SIGTERM to SIGKILL when stopped,
 * and limits (NULL: none, borrowed for as long as the runner runs).
 */
void	 lifecycle_init(struct loop *, unsigned grace_ms,
	    const struct limits *limits);
void	 lifecycle_shutdown(void);	/* stop every hook */
/*
 * Called once when preStart is over: 0, or -errno with why ("exited
 * with status 3", "timed out after 5 s", a start failure).
 */
typedef void lifecycle_done_cb(int rc, const char *why, void *arg);
/*
 * Run l's preStart (l is borrowed for the call).  1 when there is none,
 * 0 when started; -EBUSY when one runs already, or -errno when it cannot
 * start, with why in err (done is then not called).
 */
int	 lifecycle_pre_start(const struct lifecycle *l, lifecycle_done_cb *done,
	    void *arg, char *err, size_t errlen);
/* Cancel a preStart that runs (done is not called); its job is stopped. */
void	 lifecycle_pre_start_cancel(void);
/* Schedule l's periodic hooks in place of any before (l borrowed). */
void	 lifecycle_periodic_start(const struct lifecycle *l);
/* Unschedule them; runs in progress are stopped. */
void	 lifecycle_periodic_stop(void);

/*
 * The start-up status file (--lifecycle-startup-status-file), where a
 * bootstrap script learns how preStart went: path is borrowed, NULL for
 * none.  Loop thread.
 */
void	 lifecycle_status_file(const char *path);
/*
 * Append a line (printf's fmt, a newline added) to that file, which must
 * exist: it is never created, so that a file its owner removed fails
 * start-up rather than report to nobody.  0 (also with no file set), or
 * -errno with why in err.  Loop thread.
 */
int	 lifecycle_status(char *err, size_t errlen, const char *fmt, ...)
	    __attribute__((format(printf, 3, 4)));

#endif
