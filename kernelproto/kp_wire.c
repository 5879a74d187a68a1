/*
 * kp_wire.c -- Jupyter multipart frames to struct kp_msg and back.
 *
 * Decoding is the untrusted direction: frames come off a kernel's sockets,
 * so the cheap checks run first -- every frame's size, the delimiter, the
 * frame count, the signature -- and JSON is parsed only for a message that
 * has shown it knows the key.  Encoding writes the four parts as compact
 * JSON and signs them.  This file holds no sockets (kp_chan.c), does no
 * HMAC arithmetic (kp_sign.c) and has no opinion on what a message means.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../util/must.h"
#include "../util/utf8.h"
#include "kp_wire.h"

#define DELIM_LEN	(sizeof(KP_DELIM) - 1)
/* header, parent_header, metadata, content */
#define NPARTS		4

static const char *const part_names[NPARTS] = {
	"header", "parent_header", "metadata", "content"
};

static int		 fail(char *, size_t, int, const char *, ...)
			    __attribute__((format(printf, 4, 5)));
static struct kp_blob	*copy_blobs(const struct kp_part *, size_t);
static struct kp_msg	*msg_new(const struct kp_part *, size_t, json_t **,
			    const struct kp_part *, size_t);
static int		 split(const struct kp_part *, size_t, size_t *, char *,
			    size_t);
static int		 check_sig(const unsigned char *, size_t,
			    const struct kp_part *, const struct kp_part *, char *,
			    size_t);
static size_t		 skip_ws(const unsigned char *, size_t, size_t);
static size_t		 str_end(const unsigned char *, size_t, size_t);
static size_t		 value_end(const unsigned char *, size_t, size_t);
static size_t		 put_utf8(char *, long);
static size_t		 unescape(const unsigned char *, size_t, size_t, char *,
			    size_t *);

/* Write the reason into err (when there is room) and return -code. */
static int
fail(char *err, size_t errlen, int code, const char *fmt, ...)
{
	va_list ap;

	if (err != NULL && errlen > 0) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return -code;
}

/* Owned copies of n frames; NULL when n is 0.  No blob's p is NULL. */
static struct kp_blob *
copy_blobs(const struct kp_part *f, size_t n)
{
	struct kp_blob *b;

	if (n == 0)
		return NULL;
	if ((b = calloc(n, sizeof(*b))) == NULL)
		abort();	/* OOM is fatal: see util/must.h */
	for (size_t i = 0; i < n; i++) {
		if ((b[i].p = malloc(f[i].n > 0 ? f[i].n : 1)) == NULL)
			abort();
		if (f[i].n > 0)
			memcpy(b[i].p, f[i].p, f[i].n);
		b[i].n = f[i].n;
	}
	return b;
}

/*
 * A message of the d identities in frames, the NPARTS JSON parts in j
 * (taken over) and copies of the nb buffers.
 */
static struct kp_msg *
msg_new(const struct kp_part *frames, size_t d, json_t **j,
    const struct kp_part *bufs, size_t nb)
{
	struct kp_msg *m;

	if ((m = calloc(1, sizeof(*m))) == NULL)
		abort();
	m->idents = copy_blobs(frames, d);
	m->nidents = d;
	m->header = j[0];
	m->parent = j[1];
	m->metadata = j[2];
	m->content = j[3];
	m->buffers = copy_blobs(bufs, nb);
	m->nbuffers = nb;
	return m;
}

/* The value of the "\uXXXX" escape at s, or -1 if there is none. */
static long
uescape(const unsigned char *s, size_t n)
{
	long v = 0;

	if (n < 6 || s[0] != '\\' || s[1] != 'u')
		return -1;
	for (int i = 2; i < 6; i++) {
		int c = s[i];

		v <<= 4;
		if (c >= '0' && c <= '9')
			v |= c - '0';
		else if (c >= 'a' && c <= 'f')
			v |= c - 'a' + 10;
		else if (c >= 'A' && c <= 'F')
			v |= c - 'A' + 10;
		else
			return -1;
	}
	return v;
}

/*
 * Parse one JSON part.  Kernels relay whatever bytes user code printed,
 * and some send text that is not valid UTF-8 or that holds lone surrogate
 * escapes (Python's surrogateescape), both of which jansson refuses.
 * Output must not be lost for that: on failure, parse once more a copy in
 * which each invalid byte and each lone surrogate escape is U+FFFD.
 */
