/*
 * fuzz_runtime.c -- fuzz target for the POST /internal/init body and the
 * token hash (execd/domain/runtime.c).
 *
 * The input is a request body; it is also tried, as a C string, as an
 * accessTokenHash on its own.  Invariants, any break aborts: a refusal
 * says why in UTF-8 and fills nothing; an acceptance holds a trimmed
 * sandbox id of 1 to 128 bytes, a positive generation, envs of strings
 * under named, unreserved keys, at most 64 telemetry attributes without
 * the reserved two, and warnings that are strings; a hash is accepted
 * exactly when it is "sha256:" and 64 hex digits between blanks, and its
 * digest is those digits.
 */
#include <ctype.h>
#include <errno.h>
#include <string.h>

#include <jansson.h>

#include "../../execd/domain/runtime.h"
#include "fz.h"

/* The model of runtime_hash_parse: the digits of a good hash, or NULL. */
static const char *
hash_model(const char *s, size_t *n)
{
	size_t len;

	while (isspace((unsigned char)*s))
		s++;
	len = strlen(s);
	while (len > 0 && isspace((unsigned char)s[len - 1]))
		len--;
	if (len != 7 + 64 || strncmp(s, "sha256:", 7) != 0)
		return NULL;
	for (size_t i = 7; i < len; i++)
		if (!isxdigit((unsigned char)s[i]))
			return NULL;
	*n = 64;
	return s + 7;
}

static void
check_hash(const char *s)
{
	unsigned char md[RUNTIME_MD_LEN];
	char err[256] = "", hex[3];
	const char *digits;
	size_t n;
	int rc;

	rc = runtime_hash_parse(s, md, err, sizeof(err));
	digits = hash_model(s, &n);
	CHECK((rc == 0) == (digits != NULL));
	if (rc < 0) {
		CHECK(err[0] != '\0' && fz_utf8(err, strlen(err)));
		return;
	}
	for (size_t i = 0; i < RUNTIME_MD_LEN; i++) {
		snprintf(hex, sizeof(hex), "%02x", md[i]);
		CHECK(tolower((unsigned char)digits[2 * i]) == hex[0]);
		CHECK(tolower((unsigned char)digits[2 * i + 1]) == hex[1]);
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct runtime_req r;
	char err[512] = "", *s;
	const char *k;
	json_t *v;
	size_t i, n;
	int rc;

	if (size > (1 << 16))
		return 0;
	rc = runtime_req_parse((const char *)data, size, &r, err, sizeof(err));
	CHECK(rc == 0 || rc == -EINVAL);
	if (rc < 0) {
		CHECK(err[0] != '\0' && fz_utf8(err, strlen(err)));
	} else {
		n = strlen(r.sandbox_id);
		CHECK(n >= 1 && n <= RUNTIME_ID_MAX);
		CHECK(!isspace((unsigned char)r.sandbox_id[0]) &&
		    !isspace((unsigned char)r.sandbox_id[n - 1]));
		CHECK(r.generation > 0);
		CHECK(json_is_object(r.envs));
		json_object_foreach(r.envs, k, v) {
			CHECK(*k != '\0' && strlen(k) <= RUNTIME_ENV_KEY_MAX);
			CHECK(!runtime_env_reserved(k) && !strchr(k, '='));
			CHECK(json_is_string(v));
			CHECK(strlen(json_string_value(v)) ==
			    json_string_length(v));
		}
		CHECK(r.lifecycle == NULL || json_is_object(r.lifecycle));
		CHECK(json_object_size(r.attrs) <= RUNTIME_ATTRS_MAX);
		CHECK(json_object_get(r.attrs, "sandbox_id") == NULL);
		CHECK(json_object_get(r.attrs, "generation") == NULL);
		json_array_foreach(r.warnings, i, v)
			CHECK(json_is_string(v));
		runtime_req_reset(&r);
	}
	if ((s = strndup((const char *)data, size)) == NULL)
		abort();
	check_hash(s);
	free(s);
	return 0;
}
