/*
 * lifecycle.c -- lifecycle hooks: their configuration, cron schedules,
 * and the runner of preStart and of the periodic hooks; see lifecycle.h.
 *
 * The configuration's rules and messages are upstream 1.1's (its robfig
 * cron for schedules, Go's durations for @every).  A hook runs as a job:
 * `exec 'arg0' 'arg1' ...`, every item single-quoted, so the shell only
 * replaces itself with the argv as given, and the job module gives it
 * the sandbox, the default user, the limits, a process group and a
 * stop that reaches its whole tree.  A periodic hook has at most one run
 * at a time: a tick that finds the previous run still going is skipped
 * and said so in the log.  Runs outlive a stop of their schedule only
 * until their job, stopped then, is complete.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../../util/buf.h"
#include "../../util/utf8.h"
#include "../core/log.h"
#include "../core/loop.h"
#include "../core/toml.h"
#include "../core/xmalloc.h"
#include "../process/job.h"
#include "lifecycle.h"
#include "runtime.h"

#define LINE_MAX_LOG	4096	/* a longer output line is logged in parts */
#define HORIZON_S	(8LL * 366 * 86400)
#define MAX_TIMEOUT_S	9223372036ULL	/* what Go's Duration holds */
#define SAVED_MAX	(1 << 20)	/* bytes of a saved configuration */

struct run;

/* A scheduled periodic hook. */
struct slot {
	struct lifecycle_hook	 hook;
	uint64_t		 timer;
	struct run		*active;	/* NULL: not running */
};

/* One run of a hook. */
struct run {
	struct lifecycle_hook	*hook;		/* owned */
	struct job		*job;
	struct buf		 out[2];	/* a partial line per stream */
	struct slot		*slot;		/* NULL: preStart or orphaned */
	bool			 pre;
	time_t			 t0;
};

static struct loop		*L;
static unsigned			 grace;
static const struct limits	*lim;
static struct slot		*slots;
static size_t			 nslots;
static struct run		*pre;
static lifecycle_done_cb	*pre_done;
static void			*pre_arg;
static struct lifecycle		*tmpl;		/* the template's */
static const char		*status_path;	/* start-up progress */

static const char *const months[] = { "jan", "feb", "mar", "apr", "may",
	"jun", "jul", "aug", "sep", "oct", "nov", "dec" };
static const char *const days[] = { "sun", "mon", "tue", "wed", "thu",
	"fri", "sat" };

static int	 hook_parse(const char *, const json_t *,
		    struct lifecycle_hook *, char *, size_t);
static void	 hook_reset(struct lifecycle_hook *);
static void	 hook_copy(struct lifecycle_hook *,
		    const struct lifecycle_hook *);
static int	 duration_parse(const char *, uint64_t *);
static int	 field_parse(const char *, int, int, const char *const *,
		    uint64_t *, bool *, char *, size_t);
static bool	 cron_day(const struct lifecycle_cron *, const struct tm *);
static int	 run_start(struct lifecycle_hook *, bool, struct slot *,
		    struct run **, char *, size_t);
static void	 run_output(struct job *, int, const char *, size_t, void *);
static void	 run_done(struct job *, int, bool, void *);
static void	 run_free(struct run *);
static void	 slot_tick(struct loop *, uint64_t, void *);
static void	 slot_arm(struct slot *);

/* --- configuration --- */

/* s without blanks around it, as a new string. */
static char *
trimmed(const char *s)
{
	size_t n;

	while (isspace((unsigned char)*s))
		s++;
	n = strlen(s);
	while (n > 0 && isspace((unsigned char)s[n - 1]))
		n--;
	return xstrndup(s, n);
}

/* One hook object (name for messages) into h: 0 or -EINVAL. */
static int
hook_parse(const char *name, const json_t *o, struct lifecycle_hook *h,
    char *err, size_t errlen)
{
	const json_t *cmd, *to, *e;
	size_t i, n;
	const char *s;

	if (!json_is_object(o)) {
		snprintf(err, errlen, "%s must be an object", name);
		return -EINVAL;
	}
	cmd = json_object_get(o, "command");
	to = json_object_get(o, "timeoutSeconds");
	if (cmd != NULL && !json_is_null(cmd) && !json_is_array(cmd)) {
		snprintf(err, errlen, "%s command must be an array of strings",
		    name);
		return -EINVAL;
	}
	n = json_array_size(cmd);
	json_array_foreach(cmd, i, e) {
		if (!json_is_string(e)) {
			snprintf(err, errlen, "%s command must be an array of "
			    "strings", name);
			return -EINVAL;
		}
	}
	s = n > 0 ? json_string_value(json_array_get(cmd, 0)) : "";
	while (isspace((unsigned char)*s))
		s++;
	if (n == 0 || *s == '\0') {
		snprintf(err, errlen, "%s command must not be empty", name);
		return -EINVAL;
	}
	if (n > LIFECYCLE_ARGV_MAX) {
		snprintf(err, errlen, "%s command must not have more than %d "
		    "items", name, LIFECYCLE_ARGV_MAX);
		return -EINVAL;
	}
	json_array_foreach(cmd, i, e) {
		if (strlen(json_string_value(e)) != json_string_length(e)) {
			snprintf(err, errlen, "%s command must not contain "
			    "NUL", name);
			return -EINVAL;
		}
	}
	if (to != NULL && !json_is_null(to) && !json_is_integer(to)) {
		snprintf(err, errlen, "%s timeoutSeconds must be an integer",
		    name);
		return -EINVAL;
	}
	if (json_integer_value(to) < 0) {
		snprintf(err, errlen, "%s timeoutSeconds must not be negative",
		    name);
		return -EINVAL;
	}
	if ((uint64_t)json_integer_value(to) > MAX_TIMEOUT_S) {
		snprintf(err, errlen, "%s timeoutSeconds is too large", name);
		return -EINVAL;
	}
	h->timeout_s = json_integer_value(to) > 0 ?
	    (uint64_t)json_integer_value(to) : LIFECYCLE_TIMEOUT_S;
	h->argv = xcalloc(n + 1, sizeof(*h->argv));
	json_array_foreach(cmd, i, e)
		h->argv[i] = xstrdup(json_string_value(e));
	return 0;
}