json_t *
kp_wire_json_load(const void *p, size_t n, size_t flags, json_error_t *e)
{
	const unsigned char *s = p;
	unsigned char *t;
	size_t i = 0, k = 0, len;
	long hi, lo;
	json_t *j;

	flags |= JSON_ALLOW_NUL;
	if ((j = json_loadb(p, n, flags, e)) != NULL)
		return j;
	/* An invalid byte grows to 3; an escape stays 6 bytes. */
	if (n > SIZE_MAX / 3 || (t = malloc(3 * n + 1)) == NULL)
		abort();
	while (i < n) {
		hi = uescape(s + i, n - i);
		if (hi >= 0xd800 && hi <= 0xdbff &&
		    (lo = uescape(s + i + 6, n - i - 6)) >= 0xdc00 &&
		    lo <= 0xdfff) {
			memcpy(t + k, s + i, 12);	/* a proper pair */
			k += 12;
			i += 12;
		} else if (hi >= 0xd800 && hi <= 0xdfff) {
			memcpy(t + k, "\\ufffd", 6);
			k += 6;
			i += 6;
		} else if (s[i] == '\\' && i + 1 < n) {
			t[k++] = s[i++];	/* any other escape, whole */
			t[k++] = s[i++];
		} else if ((len = utf8_len(s + i, n - i)) == 0) {
			memcpy(t + k, "\xef\xbf\xbd", 3);
			k += 3;
			i++;
		} else {
			memcpy(t + k, s + i, len);
			k += len;
			i += len;
		}
	}
	j = json_loadb((const char *)t, k, flags, e);
	free(t);
	return j;
}

/*
 * The first frame that is exactly the delimiter, into *d, with a
 * signature and the four parts at least after it.  0 or -KP_WIRE_E*.
 */
static int
split(const struct kp_part *frames, size_t n, size_t *d, char *err,
    size_t errlen)
{
	size_t i, after;

	for (i = 0; i < n; i++)
		if (frames[i].n == DELIM_LEN &&
		    memcmp(frames[i].p, KP_DELIM, DELIM_LEN) == 0)
			break;
	if (i == n)
		return fail(err, errlen, KP_WIRE_EDELIM, "no <IDS|MSG> frame");
	after = n - i - 1;
	if (after < 1 + NPARTS)
		return fail(err, errlen, KP_WIRE_ESHORT,
		    "%zu frames after <IDS|MSG>, need 5", after);
	*d = i;
	return 0;
}

/*
 * The signature of the four parts.  Without a key nothing is checked,
 * as jupyter_client does when its Session has no key.  0 or
 * -KP_WIRE_ESIG.
 */
static int
check_sig(const unsigned char *key, size_t keylen, const struct kp_part *sig,
    const struct kp_part *parts, char *err, size_t errlen)
{
	if (keylen == 0)
		return 0;
	if (sig->n != KP_SIG_HEXLEN)
		return fail(err, errlen, KP_WIRE_ESIG,
		    "signature is %zu bytes, need %d", sig->n, KP_SIG_HEXLEN);
	if (!kp_sign_check(key, keylen, parts, NPARTS, sig->p, sig->n))
		return fail(err, errlen, KP_WIRE_ESIG, "signature mismatch");
	return 0;
}

/* Check, verify and parse n frames into a new message (see kp_wire.h). */
int
kp_wire_decode(const struct kp_part *frames, size_t n,
    const unsigned char *key, size_t keylen, size_t max_frame,
    struct kp_msg **out, char *err, size_t errlen)
{
	const struct kp_part *sig, *parts;
	json_t *j[NPARTS] = { NULL };
	json_error_t e;
	size_t d, after;
	int rc = 0;

	/* 1. Sizes before anything else reads a frame. */
	for (size_t i = 0; i < n; i++)
		if (frames[i].n > max_frame)
			return fail(err, errlen, KP_WIRE_EBIG,
			    "frame %zu is %zu bytes, limit %zu", i,
			    frames[i].n, max_frame);

	/* 2-3. The delimiter, and a signature and four parts after it. */
	if ((rc = split(frames, n, &d, err, errlen)) < 0)
		return rc;
	after = n - d - 1;
	sig = &frames[d + 1];
	parts = &frames[d + 2];

	/* 4. The signature. */
	if ((rc = check_sig(key, keylen, sig, parts, err, errlen)) < 0)
		return rc;

	/* 5. Only now the JSON, each part an object. */
	for (size_t i = 0; i < NPARTS; i++) {
		if (parts[i].n == 0) {
			rc = fail(err, errlen, KP_WIRE_EJSON, "%s: empty",
			    part_names[i]);
			goto out;
		}
		/* NUL is legal JSON ("\u0000") and kernels print it. */
		j[i] = kp_wire_json_load(parts[i].p, parts[i].n, 0, &e);
		if (j[i] == NULL) {
			rc = fail(err, errlen, KP_WIRE_EJSON, "%s: %s",
			    part_names[i], e.text);
			goto out;
		}
		if (!json_is_object(j[i])) {
			rc = fail(err, errlen, KP_WIRE_EJSON,
			    "%s: not an object", part_names[i]);
			goto out;
		}
	}

