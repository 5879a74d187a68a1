/*
 * t_kp_wire.c -- unit tests for kp_wire.c.
 *
 * Encoding then decoding gives the message back, identities and buffers
 * included; every reason to drop a message is produced on purpose and
 * seen to win in the documented order (size, delimiter, count, signature,
 * JSON), with *out untouched and a reason in err.  Messages framed the way
 * jupyter_client's Session.serialize frames them, written by
 * tests/unit/data/hmac/make_vectors.py into messages.json (read relative
 * to the repository root), decode to what Python put in, and re-encode to
 * the same bytes where Python used compact separators.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "../../kernelproto/kp_wire.h"
#include "../t.h"

#define MESSAGES	"tests/unit/data/hmac/messages.json"
#define KEY		((const unsigned char *) \
			    "0123456789abcdef0123456789abcdef" \
			    "0123456789abcdef0123456789abcdef")
#define KEYLEN		64
#define BIG		((size_t)1 << 20)
#define MAXF		16

/* A hand-built frame list with its own storage. */
struct fl {
	struct kp_part	 f[MAXF];
	size_t		 n;
	char		 sig[KP_SIG_HEXLEN + 1];
};

static void	 fl_add(struct fl *, const void *, size_t);
static void	 fl_str(struct fl *, const char *);
static void	 fl_msg(struct fl *, const char *, const char *const *,
		    const unsigned char *, size_t);
static int	 decode(const struct fl *, size_t, struct kp_msg **,
		    char *, size_t);
static int	 same_blob(const struct kp_blob *, const void *, size_t);
static unsigned char *unhex(const char *, size_t *);

/* Append one frame (borrowed). */
static void
fl_add(struct fl *l, const void *p, size_t n)
{
	if (l->n == MAXF)
		abort();
	l->f[l->n].p = p;
	l->f[l->n++].n = n;
}

/* Append one NUL-terminated frame. */
static void
fl_str(struct fl *l, const char *s)
{
	fl_add(l, s, strlen(s));
}

/*
 * A whole message: ident (if not NULL), delimiter, the signature of the
 * four parts under key, the parts.
 */
static void
fl_msg(struct fl *l, const char *ident, const char *const *parts,
    const unsigned char *key, size_t keylen)
{
	struct kp_part p[4];

	for (size_t i = 0; i < 4; i++) {
		p[i].p = parts[i];
		p[i].n = strlen(parts[i]);
	}
	if (kp_sign(key, keylen, p, 4, l->sig) < 0)
		abort();
	l->n = 0;
	if (ident != NULL)
		fl_str(l, ident);
	fl_str(l, KP_DELIM);
	fl_str(l, l->sig);
	for (size_t i = 0; i < 4; i++)
		fl_str(l, parts[i]);
}

/* kp_wire_decode with the test key; err always gets a terminator. */
static int
decode(const struct fl *l, size_t max, struct kp_msg **out, char *err,
    size_t errlen)
{
	err[0] = '\0';
	return kp_wire_decode(l->f, l->n, KEY, KEYLEN, max, out, err, errlen);
}

/* Whether blob b holds exactly p[0..n). */
static int
same_blob(const struct kp_blob *b, const void *p, size_t n)
{
	return b->p != NULL && b->n == n && (n == 0 ||
	    memcmp(b->p, p, n) == 0);
}

/* The bytes of hex string s, malloc'd (never NULL); length in *n. */
static unsigned char *
unhex(const char *s, size_t *n)
{
	size_t len = strlen(s) / 2;
	unsigned char *b = malloc(len + 1);
	unsigned v;

	if (b == NULL)
		abort();
	for (size_t i = 0; i < len; i++) {
		if (sscanf(s + 2 * i, "%2x", &v) != 1)
			abort();
		b[i] = (unsigned char)v;
	}
	*n = len;
	return b;
}

static const char *const good[4] = {
	"{\"msg_id\":\"m1\",\"msg_type\":\"execute_request\","
	    "\"session\":\"s\"}",
	"{}", "{}", "{\"code\":\"1+1\"}"
};

