/*
 * isoreq.c -- parse and check an isolated session's create request (see
 * isoreq.h); the messages are upstream's, word for word where it has
 * one.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/xmalloc.h"
#include "isoreq.h"

static const char *const mode_names[] = {
	[ISOREQ_RW] = "rw", [ISOREQ_OVERLAY] = "overlay", [ISOREQ_RO] = "ro",
};

const char *
isoreq_mode_name(enum isoreq_mode m)
{
	return mode_names[m];
}

static int
mode_parse(const char *s, enum isoreq_mode *m)
{
	for (size_t i = 0; i < sizeof(mode_names) / sizeof(mode_names[0]); i++)
		if (strcmp(s, mode_names[i]) == 0) {
			*m = (enum isoreq_mode)i;
			return 0;
		}
	return -1;
}

/* A string member, or NULL; -1 (with err) when present and not one. */
static int
str(const json_t *o, const char *name, const char **out, const char *where,
    char *err, size_t errlen)
{
	json_t *v = json_object_get(o, name);

	*out = NULL;
	if (v == NULL || json_is_null(v))
		return 0;
	if (!json_is_string(v)) {
		snprintf(err, errlen, "%s%s must be a string", where, name);
		return -1;
	}
	*out = json_string_value(v);
	return 0;
}

static int
boolean(const json_t *o, const char *name, int *out, const char *where,
    char *err, size_t errlen)
{
	json_t *v = json_object_get(o, name);

	*out = -1;
	if (v == NULL || json_is_null(v))
		return 0;
	if (!json_is_boolean(v)) {
		snprintf(err, errlen, "%s%s must be a boolean", where, name);
		return -1;
	}
	*out = json_is_true(v);
	return 0;
}

/* An id: an integer 0 .. 2^32-2. */
static int
id(const json_t *o, const char *name, bool *has, unsigned *out, char *err,
    size_t errlen)
{
	json_t *v = json_object_get(o, name);

	*has = false;
	if (v == NULL || json_is_null(v))
		return 0;
	if (!json_is_integer(v) || json_integer_value(v) < 0 ||
	    json_integer_value(v) > 4294967294LL) {
		snprintf(err, errlen, "%s must be an integer from 0 to "
		    "4294967294", name);
		return -1;
	}
	*has = true;
	*out = (unsigned)json_integer_value(v);
	return 0;
}

static int
add_overlay(struct isoreq *r, const json_t *o, const char *what, char *err,
    size_t errlen)
{
	struct isoreq_overlay *ov;
	const char *path, *mode;
	char where[64];
	int persist;

	if (!json_is_object(o)) {
		snprintf(err, errlen, "%s must be an object", what);
		return -1;
	}
	snprintf(where, sizeof(where), "%s.", what);
	if (str(o, "path", &path, where, err, errlen) < 0 ||
	    str(o, "mode", &mode, where, err, errlen) < 0 ||
	    boolean(o, "persist", &persist, where, err, errlen) < 0)
		return -1;
	if (path == NULL || path[0] == '\0') {
		snprintf(err, errlen, "%s.path is required", what);
		return -1;
	}
	if (path[0] != '/') {
		snprintf(err, errlen, "%s.path \"%s\" must be an absolute path",
		    what, path);
		return -1;
	}
	if (r->noverlay >= ISOREQ_MAX) {
		snprintf(err, errlen, "at most %d overlays", ISOREQ_MAX);
		return -1;
	}
	ov = &r->overlay[r->noverlay];
	ov->mode = ISOREQ_OVERLAY;
	if (mode != NULL && mode[0] != '\0' && mode_parse(mode, &ov->mode) < 0) {
		snprintf(err, errlen, "invalid %s mode \"%s\": must be rw, "
		    "overlay, or ro", what, mode);
		return -1;
	}
	if (persist >= 0 && ov->mode != ISOREQ_OVERLAY) {
		snprintf(err, errlen, "%s: persist applies only to mode "
		    "\"overlay\"", what);
		return -1;
	}
	ov->persist = persist;
	ov->path = xstrdup(path);
	r->noverlay++;
	return 0;
}

/* Every overlay path once (after the trailing slashes). */
static int
unique(struct isoreq *r, char *err, size_t errlen)
{
	size_t n;

	for (size_t i = 0; i < r->noverlay; i++) {
		n = strlen(r->overlay[i].path);
		while (n > 1 && r->overlay[i].path[n - 1] == '/')
			r->overlay[i].path[--n] = '\0';
		for (size_t j = 0; j < i; j++)
			if (strcmp(r->overlay[i].path, r->overlay[j].path) ==
			    0) {
				snprintf(err, errlen, "overlay path \"%s\" is "
				    "given twice", r->overlay[i].path);
				return -1;
			}
	}
	return 0;
}

