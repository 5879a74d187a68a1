/*
 * limits.c -- parse, merge and print the resource limits of a job (see
 * limits.h).
 *
 * One table names the keys, whether each is a size (units allowed) and
 * the smallest value it takes: a memory or process limit of 0 would keep
 * the job from starting at all, so it is refused as a mistake, while a
 * file size or core size of 0 means "none".  "unlimited" sets a key to no
 * limit, which is how a request lifts a default (core dumps are off by
 * default).
 */
#include <errno.h>
#include <ctype.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "limits.h"

struct key {
	const char	*name;
	unsigned	 flag;
	size_t		 off;
	int		 size;		/* bytes: units allowed */
	uint64_t	 min;
	const char	*unit;		/* printed after a count */
};

static const struct key keys[] = {
	{ "memory", LIMITS_F_MEMORY, offsetof(struct limits, memory), 1,
	    1 << 20, NULL },
	{ "processes", LIMITS_F_PROCESSES,
	    offsetof(struct limits, processes), 0, 1, NULL },
	{ "cpu_seconds", LIMITS_F_CPU, offsetof(struct limits, cpu_seconds),
	    0, 1, " s" },
	{ "file_size", LIMITS_F_FILE_SIZE, offsetof(struct limits, file_size),
	    1, 0, NULL },
	{ "open_files", LIMITS_F_OPEN_FILES,
	    offsetof(struct limits, open_files), 0, 4, NULL },
	{ "core", LIMITS_F_CORE, offsetof(struct limits, core), 1, 0, NULL },
};

#define NKEYS	(sizeof(keys) / sizeof(keys[0]))
#define MAXVAL	((uint64_t)1 << 62)	/* larger: a mistake */

static const char *const kind_names[LIMITS_NKINDS] = {
	[LIMITS_COMMAND] = "command", [LIMITS_SESSION] = "session",
	[LIMITS_CONTEXT] = "context", [LIMITS_PTY] = "pty",
};

static const struct key	*find(const char *);
static uint64_t		*slot(struct limits *, const struct key *);
static uint64_t		 get(const struct limits *, const struct key *);
static int		 parse(const struct key *, const char *, uint64_t *);

/* The table entry of a key name, or NULL. */
static const struct key *
find(const char *name)
{
	for (size_t i = 0; i < NKEYS; i++)
		if (strcmp(keys[i].name, name) == 0)
			return &keys[i];
	return NULL;
}

/* Where a key's value lives in l. */
static uint64_t *
slot(struct limits *l, const struct key *k)
{
	return (uint64_t *)(void *)((char *)l + k->off);
}

/* A key's value in l. */
static uint64_t
get(const struct limits *l, const struct key *k)
{
	uint64_t v;

	memcpy(&v, (const char *)l + k->off, sizeof(v));
	return v;
}

/* A value: digits, and for sizes a binary unit.  0 or -EINVAL. */
static int
parse(const struct key *k, const char *s, uint64_t *out)
{
	static const char units[] = "KMGT";
	const char *u;
	char *end;
	uint64_t v;
	unsigned shift = 0;

	if (strcasecmp(s, "unlimited") == 0) {
		*out = UINT64_MAX;
		return 0;
	}
	if (!isdigit((unsigned char)*s))
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno != 0)
		return -EINVAL;
	while (*end == ' ')
		end++;
	if (*end != '\0') {
		if (!k->size || (u = strchr(units,
		    toupper((unsigned char)*end))) == NULL)
			return -EINVAL;
		shift = 10 * (unsigned)(u - units + 1);
		end++;
		/* K, Ki, KiB, KB: all binary. */
		if (*end == 'i')
			end++;
		if (*end == 'B' || *end == 'b')
			end++;
		if (*end != '\0')
			return -EINVAL;
	} else if (k->size && end > s && end[-1] == ' ')
		return -EINVAL;
	if (v > (MAXVAL >> shift))
		return -EINVAL;
	v <<= shift;
	if (v < k->min)
		return -EINVAL;
	*out = v;
	return 0;
}

/* One key from text; see limits.h. */
int
limits_set(struct limits *l, const char *key, const char *text, char *err,
    size_t errlen)
{
	const struct key *k;
	uint64_t v;

	if ((k = find(key)) == NULL) {
		snprintf(err, errlen, "unknown limit '%s' (memory, processes, "
		    "cpu_seconds, file_size, open_files, core)", key);
		return -EINVAL;
	}
	if (parse(k, text, &v) < 0) {
		snprintf(err, errlen, "limit '%s': bad value '%.64s' (%s%s)",
		    key, text, k->size ? "bytes, or a number with K, M, G or "
		    "T (binary: KiB ...)" : "a whole number", k->min > 0 ?
		    ", not 0" : "");
		return -EINVAL;
	}
	*slot(l, k) = v;
	l->set |= k->flag;
	return 0;
}