/* A message with identities and buffers survives encode then decode. */
static void
test_roundtrip(void)
{
	static const unsigned char id0[] = { 0x00, 0x80, 0x00, 0x41, 0xa7 };
	static const unsigned char buf0[] = { 0, 1, 2, 0xff, 0 };
	json_t *content = json_pack("{s:s, s:b, s:{}}", "code",
	    "print(\"h\u00e9llo \u2713\")\n", "silent", 0, "user_expressions");
	json_t *parent = json_pack("{s:s}", "msg_id", "p1");
	struct kp_msg *m, *back = NULL;
	struct kp_frames fr;
	char err[128], *s;

	m = kp_msg_new("execute_request", "sess", "u", content, parent);
	T_OK(m != NULL);
	if (m == NULL)
		return;
	json_object_set_new(m->metadata, "k", json_integer(-7));
	m->nidents = 2;
	m->idents = calloc(2, sizeof(*m->idents));
	m->nbuffers = 3;
	m->buffers = calloc(3, sizeof(*m->buffers));
	if (m->idents == NULL || m->buffers == NULL)
		abort();
	m->idents[0].p = malloc(sizeof(id0));
	memcpy(m->idents[0].p, id0, sizeof(id0));
	m->idents[0].n = sizeof(id0);
	m->idents[1].p = strdup("second");
	m->idents[1].n = 6;
	m->buffers[0].p = malloc(sizeof(buf0));
	memcpy(m->buffers[0].p, buf0, sizeof(buf0));
	m->buffers[0].n = sizeof(buf0);
	m->buffers[1].p = malloc(1);
	m->buffers[1].n = 0;
	m->buffers[2].p = strdup(KP_DELIM);
	m->buffers[2].n = strlen(KP_DELIM);

	T_EQ_INT(kp_wire_encode(m, KEY, KEYLEN, &fr), 0);
	/* 2 idents, delimiter, signature, 4 parts, 3 buffers. */
	T_EQ_INT(fr.n, 11);
	T_OK(fr.f[0].p == m->idents[0].p && fr.f[0].n == sizeof(id0));
	T_OK(fr.f[2].n == 9 && memcmp(fr.f[2].p, "<IDS|MSG>", 9) == 0);
	T_EQ_INT(fr.f[3].n, KP_SIG_HEXLEN);
	T_EQ_INT(strspn(fr.f[3].p, "0123456789abcdef"), KP_SIG_HEXLEN);
	s = json_dumps(m->header, JSON_COMPACT);
	T_OK(fr.f[4].n == strlen(s) && memcmp(fr.f[4].p, s, fr.f[4].n) == 0);
	free(s);
	T_OK(fr.f[5].n == 15 && memcmp(fr.f[5].p, "{\"msg_id\":\"p1\"}",
	    15) == 0);
	T_OK(fr.f[6].n == 8 && memcmp(fr.f[6].p, "{\"k\":-7}", 8) == 0);
	T_OK(fr.f[8].p == m->buffers[0].p);

	T_EQ_INT(kp_wire_decode(fr.f, fr.n, KEY, KEYLEN, BIG, &back, err,
	    sizeof(err)), 0);
	T_OK(back != NULL);
	if (back != NULL) {
		T_OK(json_equal(back->header, m->header));
		T_OK(json_equal(back->parent, m->parent));
		T_OK(json_equal(back->metadata, m->metadata));
		T_OK(json_equal(back->content, m->content));
		T_EQ_STR(kp_msg_id(back), kp_msg_id(m));
		T_EQ_STR(kp_msg_parent_id(back), "p1");
		T_EQ_INT(back->nidents, 2);
		T_EQ_INT(back->nbuffers, 3);
		for (size_t i = 0; i < 2 && back->nidents == 2; i++) {
			T_OK(same_blob(&back->idents[i], m->idents[i].p,
			    m->idents[i].n));
			T_OK(back->idents[i].p != m->idents[i].p);
		}
		for (size_t i = 0; i < 3 && back->nbuffers == 3; i++)
			T_OK(same_blob(&back->buffers[i], m->buffers[i].p,
			    m->buffers[i].n));
	}
	kp_msg_free(back);
	kp_wire_frames_free(&fr);
	T_OK(fr.f == NULL && fr.n == 0 && fr.json[0] == NULL);
	kp_wire_frames_free(&fr);
	kp_wire_frames_free(NULL);
	kp_msg_free(m);
	json_decref(parent);
}