static int
parse_binds(struct isoreq *r, const json_t *a, char *err, size_t errlen)
{
	const json_t *b;
	const char *src, *dst;
	char where[32];
	size_t i;
	int ro;

	if (a == NULL || json_is_null(a))
		return 0;
	if (!json_is_array(a) || json_array_size(a) > ISOREQ_MAX) {
		snprintf(err, errlen, "binds must be an array of at most %d",
		    ISOREQ_MAX);
		return -1;
	}
	json_array_foreach(a, i, b) {
		snprintf(where, sizeof(where), "binds[%zu].", i);
		if (!json_is_object(b)) {
			snprintf(err, errlen, "binds[%zu] must be an object", i);
			return -1;
		}
		if (str(b, "source", &src, where, err, errlen) < 0 ||
		    str(b, "dest", &dst, where, err, errlen) < 0 ||
		    boolean(b, "readonly", &ro, where, err, errlen) < 0)
			return -1;
		if (src == NULL || src[0] == '\0') {
			snprintf(err, errlen, "binds[%zu].source is required", i);
			return -1;
		}
		if (src[0] != '/') {
			snprintf(err, errlen, "binds[%zu].source \"%s\" must be "
			    "an absolute path", i, src);
			return -1;
		}
		if (dst == NULL || dst[0] == '\0')
			dst = src;
		if (dst[0] != '/') {
			snprintf(err, errlen, "binds[%zu].dest \"%s\" must be "
			    "an absolute path", i, dst);
			return -1;
		}
		r->bind[r->nbind].source = xstrdup(src);
		r->bind[r->nbind].dest = xstrdup(dst);
		r->bind[r->nbind].readonly = ro == 1;
		r->nbind++;
	}
	return 0;
}

/* An array of at most ISOREQ_MAX strings, absolute paths if paths. */
static int
strings(const json_t *a, const char *name, bool paths, char **out, size_t *n,
    char *err, size_t errlen)
{
	const json_t *v;
	size_t i;

	if (a == NULL || json_is_null(a))
		return 0;
	if (!json_is_array(a) || json_array_size(a) > ISOREQ_MAX) {
		snprintf(err, errlen, "%s must be an array of at most %d "
		    "strings", name, ISOREQ_MAX);
		return -1;
	}
	json_array_foreach(a, i, v) {
		if (!json_is_string(v) || json_string_length(v) == 0) {
			snprintf(err, errlen, "%s[%zu] must be a non-empty "
			    "string", name, i);
			return -1;
		}
		if (paths && json_string_value(v)[0] != '/') {
			snprintf(err, errlen, "%s[%zu] \"%s\" must be an "
			    "absolute path", name, i, json_string_value(v));
			return -1;
		}
		out[(*n)++] = xstrdup(json_string_value(v));
	}
	return 0;
}

int
isoreq_parse(const json_t *body, struct isoreq *r, char *err, size_t errlen)
{
	const json_t *ws, *ovs, *ov, *env, *idle;
	const char *s;
	size_t i;
	char what[32];
	bool has;
	unsigned u;

	memset(r, 0, sizeof(*r));
	r->strict = true;
	r->share_net = r->env_allow = r->uid_userns = -1;
	if (!json_is_object(body)) {
		snprintf(err, errlen, "the body must be a JSON object");
		return -1;
	}
	if (str(body, "profile", &s, "", err, errlen) < 0)
		return -1;
	if (s != NULL && s[0] != '\0') {
		r->has_profile = true;
		if (strcmp(s, "strict") == 0)
			r->strict = true;
		else if (strcmp(s, "balanced") == 0)
			r->strict = false;
		else {
			snprintf(err, errlen, "unknown isolation profile \"%s\": "
			    "must be strict or balanced", s);
			return -1;
		}
	}
	/* The workspace, when given, is the first overlay. */
	ws = json_object_get(body, "workspace");
	if (ws != NULL && !json_is_null(ws)) {
		if (add_overlay(r, ws, "workspace", err, errlen) < 0)
			return -1;
		r->has_workspace = true;
	}
	ovs = json_object_get(body, "overlays");
	if (ovs != NULL && !json_is_null(ovs)) {
		if (!json_is_array(ovs)) {
			snprintf(err, errlen, "overlays must be an array");
			return -1;
		}
		json_array_foreach(ovs, i, ov) {
			snprintf(what, sizeof(what), "overlays[%zu]", i);
			if (add_overlay(r, ov, what, err, errlen) < 0)
				return -1;
		}
	}
	if (r->noverlay == 0) {
		snprintf(err, errlen, "workspace or overlays is required");
		return -1;
	}
	if (unique(r, err, errlen) < 0)
		return -1;
	if (parse_binds(r, json_object_get(body, "binds"), err, errlen) < 0 ||
	    strings(json_object_get(body, "extra_writable"), "extra_writable",
	    true, r->writable, &r->nwritable, err, errlen) < 0 ||
	    boolean(body, "share_net", &r->share_net, "", err, errlen) < 0)
		return -1;
	env = json_object_get(body, "env_passthrough");
	if (env != NULL && !json_is_null(env)) {
		if (!json_is_object(env)) {
			snprintf(err, errlen, "env_passthrough must be an "
			    "object");
			return -1;
		}
		if (str(env, "mode", &s, "env_passthrough.", err, errlen) < 0)
			return -1;
		if (s == NULL || s[0] == '\0' || strcmp(s, "deny") == 0)
			r->env_allow = 0;
		else if (strcmp(s, "allow") == 0)
			r->env_allow = 1;
		else {
			snprintf(err, errlen, "invalid env_passthrough mode "
			    "\"%s\": must be \"deny\" or \"allow\"", s);
			return -1;
		}
		if (strings(json_object_get(env, "keys"),
		    "env_passthrough.keys", false, r->keys, &r->nkeys, err,
		    errlen) < 0)
			return -1;
	}
	if (id(body, "uid", &has, &u, err, errlen) < 0)
		return -1;
	r->has_uid = has;
	r->uid = (uid_t)u;
	if (id(body, "gid", &has, &u, err, errlen) < 0)
		return -1;
	r->has_gid = has;
	r->gid = (gid_t)u;
	if (str(body, "uid_mode", &s, "", err, errlen) < 0)
		return -1;
	if (s != NULL && s[0] != '\0') {
		if (strcmp(s, "setpriv") == 0)
			r->uid_userns = 0;
		else if (strcmp(s, "userns") == 0)
			r->uid_userns = 1;
		else {
			snprintf(err, errlen, "invalid uid_mode \"%s\": must be "
			    "\"setpriv\" or \"userns\"", s);
			return -1;
		}
	}
	idle = json_object_get(body, "idle_timeout_seconds");
	if (idle != NULL && !json_is_null(idle)) {
		if (!json_is_integer(idle) || json_integer_value(idle) < 0 ||
		    json_integer_value(idle) > 31536000) {
			snprintf(err, errlen, "idle_timeout_seconds must be an "
			    "integer from 0 to 31536000");
			return -1;
		}
		r->idle_s = (unsigned)json_integer_value(idle);
	}
	return 0;
}