static void
hook_reset(struct lifecycle_hook *h)
{
	for (size_t i = 0; h->argv != NULL && h->argv[i] != NULL; i++)
		free(h->argv[i]);
	free(h->argv);
	free(h->name);
	free(h->schedule);
	memset(h, 0, sizeof(*h));
}

static void
hook_copy(struct lifecycle_hook *to, const struct lifecycle_hook *from)
{
	size_t n = 0;

	*to = *from;
	to->name = xstrdup(from->name);
	to->schedule = from->schedule ? xstrdup(from->schedule) : NULL;
	while (from->argv[n] != NULL)
		n++;
	to->argv = xcalloc(n + 1, sizeof(*to->argv));
	for (size_t i = 0; i < n; i++)
		to->argv[i] = xstrdup(from->argv[i]);
}

/* A configuration from JSON; see lifecycle.h. */
int
lifecycle_parse(const json_t *v, struct lifecycle **out, char *err,
    size_t errlen)
{
	struct lifecycle *l;
	const json_t *ver, *ps, *per, *e, *f;
	struct lifecycle_hook *h;
	char why[200], *name = NULL, *sched = NULL;
	size_t i;
	uint64_t every;
	const char *d;

	if (!json_is_object(v)) {
		snprintf(err, errlen, "lifecycle config must be an object");
		return -EINVAL;
	}
	ver = json_object_get(v, "version");
	ps = json_object_get(v, "preStart");
	per = json_object_get(v, "periodic");
	if (ver != NULL && !json_is_null(ver) && !json_is_integer(ver)) {
		snprintf(err, errlen, "lifecycle config version must be an "
		    "integer");
		return -EINVAL;
	}
	if (json_integer_value(ver) != 0 && json_integer_value(ver) != 1) {
		snprintf(err, errlen, "unsupported lifecycle config version "
		    "%lld", (long long)json_integer_value(ver));
		return -EINVAL;
	}
	if (per != NULL && !json_is_null(per) && !json_is_array(per)) {
		snprintf(err, errlen, "periodic must be an array");
		return -EINVAL;
	}
	if (json_array_size(per) > LIFECYCLE_HOOKS_MAX) {
		snprintf(err, errlen, "periodic must not have more than %d "
		    "hooks", LIFECYCLE_HOOKS_MAX);
		return -EINVAL;
	}
	l = xcalloc(1, sizeof(*l));
	if (ps != NULL && !json_is_null(ps)) {
		l->pre_start = xcalloc(1, sizeof(*l->pre_start));
		if (hook_parse("preStart", ps, l->pre_start, err, errlen) < 0)
			goto fail;
		l->pre_start->name = xstrdup("preStart");
	}
	l->periodic = xcalloc(json_array_size(per) + 1, sizeof(*l->periodic));
	json_array_foreach(per, i, e) {
		h = &l->periodic[i];
		l->nperiodic = i + 1;
		f = json_is_object(e) ? json_object_get(e, "name") : NULL;
		if (!json_is_object(e) || (f != NULL && !json_is_null(f) &&
		    !json_is_string(f)) || ((f = json_object_get(e,
		    "schedule")) != NULL && !json_is_null(f) &&
		    !json_is_string(f))) {
			snprintf(err, errlen, "periodic hooks must be objects "
			    "with a string name and schedule");
			goto fail;
		}
		f = json_object_get(e, "name");
		name = trimmed(f != NULL ? json_string_value(f) : "");
		if (*name == '\0') {
			snprintf(err, errlen, "periodic hook name must not be "
			    "blank");
			goto fail;
		}
		for (size_t j = 0; j < i; j++) {
			if (strcmp(l->periodic[j].name, name) == 0) {
				snprintf(err, errlen, "duplicate periodic hook "
				    "name \"%s\"", name);
				goto fail;
			}
		}
		f = json_object_get(e, "schedule");
		sched = trimmed(f != NULL ? json_string_value(f) : "");
		if (*sched == '\0') {
			snprintf(err, errlen, "periodic hook \"%s\" schedule "
			    "must not be blank", name);
			goto fail;
		}
		if (lifecycle_cron_parse(sched, &h->cron, why,
		    sizeof(why)) < 0) {
			snprintf(err, errlen, "periodic hook \"%s\" has invalid "
			    "schedule: %s", name, why);
			goto fail;
		}
		d = strchr(sched, ' ') && (strncmp(sched, "TZ=", 3) == 0 ||
		    strncmp(sched, "CRON_TZ=", 8) == 0) ?
		    strchr(sched, ' ') + 1 : sched;
		while (*d == ' ')
			d++;
		if (strncmp(d, "@every ", 7) == 0 && (duration_parse(d + 7,
		    &every) < 0 || every < 1000000000ULL ||
		    every % 1000000000ULL != 0)) {
			snprintf(err, errlen, "periodic hook \"%s\" @every "
			    "interval must be a whole number of seconds", name);
			goto fail;
		}
		snprintf(why, sizeof(why), "periodic %s", name);
		if (hook_parse(why, e, h, err, errlen) < 0)
			goto fail;
		h->name = name;
		h->schedule = sched;
		name = sched = NULL;
	}
	*out = l;
	return 0;
fail:
	utf8_scrub(err);
	free(name);
	free(sched);
	lifecycle_free(l);
	return -EINVAL;
}