	/* 6. Keep copies: the caller's frames die with its zmq messages. */
	*out = msg_new(frames, d, j, parts + NPARTS, after - 1 - NPARTS);
	return 0;
out:
	for (size_t i = 0; i < NPARTS; i++)
		json_decref(j[i]);
	return rc;
}

/* The first index at or after i that is not JSON whitespace. */
static size_t
skip_ws(const unsigned char *s, size_t n, size_t i)
{
	while (i < n && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' ||
	    s[i] == '\r'))
		i++;
	return i;
}

/* Past the closing quote of the string opening at s[i], or 0. */
static size_t
str_end(const unsigned char *s, size_t n, size_t i)
{
	for (i++; i < n; i++) {
		if (s[i] == '\\')
			i++;
		else if (s[i] == '"')
			return i + 1;
	}
	return 0;
}

/* Past the end of the JSON value starting at s[i], or 0. */
static size_t
value_end(const unsigned char *s, size_t n, size_t i)
{
	size_t depth = 0, j;

	if (i >= n)
		return 0;
	if (s[i] == '"')
		return str_end(s, n, i);
	if (s[i] != '{' && s[i] != '[') {
		for (j = i; j < n && strchr(",}] \t\r\n", s[j]) == NULL; j++)
			;
		return j > i ? j : 0;
	}
	for (j = i; j < n; j++) {
		if (s[j] == '"') {
			if ((j = str_end(s, n, j)) == 0)
				return 0;
			j--;
		} else if (s[j] == '{' || s[j] == '[') {
			depth++;
		} else if ((s[j] == '}' || s[j] == ']') && --depth == 0) {
			return j + 1;
		}
	}
	return 0;
}

/*
 * Where the "name" and "text" strings of a stream message's content lie,
 * found by scanning the object's top level: text between *toff and *tend
 * (escaped, without its quotes).  0, or -1 when the content is no object
 * holding a string "text".
 */
static int
find_text(const unsigned char *s, size_t n, size_t *noff, size_t *nend,
    size_t *toff, size_t *tend)
{
	size_t i = skip_ws(s, n, 0), ke, vs, ve;
	bool have = false, is_str;

	*noff = *nend = 0;
	if (i >= n || s[i++] != '{')
		return -1;
	for (;;) {
		i = skip_ws(s, n, i);
		if (i < n && s[i] == '}')
			break;
		if (i >= n || s[i] != '"' || (ke = str_end(s, n, i)) == 0)
			return -1;
		vs = skip_ws(s, n, ke);
		if (vs >= n || s[vs] != ':')
			return -1;
		vs = skip_ws(s, n, vs + 1);
		if ((ve = value_end(s, n, vs)) == 0)
			return -1;
		is_str = s[vs] == '"';
		if (is_str && ke - i == 6 && memcmp(s + i, "\"text\"", 6) == 0) {
			*toff = vs + 1;
			*tend = ve - 1;
			have = true;
		} else if (is_str && ke - i == 6 && memcmp(s + i, "\"name\"",
		    6) == 0) {
			*noff = vs;
			*nend = ve;
		}
		i = skip_ws(s, n, ve);
		if (i < n && s[i] == ',') {
			i++;
			continue;
		}
		if (i < n && s[i] == '}')
			break;
		return -1;
	}
	return have ? 0 : -1;
}