/* Unkeyed: an empty signature frame, and decode checks nothing. */
static void
test_roundtrip_unkeyed(void)
{
	struct kp_msg *m = kp_msg_new("kernel_info_request", "s", "u", NULL,
	    NULL), *back = NULL;
	struct kp_frames fr;
	char err[128];

	T_OK(m != NULL);
	if (m == NULL)
		return;
	T_EQ_INT(kp_wire_encode(m, NULL, 0, &fr), 0);
	T_EQ_INT(fr.n, 6);
	T_EQ_INT(fr.f[1].n, 0);
	T_EQ_INT(kp_wire_decode(fr.f, fr.n, NULL, 0, BIG, &back, err,
	    sizeof(err)), 0);
	T_OK(back != NULL && json_equal(back->header, m->header));
	T_OK(back != NULL && back->nidents == 0 && back->idents == NULL);
	T_OK(back != NULL && back->nbuffers == 0 && back->buffers == NULL);
	kp_msg_free(back);
	/* A keyed decoder refuses it: empty is not 64 digits. */
	back = NULL;
	T_EQ_INT(kp_wire_decode(fr.f, fr.n, KEY, KEYLEN, BIG, &back, err,
	    sizeof(err)), -KP_WIRE_ESIG);
	T_OK(back == NULL);
	kp_wire_frames_free(&fr);
	kp_msg_free(m);
}

/* The encoded frames stay valid when the struct is copied. */
static void
test_frames_copy(void)
{
	struct kp_msg *m = kp_msg_new("t", "s", "u", NULL, NULL), *back;
	struct kp_frames fr, copy;
	char err[128];

	T_OK(m != NULL);
	if (m == NULL)
		return;
	T_EQ_INT(kp_wire_encode(m, KEY, KEYLEN, &fr), 0);
	copy = fr;
	memset(&fr, 0, sizeof(fr));
	back = NULL;
	T_EQ_INT(kp_wire_decode(copy.f, copy.n, KEY, KEYLEN, BIG, &back, err,
	    sizeof(err)), 0);
	T_EQ_INT(copy.f[1].n, KP_SIG_HEXLEN);
	T_OK(memcmp(copy.f[1].p, copy.sig, KP_SIG_HEXLEN) == 0);
	kp_msg_free(back);
	kp_wire_frames_free(&copy);
	kp_msg_free(m);
}

/* Missing parts go out as {}; non-object parts are refused. */
static void
test_encode_parts(void)
{
	struct kp_msg m;
	struct kp_frames fr, untouched;

	memset(&m, 0, sizeof(m));
	T_EQ_INT(kp_wire_encode(&m, KEY, KEYLEN, &fr), 0);
	T_EQ_INT(fr.n, 6);
	for (size_t i = 2; i < 6 && fr.n == 6; i++)
		T_OK(fr.f[i].n == 2 && memcmp(fr.f[i].p, "{}", 2) == 0);
	kp_wire_frames_free(&fr);

	memset(&untouched, 0x5a, sizeof(untouched));
	fr = untouched;
	m.content = json_array();
	T_EQ_INT(kp_wire_encode(&m, KEY, KEYLEN, &fr), -EINVAL);
	T_OK(memcmp(&fr, &untouched, sizeof(fr)) == 0);
	json_decref(m.content);
	m.content = json_object();
	m.metadata = json_object();
	json_object_set_new_nocheck(m.metadata, "x",
	    json_stringn_nocheck("\xff", 1));
	T_EQ_INT(kp_wire_encode(&m, KEY, KEYLEN, &fr), -EINVAL);
	T_OK(memcmp(&fr, &untouched, sizeof(fr)) == 0);
	json_decref(m.content);
	json_decref(m.metadata);
}

/* No <IDS|MSG>, or only frames that merely look like it. */
static void
test_reject_delim(void)
{
	struct kp_msg *out = (struct kp_msg *)&out;
	struct fl l = { .n = 0 };
	char err[128];

	T_EQ_INT(decode(&l, BIG, &out, err, sizeof(err)), -KP_WIRE_EDELIM);
	T_OK(err[0] != '\0');
	fl_msg(&l, NULL, good, KEY, KEYLEN);
	l.f[0].p = "<IDS|MSG>x";
	l.f[0].n = 10;
	T_EQ_INT(decode(&l, BIG, &out, err, sizeof(err)), -KP_WIRE_EDELIM);
	l.f[0].n = 8;
	T_EQ_INT(decode(&l, BIG, &out, err, sizeof(err)), -KP_WIRE_EDELIM);
	l.f[0].p = "<ids|msg>";
	l.f[0].n = 9;
	T_EQ_INT(decode(&l, BIG, &out, err, sizeof(err)), -KP_WIRE_EDELIM);
	T_EQ_STR(err, "no <IDS|MSG> frame");
	T_OK(out == (struct kp_msg *)&out);
}