/*
 * The TOML form's document as the JSON form's object: the same keys but
 * timeout_seconds for timeoutSeconds (a timeoutSeconds in TOML is
 * ignored, as upstream's decoder ignores it).  Tables that are not where
 * hooks go pass as they are, for lifecycle_parse to refuse.
 */
static json_t *
hook_from_toml(json_t *t)
{
	static const char *const keys[] = { "name", "schedule", "command" };
	json_t *o, *v;

	if (!json_is_object(t))
		return json_incref(t);
	o = json_object();
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		if ((v = json_object_get(t, keys[i])) != NULL)
			json_object_set(o, keys[i], v);
	if ((v = json_object_get(t, "timeout_seconds")) != NULL)
		json_object_set(o, "timeoutSeconds", v);
	return o;
}

static json_t *
from_toml(json_t *doc)
{
	json_t *o = json_object(), *v, *a, *e;
	size_t i;

	if ((v = json_object_get(doc, "version")) != NULL)
		json_object_set(o, "version", v);
	if ((v = json_object_get(doc, "preStart")) != NULL)
		json_object_set_new(o, "preStart", hook_from_toml(v));
	if ((v = json_object_get(doc, "periodic")) != NULL &&
	    json_is_array(v)) {
		a = json_array();
		json_array_foreach(v, i, e)
			json_array_append_new(a, hook_from_toml(e));
		json_object_set_new(o, "periodic", a);
	} else if (v != NULL) {
		json_object_set(o, "periodic", v);
	}
	return o;
}

/* From text: JSON when it starts with '{', else TOML; see lifecycle.h. */
int
lifecycle_parse_text(const char *s, size_t n, struct lifecycle **out,
    char *err, size_t errlen)
{
	json_error_t je;
	json_t *v, *doc;
	int rc;

	while (n > 0 && isspace((unsigned char)*s)) {
		s++;
		n--;
	}
	while (n > 0 && isspace((unsigned char)s[n - 1]))
		n--;
	if (n == 0) {
		snprintf(err, errlen, "empty lifecycle config");
		return -EINVAL;
	}
	if (*s != '{') {
		if (toml_parse(s, n, &doc, err, errlen) < 0)
			return -EINVAL;
		v = from_toml(doc);
		json_decref(doc);
	} else if ((v = json_loadb(s, n, 0, &je)) == NULL) {
		snprintf(err, errlen, "%s", je.text);
		utf8_scrub(err);
		return -EINVAL;
	}
	rc = lifecycle_parse(v, out, err, errlen);
	json_decref(v);
	return rc;
}

void
lifecycle_free(struct lifecycle *l)
{
	if (l == NULL)
		return;
	if (l->pre_start != NULL)
		hook_reset(l->pre_start);
	free(l->pre_start);
	for (size_t i = 0; i < l->nperiodic; i++)
		hook_reset(&l->periodic[i]);
	free(l->periodic);
	free(l);
}

/* One hook as JSON. */
static json_t *
hook_json(const struct lifecycle_hook *h, bool periodic)
{
	json_t *o = json_object(), *a = json_array();

	if (periodic) {
		json_object_set_new(o, "name", json_string(h->name));
		json_object_set_new(o, "schedule", json_string(h->schedule));
	}
	for (size_t i = 0; h->argv[i] != NULL; i++)
		json_array_append_new(a, json_string(h->argv[i]));
	json_object_set_new(o, "command", a);
	json_object_set_new(o, "timeoutSeconds",
	    json_integer((json_int_t)h->timeout_s));
	return o;
}

/* The configuration as JSON; see lifecycle.h. */
json_t *
lifecycle_json(const struct lifecycle *l)
{
	json_t *o = json_pack("{s:i}", "version", 1), *a = json_array();

	if (l->pre_start != NULL)
		json_object_set_new(o, "preStart",
		    hook_json(l->pre_start, false));
	for (size_t i = 0; i < l->nperiodic; i++)
		json_array_append_new(a, hook_json(&l->periodic[i], true));
	json_object_set_new(o, "periodic", a);
	return o;
}

/* One hook in the TOML form. */
static json_t *
hook_toml(const struct lifecycle_hook *h, bool periodic)
{
	json_t *o = hook_json(h, periodic), *t;

	t = json_object_get(o, "timeoutSeconds");
	json_object_set(o, "timeout_seconds", t);
	json_object_del(o, "timeoutSeconds");
	return o;
}

/* The configuration as TOML; see lifecycle.h. */
char *
lifecycle_toml(const struct lifecycle *l)
{
	json_t *o = json_pack("{s:i}", "version", 1), *a;
	char *s;

	if (l->pre_start != NULL)
		json_object_set_new(o, "preStart",
		    hook_toml(l->pre_start, false));
	if (l->nperiodic > 0) {
		a = json_array();
		for (size_t i = 0; i < l->nperiodic; i++)
			json_array_append_new(a,
			    hook_toml(&l->periodic[i], true));
		json_object_set_new(o, "periodic", a);
	}
	if ((s = toml_dump(o)) == NULL)
		fatalx("a configuration that TOML cannot hold");
	json_decref(o);
	return s;
}

/* --- schedules --- */