/* A request's "limits" object; see limits.h. */
int
limits_from_json(struct limits *l, const json_t *obj, char *err,
    size_t errlen)
{
	const char *key;
	json_t *o = (json_t *)(uintptr_t)obj, *v;	/* jansson: no const */
	char num[32];
	int rc;

	if (!json_is_object(obj)) {
		snprintf(err, errlen, "limits must be an object");
		return -EINVAL;
	}
	json_object_foreach(o, key, v) {
		if (find(key) == NULL)		/* says it is unknown */
			return limits_set(l, key, "", err, errlen);
		if (json_is_integer(v) && json_integer_value(v) >= 0) {
			snprintf(num, sizeof(num), "%" JSON_INTEGER_FORMAT,
			    json_integer_value(v));
			rc = limits_set(l, key, num, err, errlen);
		} else if (json_is_string(v))
			rc = limits_set(l, key, json_string_value(v), err,
			    errlen);
		else {
			snprintf(err, errlen, "limit '%s' must be a number "
			    "not below 0%s", key, find(key)->size ? ", or a "
			    "string such as \"256MiB\"" : "");
			rc = -EINVAL;
		}
		if (rc < 0)
			return rc;
	}
	return 0;
}

/* Defaults and a request's over them; see limits.h. */
int
limits_for(struct limits *out, const struct limits *defaults,
    const json_t *body, char *err, size_t errlen)
{
	const json_t *v;

	memset(out, 0, sizeof(*out));
	if (defaults != NULL)
		*out = *defaults;
	v = json_is_object(body) ? json_object_get(body, "limits") : NULL;
	if (v == NULL || json_is_null(v))
		return 0;
	return limits_from_json(out, v, err, errlen);
}

/* src's keys over dst's; see limits.h. */
void
limits_over(struct limits *dst, const struct limits *src)
{
	for (size_t i = 0; i < NKEYS; i++)
		if (src->set & keys[i].flag)
			*slot(dst, &keys[i]) =
			    get(src, &keys[i]);
	dst->set |= src->set;
}

/* One value as text; see limits.h. */
void
limits_format(const struct limits *l, unsigned flag, char *buf, size_t len)
{
	static const char *const units[] = { "B", "KiB", "MiB", "GiB",
	    "TiB" };
	const struct key *k = NULL;
	uint64_t v;
	unsigned u = 0;

	for (size_t i = 0; i < NKEYS; i++)
		if (keys[i].flag == flag)
			k = &keys[i];
	if (k == NULL || !(l->set & flag)) {
		snprintf(buf, len, "none");
		return;
	}
	v = get(l, k);
	if (v == UINT64_MAX) {
		snprintf(buf, len, "unlimited");
		return;
	}
	if (!k->size) {
		snprintf(buf, len, "%" PRIu64 "%s", v, k->unit ? k->unit : "");
		return;
	}
	while (u < 4 && v >= 1024 && v % 1024 == 0) {
		v /= 1024;
		u++;
	}
	snprintf(buf, len, "%" PRIu64 " %s", v, units[u]);
}

/* The set keys as JSON; see limits.h. */
json_t *
limits_json(const struct limits *l)
{
	json_t *o = json_object();
	uint64_t v;

	if (o == NULL)
		return NULL;
	for (size_t i = 0; i < NKEYS; i++) {
		if (!(l->set & keys[i].flag))
			continue;
		v = get(l, &keys[i]);
		json_object_set_new(o, keys[i].name, v == UINT64_MAX ?
		    json_string("unlimited") : json_integer((json_int_t)v));
	}
	return o;
}

/* A kind's name to its number; see limits.h. */
int
limits_kind_parse(const char *s, enum limits_kind *out)
{
	for (int i = 0; i < LIMITS_NKINDS; i++)
		if (strcmp(kind_names[i], s) == 0) {
			*out = (enum limits_kind)i;
			return 0;
		}
	return -EINVAL;
}

/* A kind's name; see limits.h. */
const char *
limits_kind_name(enum limits_kind k)
{
	return k >= 0 && k < LIMITS_NKINDS ? kind_names[k] : "?";
}

/* A flag's key name; see limits.h. */
const char *
limits_key_name(unsigned flag)
{
	for (size_t i = 0; i < NKEYS; i++)
		if (keys[i].flag == flag)
			return keys[i].name;
	return "?";
}
