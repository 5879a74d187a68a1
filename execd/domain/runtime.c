/*
 * runtime.c -- the runtime binding of POST /internal/init and the parser
 * of that request; see runtime.h.
 *
 * The rules and messages are upstream 1.1.1's, so a control plane that
 * reads them gets the same words: a body that does not decode is
 * "invalid runtime init request: <why>", a broken rule its bare message.
 * Checks run in upstream's order (identity, entrypoint policy, token
 * hash, envs, lifecycle, telemetry), so the first broken rule is the one
 * named.  Nothing here kills, starts or serves anything: the route
 * (route_init.c) orders the steps of an init.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "../../util/hex.h"
#include "../../util/utf8.h"
#include "../core/xmalloc.h"
#include "../process/envfile.h"
#include "runtime.h"

#define LEAD	"invalid runtime init request: "

/* Upstream's execd configuration names, refused in a binding's envs. */
static const char *const reserved[] = {
	"EXECD_ACCESS_TOKEN", "JUPYTER_HOST", "JUPYTER_TOKEN",
	"EXECD_ISOLATION_CONFIG", "EXECD_ENVS", "OPENSANDBOX_LIFECYCLE",
	"EXECD_LIFECYCLE_CONFIG", "EXECD_RUNTIME_INIT",
};

static struct {
	bool		 gated;		/* started to wait for an init */
	bool		 ready;
	bool		 bound;
	char		*sandbox_id;
	uint64_t	 generation;
	bool		 has_md;
	unsigned char	 md[RUNTIME_MD_LEN];
	json_t		*envs;
	json_t		*attrs;
} rt;

static int	 want_type(json_t *, const char *, json_type, const char *,
		    json_t **, char *, size_t);
static int	 string_map(json_t *, const char *, char *, size_t);
static void	 quote(char *, size_t, const char *);

/* The name of a JSON type as the message says it. */
static const char *
type_name(json_type t)
{
	switch (t) {
	case JSON_OBJECT: return "object";
	case JSON_ARRAY: return "array";
	case JSON_STRING: return "string";
	case JSON_INTEGER: return "number";
	case JSON_REAL: return "number";
	case JSON_TRUE: case JSON_FALSE: return "bool";
	default: return "null";
	}
}

/*
 * The member key of o as *out when it has type t (what says what is
 * wanted), NULL when absent or null.  0, or -EINVAL with the message.
 */
static int
want_type(json_t *o, const char *key, json_type t, const char *what,
    json_t **out, char *err, size_t errlen)
{
	json_t *v = json_object_get(o, key);

	*out = NULL;
	if (v == NULL || json_is_null(v))
		return 0;
	if (json_typeof(v) == t || (t == JSON_TRUE && json_is_boolean(v))) {
		*out = v;
		return 0;
	}
	snprintf(err, errlen, LEAD "%s must be %s, not %s", key, what,
	    type_name(json_typeof(v)));
	return -EINVAL;
}

/* Every value of the object v (named name) a string: 0 or -EINVAL. */
static int
string_map(json_t *v, const char *name, char *err, size_t errlen)
{
	const char *k;
	json_t *e;
	char q[80];

	json_object_foreach(v, k, e) {
		if (!json_is_string(e)) {
			quote(q, sizeof(q), k);
			snprintf(err, errlen, LEAD "%s.%s must be a string, "
			    "not %s", name, q, type_name(json_typeof(e)));
			return -EINVAL;
		}
	}
	return 0;
}

/* s in double quotes, escaped, cut to fit out. */
static void
quote(char *out, size_t len, const char *s)
{
	size_t i = 0;

	out[i++] = '"';
	for (; *s != '\0' && i + 6 < len; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\') {
			out[i++] = '\\';
			out[i++] = (char)c;
		} else if (c < 0x20 || c == 0x7f) {
			i += (size_t)snprintf(out + i, len - i, "\\x%02x", c);
		} else {
			out[i++] = (char)c;
		}
	}
	/* cut short: drop a sequence the cut may have split */
	if (*s != '\0') {
		while (i > 1 && ((unsigned char)out[i - 1] & 0xc0) == 0x80)
			i--;
		if (i > 1 && ((unsigned char)out[i - 1] & 0xc0) == 0xc0)
			i--;
	}
	out[i++] = '"';
	out[i] = '\0';
}