/* A Go duration ("1m30s", "1.5h", "30s") in nanoseconds: 0 or -EINVAL. */
static int
duration_parse(const char *s, uint64_t *out)
{
	static const struct { const char *u; uint64_t ns; } units[] = {
		{ "ns", 1 }, { "us", 1000 }, { "\xc2\xb5s", 1000 },
		{ "ms", 1000000 }, { "s", 1000000000ULL },
		{ "m", 60000000000ULL }, { "h", 3600000000000ULL },
	};
	uint64_t total = 0, whole, frac, scale, mult, add;
	const char *p = s;
	size_t ul;
	bool digits;

	while (isspace((unsigned char)*p))
		p++;
	if (strcmp(p, "0") == 0) {
		*out = 0;
		return 0;
	}
	if (*p == '\0')
		return -EINVAL;
	while (*p != '\0' && !isspace((unsigned char)*p)) {
		whole = frac = 0;
		scale = 1;
		digits = false;
		for (; isdigit((unsigned char)*p); p++, digits = true) {
			if (whole > (UINT64_MAX - 9) / 10)
				return -EINVAL;
			whole = whole * 10 + (uint64_t)(*p - '0');
		}
		if (*p == '.') {
			for (p++; isdigit((unsigned char)*p); p++) {
				digits = true;
				if (scale < 1000000000000000000ULL) {
					frac = frac * 10 + (uint64_t)(*p - '0');
					scale *= 10;
				}
			}
		}
		if (!digits)
			return -EINVAL;
		mult = 0;
		for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
			ul = strlen(units[i].u);
			if (strncmp(p, units[i].u, ul) == 0 &&
			    !isalpha((unsigned char)p[ul])) {
				mult = units[i].ns;
				p += ul;
				break;
			}
		}
		if (mult == 0 || (whole != 0 && whole > UINT64_MAX / mult))
			return -EINVAL;
		add = whole * mult;
		/* the fraction, without overflow: frac < scale */
		add += (uint64_t)((long double)frac * mult / scale);
		if (add > UINT64_MAX - total)
			return -EINVAL;
		total += add;
	}
	while (isspace((unsigned char)*p))
		p++;
	if (*p != '\0')
		return -EINVAL;
	*out = total;
	return 0;
}

/* A number, or a name of names (index + base): 0 or -EINVAL. */
static int
value_parse(const char *s, size_t n, int base, const char *const *names,
    size_t nnames, long *out, char *err, size_t errlen)
{
	char buf[32];
	char *end;

	if (n == 0 || n >= sizeof(buf)) {
		snprintf(err, errlen, "failed to parse int from %.*s",
		    (int)(n < 40 ? n : 40), s);
		return -EINVAL;
	}
	memcpy(buf, s, n);
	buf[n] = '\0';
	for (size_t i = 0; i < nnames; i++) {
		if (strcasecmp(buf, names[i]) == 0) {
			*out = (long)i + base;
			return 0;
		}
	}
	if (buf[0] == '-' || !isdigit((unsigned char)buf[buf[0] == '+'])) {
		snprintf(err, errlen, buf[0] == '-' ? "negative number (%s) not "
		    "allowed" : "failed to parse int from %s", buf);
		return -EINVAL;
	}
	errno = 0;
	*out = strtol(buf, &end, 10);
	if (*end != '\0' || errno != 0) {
		snprintf(err, errlen, "failed to parse int from %s", buf);
		return -EINVAL;
	}
	return 0;
}

/*
 * One cron field (comma-separated ranges) into bits, from lo to hi;
 * *any says whether it was * or ? (without a step over 1).
 */
static int
field_parse(const char *f, int lo, int hi, const char *const *names,
    uint64_t *bits, bool *any, char *err, size_t errlen)
{
	const char *p = f, *end, *slash, *dash;
	long start, stop, step;
	size_t nnames = names == months ? 12 : names == days ? 7 : 0;
	int base = names == months ? 1 : 0;

	*bits = 0;
	*any = false;
	for (; ; p = end + 1) {
		bool star = false, single;

		end = p + strcspn(p, ",");
		slash = memchr(p, '/', (size_t)(end - p));
		dash = memchr(p, '-', (size_t)((slash ? slash : end) - p));
		if (slash != NULL && memchr(slash + 1, '/',
		    (size_t)(end - slash - 1)) != NULL) {
			snprintf(err, errlen, "too many slashes: %.*s",
			    (int)(end - p), p);
			return -EINVAL;
		}
		single = dash == NULL;
		if ((size_t)((dash ? dash : slash ? slash : end) - p) == 1 &&
		    (*p == '*' || *p == '?')) {
			start = lo;
			stop = hi;
			star = true;
		} else {
			if (value_parse(p, (size_t)((dash ? dash : slash ?
			    slash : end) - p), base, names, nnames, &start,
			    err, errlen) < 0)
				return -EINVAL;
			stop = start;
			if (dash != NULL) {
				const char *e2 = slash ? slash : end;

				if (memchr(dash + 1, '-',
				    (size_t)(e2 - dash - 1)) != NULL) {
					snprintf(err, errlen, "too many hyphens: "
					    "%.*s", (int)(end - p), p);
					return -EINVAL;
				}
				if (value_parse(dash + 1, (size_t)(e2 - dash -
				    1), base, names, nnames, &stop, err,
				    errlen) < 0)
					return -EINVAL;
			}
		}
		step = 1;
		if (slash != NULL) {
			if (value_parse(slash + 1, (size_t)(end - slash - 1), 0,
			    NULL, 0, &step, err, errlen) < 0)
				return -EINVAL;
			if (single && !star)
				stop = hi;
			if (step > 1)
				star = false;
		}
		if (start < lo) {
			snprintf(err, errlen, "beginning of range (%ld) below "
			    "minimum (%d): %.*s", start, lo, (int)(end - p), p);
			return -EINVAL;
		}
		if (stop > hi) {
			snprintf(err, errlen, "end of range (%ld) above maximum "
			    "(%d): %.*s", stop, hi, (int)(end - p), p);
			return -EINVAL;
		}
		if (start > stop) {
			snprintf(err, errlen, "beginning of range (%ld) beyond "
			    "end of range (%ld): %.*s", start, stop,
			    (int)(end - p), p);
			return -EINVAL;
		}
		if (step <= 0) {
			snprintf(err, errlen, "step of range should be a "
			    "positive number: %.*s", (int)(end - p), p);
			return -EINVAL;
		}
		for (long v = start; v <= stop; v += step)
			*bits |= 1ULL << v;
		*any |= star;
		if (*end == '\0')
			break;
	}
	return 0;
}

