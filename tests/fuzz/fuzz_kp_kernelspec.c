/*
 * fuzz_kp_kernelspec.c -- fuzz target for kp_kernelspec_parse() and
 * kp_kernelspec_argv().
 *
 * The input is a kernel.json's text.  Whether it parses, and to what, is
 * compared with a model written here on jansson's own reading of the
 * input.  A failed parse must leave its output untouched and say why.  A
 * successful one must hold what kp_kernelspec.h promises: argc elements
 * then NULL in argv, argc at least 1, env an object of strings, metadata
 * an object, a valid interrupt_mode, the name and resource_dir given.
 * The argv template is then filled in and compared with a second model
 * (find the nearest template with strstr, copy up to it, replace it): no
 * "{connection_file}" may remain, since neither replacement contains a
 * brace.  A broken invariant aborts.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <jansson.h>

#include "../../kernelproto/kp_kernelspec.h"

#define CHECK(e) do { if (!(e)) { fprintf(stderr, "%s:%d: invariant " \
	"broken: %s\n", __FILE__, __LINE__, #e); abort(); } } while (0)

#define NAME	"fuzz"
#define RDIR	"/usr/share/jupyter/kernels/fuzz"
#define CONN	"/run/execd/kernel-0f.json"

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

static char	*model(const char *);
static int	 model_ok(const uint8_t *, size_t);
static void	 check_fields(const uint8_t *, size_t,
		    const struct kp_kernelspec *);
static void	 check_spec(const struct kp_kernelspec *);

/* The argv element s as it must come out, computed another way. */
static char *
model(const char *s)
{
	static const char cfk[] = "{connection_file}", rdk[] = "{resource_dir}";
	const char *cf, *rd, *next, *with;
	size_t len = strlen(s), cap, n = 0, skip;
	char *out;

	/* Each replacement is at most this much longer than its template. */
	cap = len + (len / (sizeof(rdk) - 1) + 1) * (sizeof(RDIR) +
	    sizeof(CONN)) + 1;
	CHECK((out = malloc(cap)) != NULL);
	for (;;) {
		cf = strstr(s, cfk);
		rd = strstr(s, rdk);
		if (cf == NULL && rd == NULL)
			break;
		if (rd == NULL || (cf != NULL && cf < rd)) {
			next = cf;
			with = CONN;
			skip = sizeof(cfk) - 1;
		} else {
			next = rd;
			with = RDIR;
			skip = sizeof(rdk) - 1;
		}
		memcpy(out + n, s, (size_t)(next - s));
		n += (size_t)(next - s);
		memcpy(out + n, with, strlen(with));
		n += strlen(with);
		s = next + skip;
	}
	CHECK(n + strlen(s) < cap);
	strcpy(out + n, s);
	return out;
}

/* Whether the input is a kernel.json that must parse. */
static int
model_ok(const uint8_t *data, size_t size)
{
	json_t *root, *v, *e;
	const char *k;
	size_t i;
	int ok = 0;

	if ((root = json_loadb((const char *)data, size, 0, NULL)) == NULL)
		return 0;
	if (!json_is_object(root))
		goto out;
	v = json_object_get(root, "argv");
	if (!json_is_array(v) || json_array_size(v) == 0)
		goto out;
	json_array_foreach(v, i, e)
		if (!json_is_string(e))
			goto out;
	if (((v = json_object_get(root, "display_name")) != NULL &&
	    !json_is_string(v)) ||
	    ((v = json_object_get(root, "language")) != NULL &&
	    !json_is_string(v)) ||
	    ((v = json_object_get(root, "metadata")) != NULL &&
	    !json_is_object(v)))
		goto out;
	if ((v = json_object_get(root, "env")) != NULL) {
		if (!json_is_object(v))
			goto out;
		json_object_foreach(v, k, e)
			if (!json_is_string(e))
				goto out;
	}
	if ((v = json_object_get(root, "interrupt_mode")) != NULL &&
	    (!json_is_string(v) || (strcasecmp(json_string_value(v),
	    "signal") != 0 && strcasecmp(json_string_value(v),
	    "message") != 0)))
		goto out;
	ok = 1;
out:
	json_decref(root);
	return ok;
}