/* Decode a message with an oversized frame (see kp_wire.h). */
int
kp_wire_decode_big(const struct kp_part *frames, size_t n,
    const unsigned char *key, size_t keylen, size_t max_frame,
    struct kp_msg **out, size_t *toff, size_t *tend, char *err,
    size_t errlen)
{
	const struct kp_part *sig, *parts, *c;
	json_t *j[NPARTS] = { NULL }, *name;
	json_error_t e;
	struct kp_msg *m;
	size_t d, after, noff, nend, dropped = 0, nb;
	int rc = 0;

	*toff = *tend = 0;
	/* 1. The delimiter: comparing frame sizes reads no large frame. */
	if ((rc = split(frames, n, &d, err, errlen)) < 0)
		return rc;
	after = n - d - 1;
	sig = &frames[d + 1];
	parts = &frames[d + 2];
	c = &parts[NPARTS - 1];

	/* 2. Only content and buffers may be large. */
	for (size_t i = 0; i < d + 2 + NPARTS - 1; i++)
		if (frames[i].n > max_frame)
			return fail(err, errlen, KP_WIRE_EBIG,
			    "frame %zu is %zu bytes, limit %zu", i,
			    frames[i].n, max_frame);

	/* 3. The signature, over every byte however many. */
	if ((rc = check_sig(key, keylen, sig, parts, err, errlen)) < 0)
		return rc;

	/* 4. The small parts as usual. */
	for (size_t i = 0; i < NPARTS - 1; i++) {
		j[i] = parts[i].n > 0 ? kp_wire_json_load(parts[i].p, parts[i].n,
		    0, &e) : NULL;
		if (j[i] == NULL || !json_is_object(j[i])) {
			rc = fail(err, errlen, KP_WIRE_EJSON, "%s: not an "
			    "object", part_names[i]);
			goto out;
		}
	}

	/*
	 * 5. Content: a stream message's text is found, not parsed, and
	 * taken in pieces later; any other content over the cap is left out
	 * and counted, as are buffers over it.
	 */
	j[3] = json_object();
	if (strcmp(json_string_value(json_object_get(j[0], "msg_type")) ?:
	    "", "stream") == 0 && find_text(c->p, c->n, &noff, &nend, toff,
	    tend) == 0) {
		if (nend > noff && (name = kp_wire_json_load((const char *)c->p +
		    noff, nend - noff, JSON_DECODE_ANY, &e)) != NULL)
			json_object_set_new(j[3], "name", name);
		json_object_set_new(j[3], "text", json_string(""));
	} else if (c->n > max_frame) {
		*toff = *tend = 0;
		dropped += c->n;
	} else {
		*toff = *tend = 0;
		json_decref(j[3]);
		if ((j[3] = kp_wire_json_load(c->p, c->n, 0, &e)) == NULL ||
		    !json_is_object(j[3])) {
			rc = fail(err, errlen, KP_WIRE_EJSON, "content: not "
			    "an object");
			goto out;
		}
	}
	nb = after - 1 - NPARTS;
	for (size_t i = 0; i < nb; i++)
		if (parts[NPARTS + i].n > max_frame)
			dropped += parts[NPARTS + i].n;
	/* Buffers go only with a whole message. */
	m = msg_new(frames, d, j, parts + NPARTS, dropped == 0 ? nb : 0);
	m->dropped = dropped;
	*out = m;
	return 0;
out:
	for (size_t i = 0; i < NPARTS; i++)
		json_decref(j[i]);
	return rc;
}

/* The next piece of an escaped JSON string body (see kp_wire.h). */
json_t *
kp_wire_text_piece(const void *p, size_t *off, size_t end, size_t max)
{
	const unsigned char *s = p;
	size_t i = *off, n, in;
	char *t;
	json_t *j;

	if (i >= end)
		return NULL;
	n = end - i < max + 12 ? end - i : max + 12;
	/* Escapes shrink; only an invalid byte grows, to 3 (U+FFFD). */
	t = must(malloc(3 * n + 1));
	n = unescape(s + i, end - i, max, t, &in);
	*off = i + in;
	j = json_stringn_nocheck(t, n);
	free(t);
	return must(j);
}