/* A schedule; see lifecycle.h. */
int
lifecycle_cron_parse(const char *spec, struct lifecycle_cron *out,
    char *err, size_t errlen)
{
	static const struct { const char *name, *spec; } desc[] = {
		{ "@yearly", "0 0 1 1 *" }, { "@annually", "0 0 1 1 *" },
		{ "@monthly", "0 0 1 * *" }, { "@weekly", "0 0 * * 0" },
		{ "@daily", "0 0 * * *" }, { "@midnight", "0 0 * * *" },
		{ "@hourly", "0 * * * *" },
	};
	struct lifecycle_cron c = { 0 };
	char *s = trimmed(spec), *p = s, *f[6], *save = NULL, *zone;
	uint64_t bits, ns;
	size_t n = 0;
	bool any;
	int rc = -EINVAL;

	if (strncmp(p, "TZ=", 3) == 0 || strncmp(p, "CRON_TZ=", 8) == 0) {
		zone = strchr(p, '=') + 1;
		p = zone + strcspn(zone, " \t");
		if (*p == '\0') {
			snprintf(err, errlen, "a time zone needs a schedule "
			    "after it");
			goto out;
		}
		*p++ = '\0';
		if (strcmp(zone, "UTC") == 0 || strcmp(zone, "Etc/UTC") == 0 ||
		    strcmp(zone, "GMT") == 0 || strcmp(zone, "Etc/GMT") == 0)
			c.utc = true;
		else if (strcmp(zone, "Local") != 0) {
			snprintf(err, errlen, "unsupported time zone %.64s "
			    "(execd knows UTC and Local)", zone);
			goto out;
		}
		while (isspace((unsigned char)*p))
			p++;
	}
	if (*p == '@') {
		if (strncmp(p, "@every ", 7) == 0) {
			if (duration_parse(p + 7, &ns) < 0) {
				snprintf(err, errlen, "failed to parse duration "
				    "%.64s", p);
				goto out;
			}
			/* as robfig's: under a second counts as one */
			c.every_s = ns < 1000000000ULL ? 1 : ns / 1000000000ULL;
			*out = c;
			rc = 0;
			goto out;
		}
		for (size_t i = 0; i < sizeof(desc) / sizeof(desc[0]); i++) {
			if (strcmp(p, desc[i].name) == 0) {
				any = c.utc;	/* the zone given before it */
				rc = lifecycle_cron_parse(desc[i].spec, &c, err,
				    errlen);
				c.utc = any;
				if (rc == 0)
					*out = c;
				goto out;
			}
		}
		snprintf(err, errlen, "unrecognized descriptor: %.64s", p);
		goto out;
	}
	for (char *t = strtok_r(p, " \t", &save); t != NULL;
	    t = strtok_r(NULL, " \t", &save)) {
		if (n < 6)
			f[n] = t;
		n++;
	}
	if (n != 5) {
		snprintf(err, errlen, "expected exactly 5 fields, found %zu: "
		    "%.64s", n, spec);
		goto out;
	}
	if (field_parse(f[0], 0, 59, NULL, &c.min, &any, err, errlen) < 0)
		goto out;
	if (field_parse(f[1], 0, 23, NULL, &bits, &any, err, errlen) < 0)
		goto out;
	c.hour = (uint32_t)bits;
	if (field_parse(f[2], 1, 31, NULL, &bits, &c.dom_any, err,
	    errlen) < 0)
		goto out;
	c.dom = (uint32_t)bits;
	if (field_parse(f[3], 1, 12, months, &bits, &any, err, errlen) < 0)
		goto out;
	c.month = (uint16_t)bits;
	if (field_parse(f[4], 0, 6, days, &bits, &c.dow_any, err,
	    errlen) < 0)
		goto out;
	c.dow = (uint8_t)bits;
	*out = c;
	rc = 0;
out:
	if (rc < 0)
		utf8_scrub(err);	/* the spec, quoted and cut short */
	free(s);
	return rc;
}

/* Whether the day of tm matches (robfig's rule for * in either field). */
static bool
cron_day(const struct lifecycle_cron *c, const struct tm *tm)
{
	bool dom = c->dom & (1U << tm->tm_mday);
	bool dow = c->dow & (1U << tm->tm_wday);

	if (c->dom_any || c->dow_any)
		return dom && dow;
	return dom || dow;
}

/* seconds of tm, in UTC or local time. */
static int64_t
tm_time(const struct lifecycle_cron *c, struct tm *tm)
{
	tm->tm_isdst = -1;
	return c->utc ? (int64_t)timegm(tm) : (int64_t)mktime(tm);
}

