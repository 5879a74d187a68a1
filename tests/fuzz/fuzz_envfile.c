/*
 * fuzz_envfile.c -- fuzz target for the EXECD_ENVS dotenv file and path
 * expansion (execd/process/envfile.c).
 *
 * The input is used three ways; any broken invariant aborts:
 *  1. as a file: envfile_parse() of it gives an object of strings under
 *     shell names, and envfile_read() of it (written to a memfd) gives
 *     the same, keys, order and bytes;
 *  2. as values, split at NUL bytes: each written the way the SDKs'
 *     setEnv writes an entry ('v' when v has no single quote, else "v"
 *     with \ " newline tab CR escaped) under names V0, V1..., with lines
 *     of noise between them (comments, blank lines, a broken entry); the
 *     file read back gives every value byte for byte, the lossless
 *     promise, except a double-quoted one holding a '$' (it expands on
 *     load, upstream's rule too);
 *  3. as a working directory: envfile_expand_path() either succeeds, and
 *     then leaves a path without '$' as it was, or fails naming only
 *     shell names that follow a '$' in it, none of them defined.
 * A few variables are set first (FZ_A, FZ_B, an empty FZ_E; FZ_U never).
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <jansson.h>

#include "../../execd/process/envfile.h"
#include "../../util/buf.h"
#include "fz.h"

#define MAX_VALUES	64

static char	 path[64];
static int	 fd = -1;

static bool
is_name(const char *p, size_t n)
{
	if (n == 0 || !((p[0] >= 'A' && p[0] <= 'Z') || (p[0] >= 'a' &&
	    p[0] <= 'z') || p[0] == '_'))
		return false;
	for (size_t i = 1; i < n; i++)
		if (!((p[i] >= 'A' && p[i] <= 'Z') || (p[i] >= 'a' &&
		    p[i] <= 'z') || (p[i] >= '0' && p[i] <= '9') ||
		    p[i] == '_'))
			return false;
	return true;
}

static json_t *
read_back(const void *p, size_t n)
{
	if (ftruncate(fd, 0) < 0 || pwrite(fd, p, n, 0) != (ssize_t)n)
		abort();
	return envfile_read(path);
}

/* 1: the file as it is. */
static void
as_file(const char *p, size_t n)
{
	json_t *got = envfile_parse(p, n), *again = read_back(p, n), *v, *w;
	const char *k;
	void *it = json_object_iter(again);

	CHECK(json_is_object(got) && json_is_object(again));
	json_object_foreach(got, k, v) {
		CHECK(is_name(k, strlen(k)));
		CHECK(json_is_string(v));
		CHECK(it != NULL && strcmp(k, json_object_iter_key(it)) == 0);
		w = json_object_iter_value(it);
		CHECK(json_string_length(v) == json_string_length(w) &&
		    memcmp(json_string_value(v), json_string_value(w),
		    json_string_length(v)) == 0);
		it = json_object_iter_next(again, it);
	}
	CHECK(it == NULL);
	json_decref(got);
	json_decref(again);
}

/* An entry as setEnv writes it. */
static void
write_entry(struct buf *b, size_t i, const char *v, size_t n, bool *dq)
{
	*dq = memchr(v, '\'', n) != NULL;
	buf_addf(b, "V%zu=%c", i, *dq ? '"' : '\'');
	for (size_t j = 0; j < n; j++) {
		if (!*dq) {
			buf_add(b, v + j, 1);
			continue;
		}
		switch (v[j]) {
		case '\\': buf_adds(b, "\\\\"); break;
		case '"': buf_adds(b, "\\\""); break;
		case '\n': buf_adds(b, "\\n"); break;
		case '\t': buf_adds(b, "\\t"); break;
		case '\r': buf_adds(b, "\\r"); break;
		default: buf_add(b, v + j, 1);
		}
	}
	buf_addf(b, "%c\n", *dq ? '"' : '\'');
}

/* 2: values written as setEnv writes them come back unchanged. */
static void
as_values(const char *p, size_t n)
{
	static const char *const noise[] = { "# a comment\n", "\n",
	    "  \t\n", "BROKEN='x' y\n", "export NOISE=1\n", "=no name\n" };
	const char *vals[MAX_VALUES], *end = p + n, *z;
	size_t lens[MAX_VALUES], k = 0;
	bool dq[MAX_VALUES];
	struct buf b;
	json_t *got, *v;
	char name[32];

	buf_init(&b);
	for (; k < MAX_VALUES; p = z + 1) {
		if ((z = memchr(p, '\0', (size_t)(end - p))) == NULL)
			z = end;
		vals[k] = p;
		lens[k] = (size_t)(z - p);
		buf_adds(&b, noise[k % NELEM(noise)]);
		write_entry(&b, k, vals[k], lens[k], &dq[k]);
		k++;
		if (z == end)
			break;
	}
	got = read_back(b.p, b.len);
	for (size_t i = 0; i < k; i++) {
		if (dq[i] && memchr(vals[i], '$', lens[i]) != NULL)
			continue;
		snprintf(name, sizeof(name), "V%zu", i);
		v = json_object_get(got, name);
		CHECK(v != NULL && json_string_length(v) == lens[i] &&
		    memcmp(json_string_value(v), vals[i], lens[i]) == 0);
	}
	CHECK(json_object_get(got, "BROKEN") == NULL);
	json_decref(got);
	buf_reset(&b);
}

/* 3: the input as a working directory. */
static void
as_path(const char *p, size_t n)
{
	static const char prefix[] = "path references undefined environment "
	    "variables: ";
	json_t *over = json_pack("{s:s}", "FZ_O", "over");
	char *s = strndup(p, n), err[4096], *name, *save = NULL;
	struct buf out;
	size_t len;
	int rc;

	if (s == NULL)
		abort();
	buf_init_max(&out, 1 << 16);
	rc = envfile_expand_path(s, over, &out, err, sizeof(err));
	CHECK(rc == 0 || rc == -ENOENT);
	if (rc == 0 && !out.full && strchr(s, '$') == NULL)
		CHECK(out.len == strlen(s) && strcmp(out.p, s) == 0);
	if (rc == -ENOENT && strlen(err) < sizeof(err) - 1) {
		CHECK(strncmp(err, prefix, sizeof(prefix) - 1) == 0);
		for (name = strtok_r(err + sizeof(prefix) - 1, ",", &save);
		    name != NULL; name = strtok_r(NULL, ",", &save)) {
			len = strlen(name);
			CHECK(is_name(name, len));
			CHECK(getenv(name) == NULL && strcmp(name, "FZ_O"));
			CHECK(strstr(s, name) != NULL);
		}
	}
	buf_reset(&out);
	json_decref(over);
	free(s);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > ENVFILE_MAX / 4)
		return 0;
	if (fd < 0) {
		/* A file with no name: the path goes through /proc. */
		if ((fd = memfd_create("fuzz_envfile", MFD_CLOEXEC)) < 0)
			abort();
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
		setenv("FZ_A", "alpha", 1);
		setenv("FZ_B", "$FZ_A ${FZ_A}", 1);	/* not expanded again */
		setenv("FZ_E", "", 1);
		unsetenv("FZ_U");
	}
	as_file((const char *)data, size);
	as_values((const char *)data, size);
	as_path((const char *)data, size);
	return 0;
}