/* "sha256:<hex>" into md; see runtime.h. */
int
runtime_hash_parse(const char *s, unsigned char *md, char *err,
    size_t errlen)
{
	size_t n, plen = strlen(RUNTIME_HASH_PREFIX);
	const char *h;
	int hi, lo;

	while (isspace((unsigned char)*s))
		s++;
	n = strlen(s);
	while (n > 0 && isspace((unsigned char)s[n - 1]))
		n--;
	if (n < plen || strncmp(s, RUNTIME_HASH_PREFIX, plen) != 0) {
		snprintf(err, errlen, "access token hash must use "
		    RUNTIME_HASH_PREFIX "<hex> format");
		return -EINVAL;
	}
	h = s + plen;
	n -= plen;
	/* Go's hex decoder: a bad digit first, then an odd length. */
	for (size_t i = 0; i < n; i++) {
		if (hex_digit((unsigned char)h[i]) < 0) {
			unsigned char c = (unsigned char)h[i];

			if (c >= 0x20 && c < 0x7f)
				snprintf(err, errlen, "access token hash is "
				    "not valid hex: encoding/hex: invalid "
				    "byte: U+%04X '%c'", c, c);
			else
				snprintf(err, errlen, "access token hash is "
				    "not valid hex: encoding/hex: invalid "
				    "byte: 0x%02X", c);
			return -EINVAL;
		}
	}
	if (n % 2 != 0) {
		snprintf(err, errlen, "access token hash is not valid hex: "
		    "encoding/hex: odd length hex string");
		return -EINVAL;
	}
	if (n / 2 != RUNTIME_MD_LEN) {
		snprintf(err, errlen, "access token hash must be %d hex "
		    "bytes, got %zu", RUNTIME_MD_LEN, n / 2);
		return -EINVAL;
	}
	for (size_t i = 0; i < RUNTIME_MD_LEN; i++) {
		hi = hex_digit((unsigned char)h[2 * i]);
		lo = hex_digit((unsigned char)h[2 * i + 1]);
		md[i] = (unsigned char)(hi << 4 | lo);
	}
	return 0;
}

/* Whether k is one of execd's configuration names; see runtime.h. */
bool
runtime_env_reserved(const char *k)
{
	for (size_t i = 0; i < sizeof(reserved) / sizeof(reserved[0]); i++)
		if (strcasecmp(k, reserved[i]) == 0)
			return true;
	return false;
}