/* The next time c matches after `after`; see lifecycle.h. */
int64_t
lifecycle_cron_next(const struct lifecycle_cron *c, int64_t after)
{
	int64_t t = (after / 60 + 1) * 60, limit = after + HORIZON_S;
	struct tm tm;
	time_t tt;

	if (c->every_s > 0)
		return after + (int64_t)c->every_s;
	while (t <= limit) {
		tt = (time_t)t;
		if ((c->utc ? gmtime_r(&tt, &tm) : localtime_r(&tt, &tm)) ==
		    NULL)
			return -1;
		if (!(c->month & (1U << (tm.tm_mon + 1)))) {
			tm.tm_mon++;
			tm.tm_mday = 1;
			tm.tm_hour = tm.tm_min = tm.tm_sec = 0;
		} else if (!cron_day(c, &tm)) {
			tm.tm_mday++;
			tm.tm_hour = tm.tm_min = tm.tm_sec = 0;
		} else if (!(c->hour & (1U << tm.tm_hour))) {
			tm.tm_hour++;
			tm.tm_min = tm.tm_sec = 0;
		} else if (!(c->min & (1ULL << tm.tm_min))) {
			t += 60;
			continue;
		} else {
			return t;
		}
		int64_t nt = tm_time(c, &tm);

		t = nt > t ? nt : t + 60;	/* a DST gap never loops */
	}
	return -1;
}

/* --- the runner --- */

/* Start the runner; see lifecycle.h. */
void
lifecycle_init(struct loop *loop, unsigned grace_ms,
    const struct limits *limits)
{
	L = loop;
	grace = grace_ms;
	lim = limits;
}

/* Stop everything; see lifecycle.h. */
void
lifecycle_shutdown(void)
{
	lifecycle_pre_start_cancel();
	lifecycle_periodic_stop();
	lifecycle_free(tmpl);
	tmpl = NULL;
}

/* The shell text that runs argv as given: exec 'a' 'b' ... */
static char *
exec_line(char *const *argv)
{
	struct buf b;
	char *s;

	buf_init(&b);
	buf_adds(&b, "exec");
	for (size_t i = 0; argv[i] != NULL; i++) {
		buf_adds(&b, " ");
		buf_add_shquoted(&b, argv[i]);
	}
	s = xstrndup(b.p, b.len);
	buf_reset(&b);
	return s;
}

/* Start a run of h (taken); 0 with *out set, or -errno with why. */
static int
run_start(struct lifecycle_hook *h, bool is_pre, struct slot *slot,
    struct run **out, char *err, size_t errlen)
{
	struct run *r = xcalloc(1, sizeof(*r));
	char **env = runtime_env_child(), *cmd = exec_line(h->argv);
	uint64_t ms = h->timeout_s * 1000;
	struct job_opts o = { .cmd = cmd, .envp = env, .grace_ms = 0,
	    .timeout_ms = ms > UINT_MAX ? UINT_MAX : (unsigned)ms,
	    .out_fd = -1, .limits = lim };
	int rc;

	r->hook = h;
	r->pre = is_pre;
	r->slot = slot;
	r->t0 = time(NULL);
	buf_init_max(&r->out[0], LINE_MAX_LOG * 2);
	buf_init_max(&r->out[1], LINE_MAX_LOG * 2);
	rc = job_start(L, &o, run_output, run_done, r, &r->job, err, errlen);
	runtime_env_free(env);
	free(cmd);
	if (rc < 0) {
		r->job = NULL;
		run_free(r);
		return rc;
	}
	log_info("hook %s: started (pid %d)", h->name, (int)job_pid(r->job));
	*out = r;
	return 0;
}

/* Log whole lines of a stream's buffer (all of it when flush). */
static void
log_lines(struct run *r, int i, bool flush)
{
	struct buf *b = &r->out[i];
	const char *nl;
	size_t n;

	while (b->len > 0) {
		nl = memchr(b->p, '\n', b->len);
		if (nl == NULL && !flush && b->len < LINE_MAX_LOG)
			break;
		n = nl != NULL ? (size_t)(nl - b->p) : b->len;
		if (n > LINE_MAX_LOG)
			n = LINE_MAX_LOG;
		log_info("hook %s %s: %.*s", r->hook->name,
		    i == 0 ? "stdout" : "stderr", (int)n, b->p);
		buf_drain(b, nl != NULL && n == (size_t)(nl - b->p) ? n + 1 :
		    n);
	}
}

/* Output of a run: into the log, a line at a time. */
static void
run_output(struct job *j, int stream, const char *p, size_t n, void *arg)
{
	struct run *r = arg;
	int i = stream == 2 ? 1 : 0;
	size_t k;

	while (n > 0) {
		k = n < LINE_MAX_LOG ? n : LINE_MAX_LOG;
		if (buf_add(&r->out[i], p, k) < 0)
			log_lines(r, i, true);
		else {
			p += k;
			n -= k;
			log_lines(r, i, false);
		}
	}
}