void
isoreq_free(struct isoreq *r)
{
	for (size_t i = 0; i < r->noverlay; i++)
		free(r->overlay[i].path);
	for (size_t i = 0; i < r->nbind; i++) {
		free(r->bind[i].source);
		free(r->bind[i].dest);
	}
	for (size_t i = 0; i < r->nwritable; i++)
		free(r->writable[i]);
	for (size_t i = 0; i < r->nkeys; i++)
		free(r->keys[i]);
	memset(r, 0, sizeof(*r));
}

static json_t *
overlay_json(const struct isoreq_overlay *ov)
{
	json_t *o = json_pack("{s:s,s:s}", "path", ov->path, "mode",
	    mode_names[ov->mode]);

	if (ov->persist >= 0)
		json_object_set_new(o, "persist", json_boolean(ov->persist));
	return o;
}

void
isoreq_echo(const struct isoreq *r, json_t *o)
{
	json_t *a;

	if (r->has_profile)
		json_object_set_new(o, "profile", json_string(r->strict ?
		    "strict" : "balanced"));
	if (r->noverlay == 1)
		json_object_set_new(o, "workspace",
		    overlay_json(&r->overlay[0]));
	a = json_array();
	for (size_t i = 0; i < r->noverlay; i++)
		json_array_append_new(a, overlay_json(&r->overlay[i]));
	json_object_set_new(o, "overlays", a);
	if (r->nwritable > 0) {
		a = json_array();
		for (size_t i = 0; i < r->nwritable; i++)
			json_array_append_new(a, json_string(r->writable[i]));
		json_object_set_new(o, "extra_writable", a);
	}
	if (r->nbind > 0) {
		a = json_array();
		for (size_t i = 0; i < r->nbind; i++)
			json_array_append_new(a, json_pack("{s:s,s:s,s:b}",
			    "source", r->bind[i].source, "dest",
			    r->bind[i].dest, "readonly", r->bind[i].readonly));
		json_object_set_new(o, "binds", a);
	}
	if (r->share_net >= 0)
		json_object_set_new(o, "share_net",
		    json_boolean(r->share_net));
	if (r->env_allow >= 0) {
		a = json_array();
		for (size_t i = 0; i < r->nkeys; i++)
			json_array_append_new(a, json_string(r->keys[i]));
		json_object_set_new(o, "env_passthrough", json_pack("{s:s,s:o}",
		    "mode", r->env_allow ? "allow" : "deny", "keys", a));
	}
	if (r->has_uid)
		json_object_set_new(o, "uid", json_integer(r->uid));
	if (r->has_gid)
		json_object_set_new(o, "gid", json_integer(r->gid));
	if (r->uid_userns >= 0)
		json_object_set_new(o, "uid_mode", json_string(r->uid_userns ?
		    "userns" : "setpriv"));
	json_object_set_new(o, "idle_timeout_seconds",
	    json_integer(r->idle_s));
}