/* The parsed fields are the input's, or the documented defaults. */
static void
check_fields(const uint8_t *data, size_t size,
    const struct kp_kernelspec *ks)
{
	json_t *root, *v, *e;
	size_t i;

	CHECK((root = json_loadb((const char *)data, size, 0, NULL)) != NULL);
	v = json_object_get(root, "argv");
	CHECK(json_array_size(v) == ks->argc);
	json_array_foreach(v, i, e)
		CHECK(strcmp(json_string_value(e), ks->argv[i]) == 0);
	v = json_object_get(root, "display_name");
	CHECK(strcmp(ks->display_name, v ? json_string_value(v) : "") == 0);
	v = json_object_get(root, "language");
	CHECK(strcmp(ks->language, v ? json_string_value(v) : "") == 0);
	v = json_object_get(root, "env");
	CHECK(v != NULL ? json_equal(v, ks->env) :
	    json_object_size(ks->env) == 0);
	v = json_object_get(root, "metadata");
	CHECK(v != NULL ? json_equal(v, ks->metadata) :
	    json_object_size(ks->metadata) == 0);
	v = json_object_get(root, "interrupt_mode");
	CHECK(ks->interrupt_mode == (v != NULL && strcasecmp(
	    json_string_value(v), "message") == 0 ? KP_INTERRUPT_MESSAGE :
	    KP_INTERRUPT_SIGNAL));
	json_decref(root);
}

/* What kp_kernelspec.h promises of a parsed spec. */
static void
check_spec(const struct kp_kernelspec *ks)
{
	const char *k;
	json_t *v;

	CHECK(strcmp(ks->name, NAME) == 0);
	CHECK(strcmp(ks->resource_dir, RDIR) == 0);
	CHECK(ks->argc >= 1);
	for (size_t i = 0; i < ks->argc; i++)
		CHECK(ks->argv[i] != NULL);
	CHECK(ks->argv[ks->argc] == NULL);
	CHECK(ks->display_name != NULL && ks->language != NULL);
	CHECK(json_is_object(ks->env));
	json_object_foreach(ks->env, k, v)
		CHECK(json_is_string(v));
	CHECK(json_is_object(ks->metadata));
	CHECK(ks->interrupt_mode == KP_INTERRUPT_SIGNAL ||
	    ks->interrupt_mode == KP_INTERRUPT_MESSAGE);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct kp_kernelspec *ks, *sentinel = (struct kp_kernelspec *)&ks;
	char err[256], **argv, *want;
	size_t i;
	int rc;

	ks = sentinel;
	memset(err, 0, sizeof(err));
	rc = kp_kernelspec_parse((const char *)data, size, NAME, RDIR, &ks,
	    err, sizeof(err));
	CHECK((rc == 0) == (model_ok(data, size) == 1));
	if (rc != 0) {
		CHECK(rc == -EINVAL);
		CHECK(ks == sentinel);
		CHECK(err[0] != '\0');
		CHECK(memchr(err, '\0', sizeof(err)) != NULL);
		return 0;
	}
	check_spec(ks);
	check_fields(data, size, ks);
	CHECK((argv = kp_kernelspec_argv(ks, CONN)) != NULL);
	for (i = 0; i < ks->argc; i++) {
		CHECK(argv[i] != NULL);
		CHECK(strstr(argv[i], "{connection_file}") == NULL);
		CHECK(strstr(argv[i], "{resource_dir}") == NULL);
		want = model(ks->argv[i]);
		CHECK(strcmp(argv[i], want) == 0);
		free(want);
		free(argv[i]);
	}
	CHECK(argv[i] == NULL);
	free(argv);
	kp_kernelspec_free(ks);
	return 0;
}