/* A run is complete: say how it ended, tell its owner, free it. */
static void
run_done(struct job *j, int st, bool timed_out, void *arg)
{
	struct run *r = arg;
	char why[128];
	int rc = 0;

	log_lines(r, 0, true);
	log_lines(r, 1, true);
	if (timed_out) {
		rc = -ETIMEDOUT;
		snprintf(why, sizeof(why), "timed out after %llu s",
		    (unsigned long long)r->hook->timeout_s);
	} else if (WIFEXITED(st) && WEXITSTATUS(st) == 0) {
		snprintf(why, sizeof(why), "exited with status 0");
	} else if (WIFEXITED(st)) {
		rc = -EIO;
		snprintf(why, sizeof(why), "exited with status %d",
		    WEXITSTATUS(st));
	} else {
		rc = -EINTR;
		snprintf(why, sizeof(why), "killed by signal %d",
		    WIFSIGNALED(st) ? WTERMSIG(st) : 0);
	}
	if (rc == 0)
		log_info("hook %s: %s after %llds", r->hook->name, why,
		    (long long)(time(NULL) - r->t0));
	else
		log_warnx("hook %s: failed: %s", r->hook->name, why);
	job_free(j);
	r->job = NULL;
	if (r->slot != NULL)
		r->slot->active = NULL;
	if (r == pre) {
		lifecycle_done_cb *cb = pre_done;

		pre = NULL;
		pre_done = NULL;
		if (cb != NULL)
			cb(rc, why, pre_arg);
	}
	run_free(r);
}

static void
run_free(struct run *r)
{
	job_free(r->job);
	buf_reset(&r->out[0]);
	buf_reset(&r->out[1]);
	hook_reset(r->hook);
	free(r->hook);
	free(r);
}

/* Run preStart; see lifecycle.h. */
int
lifecycle_pre_start(const struct lifecycle *l, lifecycle_done_cb *done,
    void *arg, char *err, size_t errlen)
{
	struct lifecycle_hook *h;
	int rc;

	if (l == NULL || l->pre_start == NULL)
		return 1;
	if (pre != NULL) {
		snprintf(err, errlen, "preStart runs already");
		return -EBUSY;
	}
	h = xcalloc(1, sizeof(*h));
	hook_copy(h, l->pre_start);
	if ((rc = run_start(h, true, NULL, &pre, err, errlen)) < 0)
		return rc;
	pre_done = done;
	pre_arg = arg;
	return 0;
}

/* Cancel preStart: its job is stopped, done never called. */
void
lifecycle_pre_start_cancel(void)
{
	if (pre == NULL)
		return;
	pre_done = NULL;
	(void)job_stop(pre->job);
}

/* Schedule slot's next tick. */
static void
slot_arm(struct slot *s)
{
	int64_t now = time(NULL), next = lifecycle_cron_next(&s->hook.cron,
	    now);

	s->timer = 0;
	if (next < 0) {
		log_warnx("hook %s: schedule %s never matches again",
		    s->hook.name, s->hook.schedule);
		return;
	}
	s->timer = loop_timer_add(L, (uint64_t)(next - now) * 1000,
	    slot_tick, s);
}

/* A periodic hook is due: run it, unless its last run still goes. */
static void
slot_tick(struct loop *l, uint64_t id, void *arg)
{
	struct slot *s = arg;
	struct lifecycle_hook *h;
	char err[256];

	s->timer = 0;
	if (s->active != NULL) {
		log_info("hook %s: skipped, the previous run still goes",
		    s->hook.name);
	} else {
		h = xcalloc(1, sizeof(*h));
		hook_copy(h, &s->hook);
		if (run_start(h, false, s, &s->active, err, sizeof(err)) < 0)
			log_warnx("hook %s: cannot start: %s", s->hook.name,
			    err);
	}
	slot_arm(s);
}

/* Schedule l's periodic hooks; see lifecycle.h. */
void
lifecycle_periodic_start(const struct lifecycle *l)
{
	lifecycle_periodic_stop();
	if (l == NULL || l->nperiodic == 0)
		return;
	slots = xcalloc(l->nperiodic, sizeof(*slots));
	nslots = l->nperiodic;
	for (size_t i = 0; i < nslots; i++) {
		hook_copy(&slots[i].hook, &l->periodic[i]);
		slot_arm(&slots[i]);
		log_info("hook %s: scheduled (%s)", slots[i].hook.name,
		    slots[i].hook.schedule);
	}
}

/* Unschedule; runs in progress are stopped and freed when complete. */
void
lifecycle_periodic_stop(void)
{
	for (size_t i = 0; i < nslots; i++) {
		if (slots[i].timer != 0)
			loop_timer_cancel(L, slots[i].timer);
		if (slots[i].active != NULL) {
			slots[i].active->slot = NULL;
			(void)job_stop(slots[i].active->job);
		}
		hook_reset(&slots[i].hook);
	}
	free(slots);
	slots = NULL;
	nslots = 0;
}

/* --- the start-up status file --- */

void
lifecycle_status_file(const char *path)
{
	status_path = path != NULL && *path != '\0' ? path : NULL;
}

/* Append a line to the status file; see lifecycle.h. */
int
lifecycle_status(char *err, size_t errlen, const char *fmt, ...)
{
	char line[128];
	va_list ap;
	ssize_t w;
	size_t n;
	int fd, rc = 0;

	if (status_path == NULL)
		return 0;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line) - 1, fmt, ap);
	va_end(ap);
	n = strlen(line);
	line[n++] = '\n';
	/* Never O_CREAT; O_NONBLOCK: a FIFO with no reader fails at once. */
	if ((fd = open(status_path, O_WRONLY | O_APPEND | O_CLOEXEC |
	    O_NOCTTY | O_NONBLOCK)) < 0) {
		rc = -errno;
		snprintf(err, errlen, "open lifecycle startup status %s: %s",
		    status_path, strerror(errno));
		return rc;
	}
	if ((w = write(fd, line, n)) < 0 || (size_t)w != n) {
		rc = w < 0 ? -errno : -EIO;
		snprintf(err, errlen, "write lifecycle startup status %s: %s",
		    status_path, strerror(-rc));
	}
	close(fd);
	return rc;
}