/* Fewer than five frames after the delimiter. */
static void
test_reject_short(void)
{
	struct kp_msg *out = (struct kp_msg *)&out;
	struct fl l;
	char err[128];

	fl_msg(&l, "id", good, KEY, KEYLEN);
	for (size_t drop = 1; drop <= 5; drop++) {
		struct fl s = l;

		s.n -= drop;
		T_EQ_INT(decode(&s, BIG, &out, err, sizeof(err)),
		    -KP_WIRE_ESHORT);
	}
	l.n -= 1;
	decode(&l, BIG, &out, err, sizeof(err));
	T_EQ_STR(err, "4 frames after <IDS|MSG>, need 5");
	T_OK(out == (struct kp_msg *)&out);
}

/* max_frame 100: a 101-byte frame anywhere loses, first of all. */
static void
test_reject_big(void)
{
	struct kp_msg *out = NULL;
	char big[102], err[128];
	const char *parts[4] = { good[0], good[1], good[2], big };
	struct fl l;

	memset(big, 'x', sizeof(big));
	memcpy(big, "{\"a\":\"", 6);
	memcpy(big + 98, "\"}", 3);		/* 100 bytes of JSON */
	T_EQ_INT(strlen(big), 100);
	fl_msg(&l, NULL, parts, KEY, KEYLEN);
	T_EQ_INT(decode(&l, 100, &out, err, sizeof(err)), 0);
	kp_msg_free(out);
	out = (struct kp_msg *)&out;
	T_EQ_INT(decode(&l, 99, &out, err, sizeof(err)), -KP_WIRE_EBIG);
	T_EQ_STR(err, "frame 5 is 100 bytes, limit 99");

	memcpy(big + 98, "x\"}", 4);		/* now 101 */
	fl_msg(&l, NULL, parts, KEY, KEYLEN);
	T_EQ_INT(decode(&l, 100, &out, err, sizeof(err)), -KP_WIRE_EBIG);
	T_EQ_STR(err, "frame 5 is 101 bytes, limit 100");
	/* An oversized identity, buffer, or a frame with no delimiter. */
	fl_msg(&l, big, good, KEY, KEYLEN);
	T_EQ_INT(decode(&l, 100, &out, err, sizeof(err)), -KP_WIRE_EBIG);
	fl_msg(&l, NULL, good, KEY, KEYLEN);
	fl_str(&l, big);
	T_EQ_INT(decode(&l, 100, &out, err, sizeof(err)), -KP_WIRE_EBIG);
	l.n = 0;
	fl_str(&l, "x");
	fl_str(&l, big);
	T_EQ_INT(decode(&l, 100, &out, err, sizeof(err)), -KP_WIRE_EBIG);
	/* Even a bad signature and bad JSON lose to size. */
	l.n = 0;
	fl_str(&l, KP_DELIM);
	fl_str(&l, "nothex");
	fl_str(&l, "[");
	fl_str(&l, big);
	T_EQ_INT(decode(&l, 100, &out, err, sizeof(err)), -KP_WIRE_EBIG);
	T_OK(out == (struct kp_msg *)&out);
}

