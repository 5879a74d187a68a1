/*
 * t_kp_sign.c -- unit tests for kp_sign.c.
 *
 * The expected signatures come from Python's hmac module, written by
 * tests/unit/data/hmac/make_vectors.py into vectors.json (read relative to
 * the repository root, where the tests run): Jupyter-style keys (empty,
 * short, 64 hex digits, a UUID, longer than a SHA-256 block, non-ASCII)
 * over typical, empty, missing and non-ASCII parts.  Every vector is also
 * checked against damaged signatures: one digit changed, truncated, too
 * long, upper case, and every byte value in one position.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "../../kernelproto/kp_sign.h"
#include "../t.h"

#define VECTORS	"tests/unit/data/hmac/vectors.json"

/* One vector from the data file; pointers borrow from the JSON. */
struct vec {
	const char	*name;
	const unsigned char *key;
	size_t		 keylen;
	struct kp_part	 parts[4];
	size_t		 nparts;
	const char	*sig;
};

static json_t	*load_vectors(void);
static int	 get_vec(json_t *, size_t, struct vec *);
static int	 check(const struct vec *, const char *, size_t);
static int	 hexval(int);

/* The vector file, or NULL (and a failed check) if it cannot be read. */
static json_t *
load_vectors(void)
{
	json_error_t e;
	json_t *v;

	v = json_load_file(VECTORS, JSON_ALLOW_NUL, &e);
	if (v == NULL)
		fprintf(stderr, "  %s:%d: %s\n", VECTORS, e.line, e.text);
	T_OK(v != NULL && json_is_array(v));
	return v;
}

/* Vector i of the array into *v; 0, or -1 if malformed. */
static int
get_vec(json_t *all, size_t i, struct vec *v)
{
	json_t *o = json_array_get(all, i), *k, *parts, *s;

	k = json_object_get(o, "key");
	parts = json_object_get(o, "parts");
	s = json_object_get(o, "sig");
	if (!json_is_string(k) || !json_is_array(parts) ||
	    json_array_size(parts) > 4 || !json_is_string(s))
		return -1;
	v->name = json_string_value(json_object_get(o, "name"));
	v->key = (const unsigned char *)json_string_value(k);
	v->keylen = json_string_length(k);
	v->nparts = json_array_size(parts);
	for (size_t j = 0; j < v->nparts; j++) {
		v->parts[j].p = json_string_value(json_array_get(parts, j));
		v->parts[j].n = json_string_length(json_array_get(parts, j));
	}
	v->sig = json_string_value(s);
	return 0;
}

/* kp_sign_check of the vector's key and parts against sig. */
static int
check(const struct vec *v, const char *sig, size_t len)
{
	return kp_sign_check(v->key, v->keylen, v->parts, v->nparts, sig,
	    len);
}

/* The value of a hex digit, or -1. */
static int
hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* kp_sign gives Python's signature for every vector; check accepts it. */
static void
test_vectors_sign(void)
{
	json_t *all = load_vectors();
	struct vec v;
	char out[KP_SIG_HEXLEN + 1];
	size_t n = json_array_size(all), keyed = 0;

	T_OK(n >= 40);
	for (size_t i = 0; i < n; i++) {
		T_EQ_INT(get_vec(all, i, &v), 0);
		memset(out, 'x', sizeof(out));
		T_EQ_INT(kp_sign(v.key, v.keylen, v.parts, v.nparts, out), 0);
		if (strcmp(out, v.sig) != 0)
			fprintf(stderr, "  vector %zu (%s)\n", i, v.name);
		T_EQ_STR(out, v.sig);
		T_OK(check(&v, v.sig, strlen(v.sig)));
		if (v.keylen > 0) {
			T_EQ_INT(strlen(out), KP_SIG_HEXLEN);
			keyed++;
		}
	}
	T_OK(keyed >= 30);
	json_decref(all);
}

/* Upper- and mixed-case signatures are the same signature. */
static void
test_vectors_case(void)
{
	json_t *all = load_vectors();
	struct vec v;
	char s[KP_SIG_HEXLEN + 1];

	for (size_t i = 0; i < json_array_size(all); i++) {
		if (get_vec(all, i, &v) < 0 || v.keylen == 0)
			continue;
		for (size_t j = 0; j <= KP_SIG_HEXLEN; j++)
			s[j] = (char)toupper((unsigned char)v.sig[j]);
		T_OK(check(&v, s, KP_SIG_HEXLEN));
		for (size_t j = 0; j < KP_SIG_HEXLEN; j += 2)
			s[j] = v.sig[j];
		T_OK(check(&v, s, KP_SIG_HEXLEN));
	}
	json_decref(all);
}

/* One digit wrong anywhere, truncated, extended or empty: rejected. */
static void
test_vectors_damaged(void)
{
	json_t *all = load_vectors();
	struct vec v;
	char s[KP_SIG_HEXLEN + 2];

	for (size_t i = 0; i < json_array_size(all); i++) {
		if (get_vec(all, i, &v) < 0 || v.keylen == 0)
			continue;
		for (size_t j = 0; j < KP_SIG_HEXLEN; j++) {
			memcpy(s, v.sig, KP_SIG_HEXLEN + 1);
			s[j] = s[j] == '0' ? '1' : '0';
			T_OK(!check(&v, s, KP_SIG_HEXLEN));
		}
		memcpy(s, v.sig, KP_SIG_HEXLEN + 1);
		T_OK(!check(&v, s, KP_SIG_HEXLEN - 1));
		T_OK(!check(&v, s, KP_SIG_HEXLEN - 2));
		T_OK(!check(&v, s, 32));
		T_OK(!check(&v, "", 0));
		T_OK(!check(&v, NULL, 0));
		s[KP_SIG_HEXLEN] = '0';
		s[KP_SIG_HEXLEN + 1] = '\0';
		T_OK(!check(&v, s, KP_SIG_HEXLEN + 1));
	}
	json_decref(all);
}