/* --- the template's configuration --- */

/*
 * Where the configuration is kept between starts; *legacy is set to
 * where execd kept it as JSON before (~/.execd/lifecycle.json), when
 * the default is used.
 */
static char *
saved_path(char **legacy)
{
	const char *p = getenv(LIFECYCLE_PATH_ENV), *home = getenv("HOME");

	*legacy = NULL;
	if (p != NULL && *p != '\0')
		return xstrdup(p);
	if (home == NULL || *home != '/')
		return NULL;
	*legacy = xasprintf("%s/.execd/lifecycle.json", home);
	return xasprintf("%s/.execd/lifecycle.toml", home);
}

/* Write l to path whole as TOML (mode 0600, a temporary renamed). */
static int
save(const struct lifecycle *l, const char *path, char *err, size_t errlen)
{
	char *text = lifecycle_toml(l), *tmp = xasprintf("%s.tmp", path);
	char *dir = xstrdup(path), *slash;
	FILE *f = NULL;
	int rc = 0, fd;

	if ((slash = strrchr(dir, '/')) != NULL) {
		slash[slash == dir ? 1 : 0] = '\0';
		(void)mkdir(dir, 0700);
	}
	if ((f = fopen(tmp, "wxe")) == NULL && errno == EEXIST &&
	    unlink(tmp) == 0)
		f = fopen(tmp, "wxe");
	if (f == NULL || fchmod(fileno(f), 0600) < 0 ||
	    fputs(text, f) == EOF || fflush(f) != 0 ||
	    fsync(fileno(f)) < 0) {
		rc = -errno;
		snprintf(err, errlen, "cannot write %s: %s", tmp,
		    strerror(errno));
	}
	if (f != NULL && fclose(f) != 0 && rc == 0) {
		rc = -errno;
		snprintf(err, errlen, "cannot write %s: %s", tmp,
		    strerror(errno));
	}
	if (rc == 0 && rename(tmp, path) < 0) {
		rc = -errno;
		snprintf(err, errlen, "cannot rename %s to %s: %s", tmp, path,
		    strerror(errno));
	}
	/* The rename is on disk only with its directory's entry. */
	if (rc == 0 && slash != NULL &&
	    (fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) >= 0) {
		(void)fsync(fd);
		close(fd);
	}
	if (rc < 0)
		(void)unlink(tmp);
	free(text);
	free(tmp);
	free(dir);
	return rc;
}

/*
 * The file at path (SAVED_MAX bytes at most) into *l: 0, 1 when there
 * is no such file, or -errno with why.
 */
static int
read_saved(const char *path, struct lifecycle **l, char *err, size_t errlen)
{
	char why[512], *text;
	size_t n;
	FILE *f;

	if ((f = fopen(path, "re")) == NULL) {
		if (errno == ENOENT)
			return 1;
		snprintf(err, errlen, "read lifecycle config %s: %s", path,
		    strerror(errno));
		return -EIO;
	}
	/* One byte more than the cap: a longer file is refused, not cut. */
	text = xcalloc(1, SAVED_MAX + 2);
	n = fread(text, 1, SAVED_MAX + 1, f);
	fclose(f);
	if (n > SAVED_MAX) {
		snprintf(err, errlen, "invalid saved lifecycle config %s: "
		    "larger than %d bytes", path, SAVED_MAX);
		free(text);
		return -EFBIG;
	}
	if (lifecycle_parse_text(text, n, l, why, sizeof(why)) < 0) {
		snprintf(err, errlen, "invalid saved lifecycle config %s: %s",
		    path, why);
		free(text);
		return -EINVAL;
	}
	free(text);
	return 0;
}

/* The template's hooks, from the environment or the saved file. */
int
lifecycle_load(char *err, size_t errlen)
{
	const char *env = getenv(LIFECYCLE_ENV);
	char *legacy, *path = saved_path(&legacy), why[512];
	struct lifecycle *l = NULL;
	int rc = 0;

	/* Blanks alone are no configuration, as upstream trims first. */
	while (env != NULL && isspace((unsigned char)*env))
		env++;
	if (env != NULL && *env != '\0') {
		if (lifecycle_parse_text(env, strlen(env), &l, why,
		    sizeof(why)) < 0) {
			snprintf(err, errlen, "decode %s: %s", LIFECYCLE_ENV,
			    why);
			rc = -EINVAL;
			goto out;
		}
		if (path != NULL && save(l, path, why, sizeof(why)) < 0)
			log_warnx("lifecycle: %s (hooks kept for this run "
			    "only)", why);
	} else if (path != NULL) {
		rc = read_saved(path, &l, err, errlen);
		/* None, but an earlier execd's JSON: kept as TOML from now. */
		if (rc == 1 && legacy != NULL &&
		    (rc = read_saved(legacy, &l, err, errlen)) == 0) {
			if (save(l, path, why, sizeof(why)) < 0)
				log_warnx("lifecycle: %s", why);
			else if (unlink(legacy) == 0)
				log_info("lifecycle: %s is now %s", legacy,
				    path);
		}
		if (rc < 0)
			goto out;
	}
	rc = 0;
	lifecycle_free(tmpl);
	tmpl = l;
	l = NULL;
	/* Not for children to see. */
	unsetenv(LIFECYCLE_ENV);
	unsetenv(LIFECYCLE_PATH_ENV);
out:
	lifecycle_free(l);
	free(path);
	free(legacy);
	return rc;
}

/* The template's configuration, or NULL. */
const struct lifecycle *
lifecycle_template(void)
{
	return tmpl;
}