/* Append code point cp to t as UTF-8; how many bytes. */
static size_t
put_utf8(char *t, long cp)
{
	if (cp < 0x80) {
		t[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		t[0] = (char)(0xc0 | cp >> 6);
		t[1] = (char)(0x80 | (cp & 0x3f));
		return 2;
	}
	if (cp < 0x10000) {
		t[0] = (char)(0xe0 | cp >> 12);
		t[1] = (char)(0x80 | (cp >> 6 & 0x3f));
		t[2] = (char)(0x80 | (cp & 0x3f));
		return 3;
	}
	t[0] = (char)(0xf0 | cp >> 18);
	t[1] = (char)(0x80 | (cp >> 12 & 0x3f));
	t[2] = (char)(0x80 | (cp >> 6 & 0x3f));
	t[3] = (char)(0x80 | (cp & 0x3f));
	return 4;
}

/*
 * The first max or so of the n bytes of a JSON string's body (between its
 * quotes), decoded into t, which has room for 3 * (max + 12) bytes: the
 * length written, with the bytes read in *used (whole characters and
 * escapes; a surrogate pair is one).  Lenient, as
 * kp_wire_json_load() is, and in one pass: an invalid byte and a lone
 * surrogate escape become U+FFFD, an unknown escape its character (a
 * backslash before a character that is not ASCII is dropped), and a raw
 * control byte stays as it is.  The result is valid UTF-8.
 */
static size_t
unescape(const unsigned char *s, size_t n, size_t max, char *t, size_t *used)
{
	static const char fffd[] = "\xef\xbf\xbd";
	size_t i = 0, k = 0, len;
	long hi, lo;

	/* Whole characters and escapes, one at least, until max are read. */
	while (i < n && (i == 0 || i < max)) {
		if (s[i] != '\\') {
			if ((len = utf8_len(s + i, n - i)) == 0) {
				memcpy(t + k, fffd, 3);
				k += 3;
				i++;
				continue;
			}
			memcpy(t + k, s + i, len);
			k += len;
			i += len;
			continue;
		}
		if ((hi = uescape(s + i, n - i)) >= 0) {
			if (hi >= 0xd800 && hi <= 0xdbff &&
			    (lo = uescape(s + i + 6, n - i - 6)) >= 0xdc00 &&
			    lo <= 0xdfff) {
				k += put_utf8(t + k, 0x10000 +
				    ((hi - 0xd800) << 10) + (lo - 0xdc00));
				i += 12;
			} else {
				k += put_utf8(t + k, hi >= 0xd800 &&
				    hi <= 0xdfff ? 0xfffd : hi);
				i += 6;
			}
			continue;
		}
		if (i + 1 == n) {		/* a lone backslash at the end */
			t[k++] = '\\';
			i++;
			continue;
		}
		if (s[i + 1] >= 0x80) {		/* "\" before a character */
			i++;			/* that is not ASCII: drop it */
			continue;
		}
		switch (s[i + 1]) {
		case 'b': t[k++] = '\b'; break;
		case 'f': t[k++] = '\f'; break;
		case 'n': t[k++] = '\n'; break;
		case 'r': t[k++] = '\r'; break;
		case 't': t[k++] = '\t'; break;
		default: t[k++] = (char)s[i + 1]; break;	/* " \ / */
		}
		i += 2;
	}
	*used = i < n ? i : n;
	return k;
}

/* Serialise and sign m into frames that borrow its identities, buffers. */
int
kp_wire_encode(const struct kp_msg *m, const unsigned char *key,
    size_t keylen, struct kp_frames *out)
{
	const json_t *j[NPARTS] = { m->header, m->parent, m->metadata,
	    m->content };
	struct kp_part parts[NPARTS];
	struct kp_frames fr;
	size_t k = 0;
	char *sigcopy;
	int rc;

	memset(&fr, 0, sizeof(fr));
	for (size_t i = 0; i < NPARTS; i++) {
		if (j[i] == NULL) {
			if ((fr.json[i] = strdup("{}")) == NULL)
				abort();
		} else if (!json_is_object(j[i]) ||
		    (fr.json[i] = json_dumps(j[i], JSON_COMPACT)) == NULL) {
			/* jansson refuses e.g. a string of invalid UTF-8. */
			rc = -EINVAL;
			goto fail;
		}
		parts[i].p = fr.json[i];
		parts[i].n = strlen(fr.json[i]);
	}
	if ((rc = kp_sign(key, keylen, parts, NPARTS, fr.sig)) < 0)
		goto fail;

	/*
	 * The signature frame points at a copy stored after the frame
	 * array, not at fr.sig: callers may copy the struct.
	 */
	fr.n = m->nidents + 2 + NPARTS + m->nbuffers;
	if ((fr.f = calloc(1, fr.n * sizeof(*fr.f) + sizeof(fr.sig))) ==
	    NULL)
		abort();
	sigcopy = (char *)(fr.f + fr.n);
	memcpy(sigcopy, fr.sig, sizeof(fr.sig));
	for (size_t i = 0; i < m->nidents; i++) {
		fr.f[k].p = m->idents[i].p;
		fr.f[k++].n = m->idents[i].n;
	}
	fr.f[k].p = KP_DELIM;
	fr.f[k++].n = DELIM_LEN;
	fr.f[k].p = sigcopy;
	fr.f[k++].n = strlen(fr.sig);
	for (size_t i = 0; i < NPARTS; i++)
		fr.f[k++] = parts[i];
	for (size_t i = 0; i < m->nbuffers; i++) {
		fr.f[k].p = m->buffers[i].p;
		fr.f[k++].n = m->buffers[i].n;
	}
	*out = fr;
	return 0;
fail:
	kp_wire_frames_free(&fr);
	return rc;
}

/* Free what kp_wire_encode allocated; the struct may be reused. */
void
kp_wire_frames_free(struct kp_frames *fr)
{
	if (fr == NULL)
		return;
	free(fr->f);
	for (size_t i = 0; i < NPARTS; i++)
		free(fr->json[i]);
	memset(fr, 0, sizeof(*fr));
}