/* Parse and check an init body; see runtime.h. */
int
runtime_req_parse(const char *body, size_t n, struct runtime_req *out,
    char *err, size_t errlen)
{
	struct runtime_req r = { 0 };
	json_error_t je;
	json_t *root, *v, *sid, *gen, *pol, *hash, *envs, *lc, *tel,
	    *attrs = NULL, *pres, *e;
	const char *k, *p, *sv;
	char q[300];
	size_t len;
	int rc = -EINVAL;

	root = json_loadb(body, n, JSON_DECODE_ANY, &je);
	if (root == NULL) {
		snprintf(err, errlen, LEAD "%s", n == 0 ? "EOF" : je.text);
		utf8_scrub(err);
		return -EINVAL;
	}
	if (json_is_null(root)) {	/* as an empty object */
		json_decref(root);
		root = json_object();
	}
	if (!json_is_object(root)) {
		snprintf(err, errlen, LEAD "the body must be an object, not "
		    "%s", type_name(json_typeof(root)));
		goto out;
	}
	/* 1. Types: what a decoder of upstream's structure refuses. */
	if (want_type(root, "sandboxId", JSON_STRING, "a string", &sid, err,
	    errlen) < 0 ||
	    want_type(root, "entrypointPolicy", JSON_STRING, "a string", &pol,
	    err, errlen) < 0 ||
	    want_type(root, "accessTokenHash", JSON_STRING, "a string", &hash,
	    err, errlen) < 0 ||
	    want_type(root, "envs", JSON_OBJECT, "an object", &envs, err,
	    errlen) < 0 ||
	    want_type(root, "lifecycle", JSON_OBJECT, "an object", &lc, err,
	    errlen) < 0 ||
	    want_type(root, "telemetry", JSON_OBJECT, "an object", &tel, err,
	    errlen) < 0 ||
	    want_type(root, "preserveRuntimeState", JSON_TRUE, "a boolean",
	    &pres, err, errlen) < 0)
		goto out;
	gen = json_object_get(root, "generation");
	if (gen != NULL && !json_is_null(gen) && (!json_is_integer(gen) ||
	    json_integer_value(gen) < 0)) {
		snprintf(err, errlen, LEAD "generation must be an unsigned "
		    "integer, not %s", json_is_integer(gen) ? "negative" :
		    type_name(json_typeof(gen)));
		goto out;
	}
	if (envs != NULL && string_map(envs, "envs", err, errlen) < 0)
		goto out;
	if (tel != NULL && (v = json_object_get(tel, "attributes")) != NULL &&
	    !json_is_null(v)) {
		if (!json_is_object(v)) {
			snprintf(err, errlen, LEAD "telemetry.attributes must "
			    "be an object, not %s", type_name(json_typeof(v)));
			goto out;
		}
		attrs = v;
	}
	if (attrs != NULL && string_map(attrs, "telemetry.attributes", err,
	    errlen) < 0)
		goto out;

	/* 2. Identity. */
	sv = sid != NULL ? json_string_value(sid) : "";
	len = sid != NULL ? json_string_length(sid) : 0;
	while (len > 0 && isspace((unsigned char)*sv)) {
		sv++;
		len--;
	}
	while (len > 0 && isspace((unsigned char)sv[len - 1]))
		len--;
	if (len == 0) {
		snprintf(err, errlen, "sandboxId must not be blank");
		goto out;
	}
	if (len > RUNTIME_ID_MAX) {
		snprintf(err, errlen, "sandboxId must not exceed %d "
		    "characters", RUNTIME_ID_MAX);
		goto out;
	}
	if (memchr(sv, '\0', len) != NULL) {
		snprintf(err, errlen, "sandboxId must not contain NUL");
		goto out;
	}
	r.sandbox_id = xstrndup(sv, len);
	if (gen == NULL || json_is_null(gen) || json_integer_value(gen) == 0) {
		snprintf(err, errlen, "generation must be a positive integer");
		goto out;
	}
	r.generation = (uint64_t)json_integer_value(gen);
	p = pol != NULL ? json_string_value(pol) : "";
	if (strcmp(p, "restart") == 0)
		r.restart = true;
	else if (*p != '\0' && strcmp(p, "keep") != 0) {
		snprintf(err, errlen, "entrypointPolicy must be \"keep\" or "
		    "\"restart\"");
		goto out;
	}

	/* 3. The token's digest: absent and "" both mean none. */
	if (hash != NULL && json_string_length(hash) > 0) {
		if (strlen(json_string_value(hash)) !=
		    json_string_length(hash)) {
			snprintf(err, errlen, "access token hash must use "
			    RUNTIME_HASH_PREFIX "<hex> format");
			goto out;
		}
		if (runtime_hash_parse(json_string_value(hash), r.hash, err,
		    errlen) < 0)
			goto out;
		r.has_hash = true;
	}

	/* 4. Envs: named, not too long, not execd's own. */
	json_object_foreach(envs, k, e) {
		quote(q, sizeof(q), k);
		if (*k == '\0') {
			snprintf(err, errlen, "envs must not contain blank "
			    "keys");
			goto out;
		}
		if (strlen(k) > RUNTIME_ENV_KEY_MAX) {
			snprintf(err, errlen, "env key %s must not exceed %d "
			    "characters", q, RUNTIME_ENV_KEY_MAX);
			goto out;
		}
		if (runtime_env_reserved(k)) {
			snprintf(err, errlen, "env key %s is reserved by execd "
			    "and must not be set via /internal/init", q);
			goto out;
		}
		/* what no environment can hold */
		if (strchr(k, '=') != NULL || strlen(json_string_value(e)) !=
		    json_string_length(e)) {
			snprintf(err, errlen, "env key %s: names may not hold "
			    "'=' and values may not hold NUL", q);
			goto out;
		}
	}
	r.envs = envs != NULL ? json_deep_copy(envs) : json_object();

	/* 5. Lifecycle: kept whole for the hooks; an object. */
	r.lifecycle = lc != NULL ? json_deep_copy(lc) : NULL;

	/* 6. Telemetry attributes; sandbox_id and generation are ours. */
	r.warnings = json_array();
	r.attrs = json_object();
	if (attrs != NULL && json_object_size(attrs) > RUNTIME_ATTRS_MAX) {
		snprintf(err, errlen, "telemetry attributes must not exceed "
		    "%d entries", RUNTIME_ATTRS_MAX);
		goto out;
	}
	json_object_foreach(attrs, k, e) {
		const char *t = k;

		quote(q, sizeof(q), k);
		while (isspace((unsigned char)*t))
			t++;
		if (*t == '\0') {
			snprintf(err, errlen, "telemetry attributes must not "
			    "contain blank keys");
			goto out;
		}
		if (strlen(k) > RUNTIME_ATTR_KEY_MAX) {
			snprintf(err, errlen, "telemetry attribute key %s must "
			    "not exceed %d characters", q,
			    RUNTIME_ATTR_KEY_MAX);
			goto out;
		}
		if (json_string_length(e) > RUNTIME_ATTR_VALUE_MAX) {
			snprintf(err, errlen, "telemetry attribute %s value "
			    "must not exceed %d bytes", q,
			    RUNTIME_ATTR_VALUE_MAX);
			goto out;
		}
		if (strcmp(k, "sandbox_id") == 0 ||
		    strcmp(k, "generation") == 0) {
			v = json_sprintf("telemetry attribute %s is reserved "
			    "and was dropped", k);
			json_array_append_new(r.warnings, v);
			continue;
		}
		json_object_set(r.attrs, k, e);
	}
	r.preserve = pres != NULL && json_is_true(pres);
	*out = r;
	memset(&r, 0, sizeof(r));
	rc = 0;
out:
	if (rc < 0)
		utf8_scrub(err);	/* a parser's quote, a key cut short */
	runtime_req_reset(&r);
	json_decref(root);
	return rc;
}