/* Wrong, short, long, empty or non-hex signatures; case is ignored. */
static void
test_reject_sig(void)
{
	struct kp_msg *out = (struct kp_msg *)&out;
	char err[128], sig[KP_SIG_HEXLEN + 2];
	struct fl l;

	fl_msg(&l, NULL, good, KEY, KEYLEN);
	memcpy(sig, l.sig, sizeof(l.sig));
	l.f[1].p = sig;

	sig[10] = sig[10] == 'a' ? 'b' : 'a';
	T_EQ_INT(decode(&l, BIG, &out, err, sizeof(err)), -KP_WIRE_ESIG);
	T_EQ_STR(err, "signature mismatch");
	memcpy(sig, l.sig, sizeof(l.sig));
	sig[63] = 'g';
	T_EQ_INT(decode(&l, BIG, &out, err, sizeof(err)), -KP_WIRE_ESIG);
	memcpy(sig, l.sig, sizeof(l.sig));
	l.f[1].n = 63;
	T_EQ_INT(decode(&l, BIG, &out, err, sizeof(err)), -KP_WIRE_ESIG);
	T_EQ_STR(err, "signature is 63 bytes, need 64");
	sig[64] = '0';
	l.f[1].n = 65;
	T_EQ_INT(decode(&l, BIG, &out, err, sizeof(err)), -KP_WIRE_ESIG);
	l.f[1].n = 0;
	T_EQ_INT(decode(&l, BIG, &out, err, sizeof(err)), -KP_WIRE_ESIG);
	/* Signed with another key. */
	fl_msg(&l, NULL, good, (const unsigned char *)"other", 5);
	T_EQ_INT(decode(&l, BIG, &out, err, sizeof(err)), -KP_WIRE_ESIG);
	/* A part changed after signing. */
	fl_msg(&l, NULL, good, KEY, KEYLEN);
	l.f[5].p = "{\"code\":\"1+2\"}";
	T_EQ_INT(decode(&l, BIG, &out, err, sizeof(err)), -KP_WIRE_ESIG);
	T_OK(out == (struct kp_msg *)&out);

	/* Upper case is the same signature. */
	fl_msg(&l, NULL, good, KEY, KEYLEN);
	for (size_t i = 0; i < KP_SIG_HEXLEN; i++)
		if (l.sig[i] >= 'a')
			l.sig[i] = (char)(l.sig[i] - 'a' + 'A');
	out = NULL;
	T_EQ_INT(decode(&l, BIG, &out, err, sizeof(err)), 0);
	kp_msg_free(out);
}

/* Signature before JSON: bad JSON under a bad signature is ESIG. */
static void
test_reject_order(void)
{
	static const char *const bad[4] = { "[", "{}", "{}", "{}" };
	struct kp_msg *out = (struct kp_msg *)&out;
	char err[128];
	struct fl l;

	fl_msg(&l, NULL, bad, KEY, KEYLEN);
	T_EQ_INT(decode(&l, BIG, &out, err, sizeof(err)), -KP_WIRE_EJSON);
	l.sig[0] = l.sig[0] == '0' ? '1' : '0';
	T_EQ_INT(decode(&l, BIG, &out, err, sizeof(err)), -KP_WIRE_ESIG);
	/* Short beats signature: nothing to check a signature over. */
	l.n--;
	T_EQ_INT(decode(&l, BIG, &out, err, sizeof(err)), -KP_WIRE_ESHORT);
	T_OK(out == (struct kp_msg *)&out);
}

/* Each part must parse, and be an object. */
static void
test_reject_json(void)
{
	static const struct {
		const char	*text;
		const char	*err;	/* prefix of the reason */
	} bad[] = {
		{ "{", NULL },
		{ "{\"a\":}", NULL },
		{ "{} {}", NULL },
		{ "[]", "not an object" },
		{ "[{\"msg_id\":\"x\"}]", "not an object" },
		{ "\"str\"", NULL },
		{ "42", NULL },
		{ "null", NULL },
		{ "", "empty" },
		{ "{\"a\":NaN}", NULL },
		{ "{\"a\":\"\xff\"", NULL },	/* invalid and unclosed */
		{ "{\"a\":99999999999999999999999}", NULL },
	};
	struct kp_msg *out = (struct kp_msg *)&out;
	char err[128], want[64];
	const char *parts[4];
	struct fl l;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		for (size_t p = 0; p < 4; p++) {
			memcpy(parts, good, sizeof(parts));
			parts[p] = bad[i].text;
			fl_msg(&l, NULL, parts, KEY, KEYLEN);
			T_EQ_INT(decode(&l, BIG, &out, err, sizeof(err)),
			    -KP_WIRE_EJSON);
			snprintf(want, sizeof(want), "%s: ", p == 0 ?
			    "header" : p == 1 ? "parent_header" : p == 2 ?
			    "metadata" : "content");
			T_OK(strncmp(err, want, strlen(want)) == 0);
			if (bad[i].err != NULL)
				T_EQ_STR(err + strlen(want), bad[i].err);
			else
				T_OK(strlen(err) > strlen(want));
		}
	}
	T_OK(out == (struct kp_msg *)&out);
}

/*
 * Text that is not valid UTF-8, or holds lone surrogate escapes, is kept
 * with U+FFFD in place of each bad part; proper pairs stay as they are.
 */
