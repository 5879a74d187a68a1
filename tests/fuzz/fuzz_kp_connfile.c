/*
 * fuzz_kp_connfile.c -- fuzz target for kp_connfile_parse().
 *
 * The input is a connection file's text.  Whether it parses, and to what,
 * is compared with a model written here on jansson's own reading of the
 * input (the keys kp_connfile.c requires, their types and limits, and its
 * defaults).  A failed parse must leave its output untouched and say why
 * in a NUL-terminated message.  A successful one must hold what
 * kp_connfile.h promises (ports in 1..65535, transport tcp or ipc, a
 * non-empty NUL-terminated ip, a key of at most KP_KEY_MAX bytes), then
 * survive kp_connfile_json() and a dump, compact and as written to disk,
 * parsing back to the very same fields.  Every endpoint
 * must fit a buffer of its exact size, be refused one byte short, and
 * start with the transport.  A broken invariant aborts.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "../../kernelproto/kp_connfile.h"

#define CHECK(e) do { if (!(e)) { fprintf(stderr, "%s:%d: invariant " \
	"broken: %s\n", __FILE__, __LINE__, #e); abort(); } } while (0)

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

static int	 model(const uint8_t *, size_t, struct kp_conn *);
static const char *str_or(json_t *, const char *, const char *, size_t *);
static void	 check_conn(const struct kp_conn *);
static void	 check_same(const struct kp_conn *, const struct kp_conn *);
static void	 check_dump(const struct kp_conn *, json_t *, size_t);
static void	 check_endpoints(const struct kp_conn *);

/* The string member k of o, or dflt if absent; NULL if not a string. */
static const char *
str_or(json_t *o, const char *k, const char *dflt, size_t *lenp)
{
	json_t *v = json_object_get(o, k);

	if (v == NULL) {
		*lenp = dflt != NULL ? strlen(dflt) : 0;
		return dflt;
	}
	*lenp = json_is_string(v) ? json_string_length(v) : 0;
	return json_is_string(v) ? json_string_value(v) : NULL;
}

/* Whether the input must parse (1 or 0), and if so into what (*c). */
static int
model(const uint8_t *data, size_t size, struct kp_conn *c)
{
	static const char *const ports[KP_NCHAN] = { "shell_port",
	    "iopub_port", "stdin_port", "control_port", "hb_port" };
	const char *ip, *tr, *key, *scheme, *name;
	size_t iplen, trlen, keylen, schemelen, namelen;
	json_t *root, *v;
	int ok = 0;

	memset(c, 0, sizeof(*c));
	if ((root = json_loadb((const char *)data, size, 0, NULL)) == NULL)
		return 0;
	if (!json_is_object(root))
		goto out;
	for (int i = 0; i < KP_NCHAN; i++) {
		v = json_object_get(root, ports[i]);
		if (!json_is_integer(v) || json_integer_value(v) < 1 ||
		    json_integer_value(v) > 65535)
			goto out;
		c->port[i] = (int)json_integer_value(v);
	}
	ip = str_or(root, "ip", NULL, &iplen);
	tr = str_or(root, "transport", "tcp", &trlen);
	key = str_or(root, "key", NULL, &keylen);
	scheme = str_or(root, "signature_scheme", "hmac-sha256", &schemelen);
	name = str_or(root, "kernel_name", "", &namelen);
	if (ip == NULL || iplen == 0 || iplen > 255 || tr == NULL ||
	    (strcmp(tr, "tcp") != 0 && strcmp(tr, "ipc") != 0) ||
	    key == NULL || keylen > KP_KEY_MAX || scheme == NULL ||
	    (keylen > 0 && strcmp(scheme, "hmac-sha256") != 0) ||
	    name == NULL || namelen > 127)
		goto out;
	memcpy(c->ip, ip, iplen);
	memcpy(c->transport, tr, 4);
	memcpy(c->key, key, keylen);
	c->keylen = keylen;
	memcpy(c->kernel_name, name, namelen);
	ok = 1;
out:
	json_decref(root);
	return ok;
}