/* Free what a parsed request holds. */
void
runtime_req_reset(struct runtime_req *r)
{
	free(r->sandbox_id);
	json_decref(r->envs);
	json_decref(r->lifecycle);
	json_decref(r->attrs);
	json_decref(r->warnings);
	explicit_bzero(r->hash, sizeof(r->hash));
	memset(r, 0, sizeof(*r));
}

/* Ready at once, unless an init is awaited. */
void
runtime_start(bool gated)
{
	rt.gated = gated;
	rt.ready = !gated;
}

/* Whether execd still waits for its first successful init. */
bool
runtime_awaited(void)
{
	return rt.gated && !rt.ready;
}

/* Forget the binding. */
void
runtime_shutdown(void)
{
	free(rt.sandbox_id);
	json_decref(rt.envs);
	json_decref(rt.attrs);
	explicit_bzero(rt.md, sizeof(rt.md));
	memset(&rt, 0, sizeof(rt));
}

bool
runtime_ready(void)
{
	return rt.ready;
}

void
runtime_set_ready(bool ready)
{
	rt.ready = ready;
}

bool
runtime_bound(void)
{
	return rt.bound;
}

const char *
runtime_sandbox_id(void)
{
	return rt.sandbox_id;
}

uint64_t
runtime_generation(void)
{
	return rt.generation;
}

const unsigned char *
runtime_token_md(void)
{
	return rt.has_md ? rt.md : NULL;
}

/* Replace the binding with req's whole; req is reset. */
void
runtime_bind(struct runtime_req *req)
{
	free(rt.sandbox_id);
	json_decref(rt.envs);
	json_decref(rt.attrs);
	rt.bound = true;
	rt.sandbox_id = req->sandbox_id;
	rt.generation = req->generation;
	rt.has_md = req->has_hash;
	memcpy(rt.md, req->hash, sizeof(rt.md));
	rt.envs = req->envs;
	rt.attrs = req->attrs;
	req->sandbox_id = NULL;
	req->envs = req->attrs = NULL;
	runtime_req_reset(req);
}

/* The binding's variables under over; see runtime.h. */
json_t *
runtime_env_over(json_t *over)
{
	json_t *env;

	if (!rt.bound)
		return over;
	env = json_deep_copy(rt.envs);
	json_object_update(env, over);	/* refs: byte values stay as they are */
	json_object_set_new(env, "OPENSANDBOX_ID",
	    json_string(rt.sandbox_id));
	json_decref(over);
	return env;
}

/*
 * The environment of a shell, terminal or hook: execd's without its
 * configuration names, the binding's variables and then the EXECD_ENVS
 * file's over it (upstream's order for all but commands).
 */
char **
runtime_env_child(void)
{
	extern char **environ;
	json_t *over = envfile_overlay(NULL);	/* file, binding (wrapped) */
	size_t n = 0, i = 0, m;
	const char *k;
	json_t *v;
	char **env, name[256];

	while (environ[n] != NULL)
		n++;
	env = xcalloc(n + json_object_size(over) + 1, sizeof(*env));
	for (size_t j = 0; j < n; j++) {
		m = strcspn(environ[j], "=");
		if (m < sizeof(name)) {
			memcpy(name, environ[j], m);
			name[m] = '\0';
			if (runtime_env_reserved(name) ||
			    json_object_get(over, name) != NULL)
				continue;
		}
		env[i++] = xstrdup(environ[j]);
	}
	json_object_foreach(over, k, v)
		if (!runtime_env_reserved(k))
			env[i++] = xasprintf("%s=%s", k, json_string_value(v));
	json_decref(over);
	return env;
}

/* Free what runtime_env_child() made; NULL ok. */
void
runtime_env_free(char **env)
{
	for (size_t i = 0; env != NULL && env[i] != NULL; i++)
		free(env[i]);
	free(env);
}