static void
test_lenient_text(void)
{
	static const struct {
		const char	*json;
		const char	*want;	/* the value of "t" */
	} cases[] = {
		{ "{\"t\":\"a\xff" "b\"}", "a\xef\xbf\xbd" "b" },
		{ "{\"t\":\"\xc3\"}", "\xef\xbf\xbd" },
		{ "{\"t\":\"x\\udcff\"}", "x\xef\xbf\xbd" },
		{ "{\"t\":\"\\ud83d\"}", "\xef\xbf\xbd" },
		{ "{\"t\":\"\\ud83d\\ude00\"}", "\xf0\x9f\x98\x80" },
		{ "{\"t\":\"\\\\udcff\"}", "\\udcff" },	/* not an escape */
	};
	struct kp_msg *out;
	char err[128];
	const char *parts[4];
	struct fl l;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		memcpy(parts, good, sizeof(parts));
		parts[3] = cases[i].json;
		fl_msg(&l, NULL, parts, KEY, KEYLEN);
		out = NULL;
		T_EQ_INT(decode(&l, BIG, &out, err, sizeof(err)), 0);
		if (out == NULL)
			continue;
		T_EQ_STR(json_string_value(json_object_get(out->content, "t")),
		    cases[i].want);
		kp_msg_free(out);
	}
}

/*
 * A stream message's text in pieces: whatever the piece size, the pieces
 * are whole characters and escapes, and together they are the text as
 * jansson decodes it (or, where jansson refuses, as the lenient rule has
 * it: U+FFFD for each bad part).
 */
static void
test_text_pieces(void)
{
	static const struct {
		const char	*body;	/* between the quotes */
		const char	*want;
	} cases[] = {
		{ "plain ascii", "plain ascii" },
		{ "tab\\tnl\\n\\\"q\\\\b\\/s\\b\\f\\r",
		    "tab\tnl\n\"q\\b/s\b\f\r" },
		{ "caf\xc3\xa9 \\u00e9 \\u20ac \\ud83d\\ude00 \xf0\x9f\x98\x80",
		    "caf\xc3\xa9 \xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 "
		    "\xf0\x9f\x98\x80" },
		{ "a\xff" "b\xc3", "a\xef\xbf\xbd" "b\xef\xbf\xbd" },
		{ "x\\udcff\\ud83dy", "x\xef\xbf\xbd\xef\xbf\xbdy" },
		{ "\\\\udcff", "\\udcff" },		/* not an escape */
	};
	char whole[256];
	size_t n, off, got;
	json_t *t;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		n = strlen(cases[i].body);
		for (size_t max = 1; max <= n + 1; max++) {
			off = 0;
			got = 0;
			while ((t = kp_wire_text_piece(cases[i].body, &off, n,
			    max)) != NULL) {
				T_OK(json_string_length(t) > 0 || n == 0);
				T_OK(got + json_string_length(t) <
				    sizeof(whole));
				memcpy(whole + got, json_string_value(t),
				    json_string_length(t));
				got += json_string_length(t);
				json_decref(t);
			}
			T_EQ_INT(off, n);
			T_EQ_INT(got, strlen(cases[i].want));
			T_OK(got < sizeof(whole) &&
			    memcmp(whole, cases[i].want, got) == 0);
		}
	}
	/* A NUL, byte for byte (strings of jansson may hold one). */
	off = 0;
	t = kp_wire_text_piece("nul\\u0000end", &off, 12, 100);
	T_OK(t != NULL && json_string_length(t) == 7 &&
	    memcmp(json_string_value(t), "nul\0end", 7) == 0);
	json_decref(t);
}

/* err may be NULL or tiny; a long reason is cut, still terminated. */
static void
test_err_buffer(void)
{
	struct kp_msg *out = (struct kp_msg *)&out;
	struct fl l = { .n = 0 };
	char err[5];

	fl_str(&l, "x");
	T_EQ_INT(kp_wire_decode(l.f, l.n, KEY, KEYLEN, BIG, &out, NULL, 0),
	    -KP_WIRE_EDELIM);
	memset(err, 'z', sizeof(err));
	T_EQ_INT(kp_wire_decode(l.f, l.n, KEY, KEYLEN, BIG, &out, err, 0),
	    -KP_WIRE_EDELIM);
	T_EQ_INT(err[0], 'z');
	T_EQ_INT(kp_wire_decode(l.f, l.n, KEY, KEYLEN, BIG, &out, err,
	    sizeof(err)), -KP_WIRE_EDELIM);
	T_EQ_STR(err, "no <");
	T_EQ_INT(kp_wire_decode(NULL, 0, KEY, KEYLEN, BIG, &out, err,
	    sizeof(err)), -KP_WIRE_EDELIM);
	T_OK(out == (struct kp_msg *)&out);
}