/* What kp_connfile.h promises of a parsed connection. */
static void
check_conn(const struct kp_conn *c)
{
	CHECK(strcmp(c->transport, "tcp") == 0 ||
	    strcmp(c->transport, "ipc") == 0);
	CHECK(memchr(c->ip, '\0', sizeof(c->ip)) != NULL);
	CHECK(c->ip[0] != '\0');
	CHECK(memchr(c->kernel_name, '\0', sizeof(c->kernel_name)) != NULL);
	CHECK(c->keylen <= KP_KEY_MAX);
	CHECK(memchr(c->key, '\0', c->keylen) == NULL);
	for (int i = 0; i < KP_NCHAN; i++)
		CHECK(c->port[i] >= 1 && c->port[i] <= 65535);
}

/* a and b hold the same connection. */
static void
check_same(const struct kp_conn *a, const struct kp_conn *b)
{
	CHECK(strcmp(a->transport, b->transport) == 0);
	CHECK(strcmp(a->ip, b->ip) == 0);
	CHECK(strcmp(a->kernel_name, b->kernel_name) == 0);
	CHECK(a->keylen == b->keylen);
	CHECK(memcmp(a->key, b->key, a->keylen) == 0);
	for (int i = 0; i < KP_NCHAN; i++)
		CHECK(a->port[i] == b->port[i]);
}

/* Dump o with flags and parse it back: the same as c. */
static void
check_dump(const struct kp_conn *c, json_t *o, size_t flags)
{
	struct kp_conn back;
	char *text, err[256];

	CHECK((text = json_dumps(o, flags)) != NULL);
	err[0] = '\0';
	if (kp_connfile_parse(text, strlen(text), &back, err,
	    sizeof(err)) != 0) {
		fprintf(stderr, "re-parse failed: %s\n%s\n", err, text);
		abort();
	}
	check_same(c, &back);
	free(text);
}

/* Each endpoint fits exactly its length plus one, and no less. */
static void
check_endpoints(const struct kp_conn *c)
{
	char big[512], *exact;
	size_t n;

	for (int i = 0; i < KP_NCHAN; i++) {
		CHECK(kp_conn_endpoint(c, i, big, sizeof(big)) == 0);
		n = strlen(big);
		CHECK(strncmp(big, c->transport, 3) == 0);
		CHECK(strncmp(big + 3, "://", 3) == 0);
		CHECK(strncmp(big + 6, c->ip, strlen(c->ip)) == 0);
		CHECK((exact = malloc(n + 1)) != NULL);
		memset(exact, 'x', n + 1);
		CHECK(kp_conn_endpoint(c, i, exact, n) == -ENAMETOOLONG);
		CHECK(exact[0] == 'x');
		CHECK(kp_conn_endpoint(c, i, exact, n + 1) == 0);
		CHECK(strcmp(exact, big) == 0);
		free(exact);
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct kp_conn c, sentinel, want;
	char err[256];
	json_t *o;
	int rc, ok;

	memset(&c, 0xa5, sizeof(c));
	sentinel = c;
	memset(err, 0, sizeof(err));
	rc = kp_connfile_parse((const char *)data, size, &c, err,
	    sizeof(err));
	ok = model(data, size, &want);
	CHECK((rc == 0) == (ok == 1));
	if (rc != 0) {
		CHECK(rc == -EINVAL);
		CHECK(memcmp(&c, &sentinel, sizeof(c)) == 0);
		CHECK(err[0] != '\0');
		CHECK(memchr(err, '\0', sizeof(err)) != NULL);
		return 0;
	}
	check_conn(&c);
	check_same(&c, &want);
	CHECK((o = kp_connfile_json(&c)) != NULL);
	CHECK(json_object_size(o) == 10);
	check_dump(&c, o, JSON_COMPACT);
	check_dump(&c, o, JSON_INDENT(2) | JSON_ENSURE_ASCII);
	json_decref(o);
	check_endpoints(&c);
	return 0;
}