/*
 * Every byte value in the first, a middle and the last position: accepted
 * exactly when it is a hex digit of the right value, in either case.
 * Characters one bit away from hex ('@', '`', 'G', 'g', '/', ':', 0xc1)
 * are the ones a careless decoder lets through.
 */
static void
test_every_byte(void)
{
	static const size_t pos[] = { 0, 1, 31, 62, 63 };
	json_t *all = load_vectors();
	struct vec v;
	char s[KP_SIG_HEXLEN + 1];
	size_t i, tried = 0;

	for (i = 0; i < json_array_size(all); i++)
		if (get_vec(all, i, &v) == 0 && v.keylen > 0)
			break;
	T_OK(i < json_array_size(all));
	for (size_t p = 0; p < sizeof(pos) / sizeof(pos[0]); p++) {
		for (int c = 0; c < 256; c++) {
			int want = hexval(c) == hexval(v.sig[pos[p]]);

			memcpy(s, v.sig, sizeof(s));
			s[pos[p]] = (char)c;
			if (check(&v, s, KP_SIG_HEXLEN) != want)
				fprintf(stderr, "  pos %zu byte %#x\n",
				    pos[p], c);
			T_EQ_INT(check(&v, s, KP_SIG_HEXLEN), want);
			tried++;
		}
	}
	T_EQ_INT(tried, 5 * 256);
	json_decref(all);
}

/* Non-hex of the right length: rejected, even 'g'..'z' and spaces. */
static void
test_non_hex(void)
{
	static const struct kp_part parts[] = { { "{}", 2 }, { "{}", 2 },
	    { "{}", 2 }, { "{}", 2 } };
	const unsigned char *key = (const unsigned char *)"secret";
	char good[KP_SIG_HEXLEN + 1], s[KP_SIG_HEXLEN + 1];

	T_EQ_INT(kp_sign(key, 6, parts, 4, good), 0);
	T_OK(kp_sign_check(key, 6, parts, 4, good, KP_SIG_HEXLEN));
	memset(s, 'g', KP_SIG_HEXLEN);
	s[KP_SIG_HEXLEN] = '\0';
	T_OK(!kp_sign_check(key, 6, parts, 4, s, KP_SIG_HEXLEN));
	memset(s, ' ', KP_SIG_HEXLEN);
	T_OK(!kp_sign_check(key, 6, parts, 4, s, KP_SIG_HEXLEN));
	memset(s, 0, KP_SIG_HEXLEN);
	T_OK(!kp_sign_check(key, 6, parts, 4, s, KP_SIG_HEXLEN));
	/* A 32-byte raw digest where hex is expected: wrong length. */
	T_OK(!kp_sign_check(key, 6, parts, 4, good, 32));
}

/* Empty key: signature "", and only "" passes the check. */
static void
test_empty_key(void)
{
	static const struct kp_part parts[] = { { "{}", 2 }, { "{}", 2 },
	    { "{}", 2 }, { "{\"a\":1}", 7 } };
	char out[KP_SIG_HEXLEN + 1], keyed[KP_SIG_HEXLEN + 1];

	memset(out, 'x', sizeof(out));
	T_EQ_INT(kp_sign((const unsigned char *)"", 0, parts, 4, out), 0);
	T_EQ_STR(out, "");
	T_EQ_INT(kp_sign(NULL, 0, parts, 4, out), 0);
	T_EQ_STR(out, "");
	T_OK(kp_sign_check(NULL, 0, parts, 4, "", 0));
	T_OK(kp_sign_check(NULL, 0, parts, 4, NULL, 0));
	T_EQ_INT(kp_sign((const unsigned char *)"k", 1, parts, 4, keyed), 0);
	T_OK(!kp_sign_check(NULL, 0, parts, 4, keyed, KP_SIG_HEXLEN));
	T_OK(!kp_sign_check(NULL, 0, parts, 4, "0", 1));
}

/* The parts are concatenated: how they are split does not matter. */
static void
test_split_invariant(void)
{
	static const char all[] = "{\"a\":1}{}{}{\"b\":[1,2]}";
	const unsigned char *key = (const unsigned char *)"secret";
	struct kp_part one = { all, sizeof(all) - 1 };
	struct kp_part four[] = { { all, 7 }, { all + 7, 2 }, { all + 9, 2 },
	    { all + 11, sizeof(all) - 12 } };
	struct kp_part holes[] = { { NULL, 0 }, { all, 7 }, { all + 7, 0 },
	    { all + 7, sizeof(all) - 8 } };
	char a[KP_SIG_HEXLEN + 1], b[KP_SIG_HEXLEN + 1];
	char c[KP_SIG_HEXLEN + 1];

	T_EQ_INT(kp_sign(key, 6, &one, 1, a), 0);
	T_EQ_INT(kp_sign(key, 6, four, 4, b), 0);
	T_EQ_INT(kp_sign(key, 6, holes, 4, c), 0);
	T_EQ_STR(a, b);
	T_EQ_STR(a, c);
	/* A different key gives a different signature. */
	T_EQ_INT(kp_sign((const unsigned char *)"secreT", 6, four, 4, b), 0);
	T_OK(strcmp(a, b) != 0);
}

static const struct t_case cases[] = {
	{ "vectors sign", test_vectors_sign },
	{ "vectors case", test_vectors_case },
	{ "vectors damaged", test_vectors_damaged },
	{ "every byte", test_every_byte },
	{ "non hex", test_non_hex },
	{ "empty key", test_empty_key },
	{ "split invariant", test_split_invariant },
};

int
main(void)
{
	return T_RUN(cases);
}