/*
 * Identities are every frame before the first delimiter, buffers every
 * frame after content, each copied; parent_header may be {}.
 */
static void
test_idents_buffers(void)
{
	static const char bin[] = { 'a', 0, 'b', 0 };
	struct kp_msg *out = NULL;
	char err[128], mut[8] = "buffer0";
	struct fl l;

	fl_msg(&l, NULL, good, KEY, KEYLEN);
	/* Prepend three identities: one binary, one empty, one long. */
	for (size_t i = l.n; i-- > 0;)
		l.f[i + 3] = l.f[i];
	l.f[0].p = bin;
	l.f[0].n = sizeof(bin);
	l.f[1].p = "";
	l.f[1].n = 0;
	l.f[2].p = "kernel.0123.status";
	l.f[2].n = 18;
	l.n += 3;
	fl_add(&l, mut, 7);
	fl_add(&l, NULL, 0);
	fl_str(&l, KP_DELIM);
	T_EQ_INT(decode(&l, BIG, &out, err, sizeof(err)), 0);
	T_OK(out != NULL);
	if (out == NULL)
		return;
	mut[0] = 'X';			/* decode copied, not borrowed */
	T_EQ_INT(out->nidents, 3);
	T_EQ_INT(out->nbuffers, 3);
	if (out->nidents == 3 && out->nbuffers == 3) {
		T_OK(same_blob(&out->idents[0], bin, sizeof(bin)));
		T_OK(same_blob(&out->idents[1], "", 0));
		T_OK(same_blob(&out->idents[2], "kernel.0123.status", 18));
		T_OK(same_blob(&out->buffers[0], "buffer0", 7));
		T_OK(same_blob(&out->buffers[1], "", 0));
		T_OK(same_blob(&out->buffers[2], KP_DELIM, 9));
	}
	T_EQ_STR(kp_msg_type(out), "execute_request");
	T_EQ_STR(kp_msg_parent_id(out), "");
	T_OK(json_is_object(out->parent) && json_object_size(out->parent)
	    == 0);
	kp_msg_free(out);
}

/* "\u0000" inside a string is JSON; the message is kept, NUL and all. */
static void
test_nul_in_string(void)
{
	static const char *const parts[4] = { "{}", "{}", "{}",
	    "{\"text\":\"a\\u0000b\"}" };
	struct kp_msg *out = NULL;
	struct kp_frames fr;
	json_t *t;
	char err[128];
	struct fl l;

	fl_msg(&l, NULL, parts, KEY, KEYLEN);
	T_EQ_INT(decode(&l, BIG, &out, err, sizeof(err)), 0);
	if (out == NULL)
		return;
	t = json_object_get(out->content, "text");
	T_OK(json_string_length(t) == 3 &&
	    memcmp(json_string_value(t), "a\0b", 3) == 0);
	T_EQ_INT(kp_wire_encode(out, KEY, KEYLEN, &fr), 0);
	T_OK(fr.f[5].n == strlen(parts[3]) &&
	    memcmp(fr.f[5].p, parts[3], fr.f[5].n) == 0);
	T_EQ_STR(fr.sig, l.sig);
	kp_wire_frames_free(&fr);
	kp_msg_free(out);
}

/*
 * Messages as jupyter_client frames them: decode to what Python put in;
 * with a wrong key, refused; re-encoded byte for byte where Python used
 * compact separators.
 */
