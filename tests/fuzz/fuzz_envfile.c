/*
 * fuzz_envfile.c -- fuzz target for the EXECD_ENVS file (execd/envfile.c).
 *
 * The input is the file, written to a memfd that envfile_read() reads.
 * A few variables it may reference are set first (FZ_A, FZ_B, an empty
 * FZ_E).  Invariants, any break aborts: the result is an object of
 * strings under shell names, and equal -- keys, order and values -- to a
 * model written here from envfile.h's words: lines split at "\n", "\r"s
 * trimmed at the end, '#' and blank lines skipped, a name up to the first
 * '=', $NAME and ${NAME} expanded from the environment, a later line
 * winning, a value that is not UTF-8 skipped.
 */
#include <ctype.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <jansson.h>

#include "../../execd/process/envfile.h"
#include "fz.h"

static char	 path[64];
static int	 fd = -1;

static bool
is_name(const char *p, size_t n)
{
	if (n == 0 || !(isalpha((unsigned char)p[0]) || p[0] == '_'))
		return false;
	for (size_t i = 1; i < n; i++)
		if (!isalnum((unsigned char)p[i]) && p[i] != '_')
			return false;
	return true;
}

static bool
name_char(char c)
{
	return isalnum((unsigned char)c) || c == '_';
}

/* Expand one value, as envfile.h says. */
static char *
expand(const char *v, size_t n, size_t *outlen)
{
	size_t cap = n + 1, len = 0, i = 0, j, k;
	char *out = malloc(cap), name[256];
	const char *val;
	bool br;

	if (out == NULL)
		abort();
	while (i < n) {
		br = v[i] == '$' && i + 1 < n && v[i + 1] == '{';
		j = i + 1 + br;
		for (k = j; k < n && name_char(v[k]); k++)
			;
		if (v[i] != '$' || i + 1 == n || !is_name(v + j, k - j) ||
		    k - j >= sizeof(name) || (br && (k == n || v[k] != '}'))) {
			val = v + i;
			k = 1;
			i++;
		} else {
			memcpy(name, v + j, k - j);
			name[k - j] = '\0';
			val = getenv(name);
			i = k + br;
			k = val != NULL ? strlen(val) : 0;
		}
		if (len + k + 1 > cap) {
			cap = (len + k + 1) * 2;
			if ((out = realloc(out, cap)) == NULL)
				abort();
		}
		if (k > 0)
			memcpy(out + len, val, k);
		len += k;
	}
	*outlen = len;
	return out;
}

/* The file's variables, by the model. */
static json_t *
model(const char *p, size_t n)
{
	json_t *o = json_object();
	const char *nl, *end = p + n, *eq;
	size_t len, vlen;
	char *key, *val;

	for (; p < end; p = nl + 1) {
		if ((nl = memchr(p, '\n', (size_t)(end - p))) == NULL)
			nl = end;
		len = (size_t)(nl - p);
		while (len > 0 && p[len - 1] == '\r')
			len--;
		if (len == 0 || p[0] == '#' ||
		    (eq = memchr(p, '=', len)) == NULL ||
		    !is_name(p, (size_t)(eq - p)))
			continue;
		val = expand(eq + 1, len - (size_t)(eq - p) - 1, &vlen);
		if ((key = strndup(p, (size_t)(eq - p))) == NULL)
			abort();
		if (fz_utf8(val, vlen))
			json_object_set_new(o, key, json_stringn(val, vlen));
		free(key);
		free(val);
	}
	return o;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	json_t *got, *want, *v, *w;
	const char *k;
	void *it;

	if (size > ENVFILE_MAX)
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
	if (ftruncate(fd, 0) < 0 || pwrite(fd, data, size, 0) != (ssize_t)size)
		abort();
	got = envfile_read(path);
	want = model((const char *)data, size);
	CHECK(json_is_object(got));
	CHECK(json_object_size(got) == json_object_size(want));
	/* The same keys in the same order, with the same values. */
	it = json_object_iter(want);
	json_object_foreach(got, k, v) {
		CHECK(it != NULL);
		CHECK(strcmp(k, json_object_iter_key(it)) == 0);
		CHECK(is_name(k, strlen(k)));
		w = json_object_iter_value(it);
		CHECK(json_is_string(v));
		CHECK(json_string_length(v) == json_string_length(w) &&
		    memcmp(json_string_value(v), json_string_value(w),
		    json_string_length(v)) == 0);
		it = json_object_iter_next(want, it);
	}
	CHECK(it == NULL);
	json_decref(got);
	json_decref(want);
	return 0;
}