static void
test_python_messages(void)
{
	json_error_t e;
	json_t *all, *o, *ex, *frames;
	struct kp_part f[MAXF];
	unsigned char *bytes[MAXF];
	struct kp_msg *m;
	struct kp_frames fr;
	const unsigned char *key;
	size_t keylen, n, tested = 0;
	char err[256];
	int rc;

	all = json_load_file(MESSAGES, 0, &e);
	if (all == NULL)
		fprintf(stderr, "  %s:%d: %s\n", MESSAGES, e.line, e.text);
	T_OK(all != NULL && json_is_array(all));
	for (size_t i = 0; i < json_array_size(all); i++) {
		o = json_array_get(all, i);
		ex = json_object_get(o, "expect");
		frames = json_object_get(o, "frames");
		key = (const unsigned char *)json_string_value(
		    json_object_get(o, "key"));
		keylen = json_string_length(json_object_get(o, "key"));
		n = json_array_size(frames);
		T_OK(key != NULL && ex != NULL && n >= 6 && n <= MAXF);
		if (key == NULL || ex == NULL || n < 6 || n > MAXF)
			continue;
		for (size_t j = 0; j < n; j++) {
			bytes[j] = unhex(json_string_value(
			    json_array_get(frames, j)), &f[j].n);
			f[j].p = bytes[j];
		}
		m = NULL;
		rc = kp_wire_decode(f, n, key, keylen, 1 << 16, &m, err,
		    sizeof(err));
		if (rc != 0)
			fprintf(stderr, "  %s: %s\n", json_string_value(
			    json_object_get(o, "name")), err);
		T_EQ_INT(rc, 0);
		if (m != NULL) {
			T_EQ_STR(kp_msg_id(m), json_string_value(
			    json_object_get(ex, "msg_id")));
			T_EQ_STR(kp_msg_type(m), json_string_value(
			    json_object_get(ex, "msg_type")));
			T_EQ_STR(kp_msg_session(m), json_string_value(
			    json_object_get(ex, "session")));
			T_EQ_STR(kp_msg_parent_id(m), json_string_value(
			    json_object_get(ex, "parent_msg_id")));
			T_OK(json_equal(m->parent,
			    json_object_get(ex, "parent")));
			T_OK(json_equal(m->content,
			    json_object_get(ex, "content")));
			T_EQ_INT(m->nidents, json_integer_value(
			    json_object_get(ex, "nidents")));
			T_EQ_INT(m->nbuffers, json_integer_value(
			    json_object_get(ex, "nbuffers")));
			for (size_t j = 0; j < m->nidents; j++)
				T_OK(same_blob(&m->idents[j], f[j].p,
				    f[j].n));
			for (size_t j = 0; j < m->nbuffers; j++)
				T_OK(same_blob(&m->buffers[j],
				    f[n - m->nbuffers + j].p,
				    f[n - m->nbuffers + j].n));
			T_EQ_INT(kp_wire_encode(m, key, keylen, &fr), 0);
			T_EQ_INT(fr.n, n);
			if (json_is_true(json_object_get(ex,
			    "reencode_identical")) && fr.n == n) {
				for (size_t j = 0; j < n; j++)
					T_OK(fr.f[j].n == f[j].n &&
					    (f[j].n == 0 || memcmp(fr.f[j].p,
					    f[j].p, f[j].n) == 0));
			}
			kp_wire_frames_free(&fr);
			kp_msg_free(m);
		}
		/* A decoder holding another key drops keyed messages. */
		m = NULL;
		if (keylen > 0) {
			rc = kp_wire_decode(f, n, (const unsigned char *)"x", 1,
			    1 << 16, &m, err, sizeof(err));
			T_EQ_INT(rc, -KP_WIRE_ESIG);
			T_OK(m == NULL);
		}
		for (size_t j = 0; j < n; j++)
			free(bytes[j]);
		tested++;
	}
	T_OK(tested >= 5);
	json_decref(all);
}

static const struct t_case cases[] = {
	{ "roundtrip", test_roundtrip },
	{ "roundtrip unkeyed", test_roundtrip_unkeyed },
	{ "frames copy", test_frames_copy },
	{ "encode parts", test_encode_parts },
	{ "reject no delimiter", test_reject_delim },
	{ "reject short", test_reject_short },
	{ "reject oversized frame", test_reject_big },
	{ "reject signature", test_reject_sig },
	{ "reject order", test_reject_order },
	{ "reject json", test_reject_json },
	{ "lenient text", test_lenient_text },
	{ "text pieces", test_text_pieces },
	{ "err buffer", test_err_buffer },
	{ "identities and buffers", test_idents_buffers },
	{ "nul in string", test_nul_in_string },
	{ "python messages", test_python_messages },
};

int
main(void)
{
	return T_RUN(cases);
}
