/*
 * fuzz_sse_fmt.c -- fuzz target for sse_fmt.c's string, event and float
 * encoders.
 *
 * The input bytes are encoded as a JSON string and as the text of an
 * event; the first eight, read as a double, go through sse_fmt_double().
 * The checks are independent of the encoder: jansson must read the
 * output back, to the input itself when it was valid UTF-8, else to the
 * input with each offending byte replaced by U+FFFD (decided here by
 * Unicode's table of well-formed sequences, not by sse_fmt.c's code); the
 * output must be valid UTF-8, hold no raw control character, '<', '>',
 * '&', U+2028 or U+2029, and use Go's escapes only; an event must be one
 * line and its blank line, and re-framed in standard SSE it must be its
 * id and event lines, then itself as the data.  The input re-framed as
 * stored events (sse_fmt_reframe) gives a data field per piece, and
 * comes back unchanged in OpenSandbox's framing.  Floats must read back
 * bit for bit, in the notation Go picks, with no more than 17
 * significant digits.  A broken invariant aborts.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "../../sse/sse_fmt.h"

#define CHECK(e) do { if (!(e)) { fprintf(stderr, "%s:%d: invariant " \
	"broken: %s\n", __FILE__, __LINE__, #e); abort(); } } while (0)

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

static size_t	 wf_len(const uint8_t *, size_t);
static uint8_t	*expected_text(const uint8_t *, size_t, size_t *);
static void	 check_encoded(const char *, size_t);
static void	 check_string(const uint8_t *, size_t);
static void	 check_event(const uint8_t *, size_t);
static void	 check_reframed(const char *, size_t, uint64_t);
static void	 check_reframe_any(const uint8_t *, size_t);
static void	 check_double(const uint8_t *, size_t);
static int	 is_json_number(const char *);

/*
 * Length of the well-formed UTF-8 sequence at s (Unicode 15, table 3-7),
 * or 0 when the byte there starts none.
 */
static size_t
wf_len(const uint8_t *s, size_t n)
{
	uint8_t c = s[0], lo = 0x80, hi = 0xbf;
	size_t len;

	if (c <= 0x7f)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		len = 2;
	else if (c == 0xe0) {
		len = 3;
		lo = 0xa0;
	} else if ((c >= 0xe1 && c <= 0xec) || c == 0xee || c == 0xef)
		len = 3;
	else if (c == 0xed) {
		len = 3;
		hi = 0x9f;
	} else if (c == 0xf0) {
		len = 4;
		lo = 0x90;
	} else if (c >= 0xf1 && c <= 0xf3)
		len = 4;
	else if (c == 0xf4) {
		len = 4;
		hi = 0x8f;
	} else
		return 0;
	if (n < len || s[1] < lo || s[1] > hi)
		return 0;
	for (size_t i = 2; i < len; i++)
		if (s[i] < 0x80 || s[i] > 0xbf)
			return 0;
	return len;
}

/* The input as a client should read it: bad bytes become U+FFFD each. */
static uint8_t *
expected_text(const uint8_t *s, size_t n, size_t *outlen)
{
	uint8_t *out = malloc(3 * n + 1);
	size_t i = 0, o = 0, k;

	if (out == NULL)
		abort();
	while (i < n) {
		if ((k = wf_len(s + i, n - i)) == 0) {
			memcpy(out + o, "\xef\xbf\xbd", 3);
			o += 3;
			i++;
		} else {
			memcpy(out + o, s + i, k);
			o += k;
			i += k;
		}
	}
	*outlen = o;
	return out;
}

/*
 * p[0..n) is encoder output: valid UTF-8; no raw control character,
 * HTML character, U+2028 or U+2029; escapes only as Go writes them.
 */
static void
check_encoded(const char *p, size_t n)
{
	const uint8_t *u = (const uint8_t *)p;
	size_t i = 0, k;
	unsigned v;

	while (i < n) {
		k = wf_len(u + i, n - i);
		CHECK(k != 0);
		CHECK(u[i] >= 0x20 && u[i] != '<' && u[i] != '>' &&
		    u[i] != '&');
		CHECK(!(k == 3 && u[i] == 0xe2 && u[i + 1] == 0x80 &&
		    (u[i + 2] == 0xa8 || u[i + 2] == 0xa9)));
		if (u[i] != '\\') {
			i += k;
			continue;
		}
		CHECK(i + 1 < n);
		if (strchr("\"\\nrtbf", p[i + 1]) != NULL && p[i + 1] != 0) {
			i += 2;
			continue;
		}
		CHECK(p[i + 1] == 'u' && i + 6 <= n);
		CHECK(sscanf(p + i + 2, "%4x", &v) == 1);
		/* Lower-case hex, and only what has no shorter escape. */
		CHECK(strspn(p + i + 2, "0123456789abcdef") >= 4);
		CHECK((v < 0x20 && v != '\n' && v != '\r' && v != '\t' &&
		    v != '\b' && v != '\f') || v == '<' || v == '>' ||
		    v == '&' || v == 0x2028 || v == 0x2029 || v == 0xfffd);
		i += 6;
	}
}

/* sse_fmt_string(): a quoted string jansson reads back as expected. */
static void
check_string(const uint8_t *data, size_t size)
{
	struct buf b;
	json_error_t e;
	json_t *v;
	uint8_t *want;
	size_t wantlen;

	buf_init(&b);
	sse_fmt_string(&b, (const char *)data, size);
	CHECK(b.len >= 2 && b.p[0] == '"' && b.p[b.len - 1] == '"');
	CHECK(b.p[b.len] == '\0');
	check_encoded(b.p, b.len);
	v = json_loadb(b.p, b.len, JSON_DECODE_ANY | JSON_ALLOW_NUL, &e);
	if (v == NULL)
		fprintf(stderr, "jansson: %s\n", e.text);
	CHECK(v != NULL && json_is_string(v));
	want = expected_text(data, size, &wantlen);
	CHECK(json_string_length(v) == wantlen);
	CHECK(memcmp(json_string_value(v), want, wantlen) == 0);
	/* Valid UTF-8 comes back unchanged, NUL bytes included. */
	if (wantlen == size)
		CHECK(memcmp(want, data, size) == 0);
	free(want);
	json_decref(v);
	buf_reset(&b);
}

/* sse_fmt_event() with the bytes as text: one line, then a blank one. */
static void
check_event(const uint8_t *data, size_t size)
{
	static const char prefix[] = "{\"type\":\"stdout\"";
	struct sse_event ev = { .type = "stdout",
	    .text = size > 0 ? (const char *)data : "", .text_len = size,
	    .execution_count = (long long)(size % 3),
	    .timestamp = INT64_C(1767225600000) + (int64_t)size,
	    .seq = (uint64_t)size + 1 };
	struct buf b;
	json_error_t e;
	json_t *v, *t;
	uint8_t *want;
	size_t wantlen, keys = 3;

	buf_init(&b);
	sse_fmt_event(&b, &ev);
	CHECK(b.len > sizeof(prefix) + 2);
	CHECK(memcmp(b.p, prefix, sizeof(prefix) - 1) == 0);
	CHECK(memcmp(b.p + b.len - 3, "}\n\n", 3) == 0);
	CHECK(memchr(b.p, '\n', b.len) == b.p + b.len - 2);
	check_encoded(b.p, b.len - 2);
	v = json_loadb(b.p, b.len - 2, JSON_ALLOW_NUL, &e);
	if (v == NULL)
		fprintf(stderr, "jansson: %s\n", e.text);
	CHECK(v != NULL && json_is_object(v));
	CHECK(strcmp(json_string_value(json_object_get(v, "type")),
	    "stdout") == 0);
	CHECK(json_integer_value(json_object_get(v, "timestamp")) ==
	    ev.timestamp);
	CHECK((uint64_t)json_integer_value(json_object_get(v, "seq")) ==
	    ev.seq);
	if (ev.execution_count != 0) {
		CHECK(json_integer_value(json_object_get(v,
		    "execution_count")) == ev.execution_count);
		keys++;
	}
	t = json_object_get(v, "text");
	if (size > 0) {
		want = expected_text(data, size, &wantlen);
		CHECK(json_is_string(t));
		CHECK(json_string_length(t) == wantlen);
		CHECK(memcmp(json_string_value(t), want, wantlen) == 0);
		free(want);
		keys++;
	} else {
		CHECK(t == NULL);
	}
	CHECK(json_object_size(v) == keys);
	json_decref(v);
	check_reframed(b.p, b.len, ev.seq);
	buf_reset(&b);
}

/*
 * One stdout event numbered seq, in standard SSE: its id and event
 * lines, then the same object as its data.
 */
static void
check_reframed(const char *p, size_t n, uint64_t seq)
{
	struct buf r, want;

	buf_init(&r);
	buf_init(&want);
	CHECK(sse_fmt_reframe(&r, &sse_framing_standard, p, n) == 0);
	buf_addf(&want, "id: %llu\nevent: stdout\ndata: ",
	    (unsigned long long)seq);
	buf_add(&want, p, n);
	CHECK(r.len == want.len && memcmp(r.p, want.p, r.len) == 0);
	buf_reset(&r);
	buf_reset(&want);
}

/*
 * Any bytes re-framed: as many events out as "\n\n"-ended pieces in,
 * each a data line, and into OpenSandbox's framing, unchanged.
 */
static void
check_reframe_any(const uint8_t *data, size_t size)
{
	const char *p = (const char *)data, *e;
	size_t pieces = 0, datas = 0, off = 0;
	struct buf r;

	for (off = 0; off < size; pieces++) {
		e = memmem(p + off, size - off, "\n\n", 2);
		off = e != NULL ? (size_t)(e - p) + 2 : size;
	}
	buf_init(&r);
	CHECK(sse_fmt_reframe(&r, &sse_framing_standard, p, size) == 0);
	for (off = 0; off + 6 <= r.len; off++)
		if (memcmp(r.p + off, "data: ", 6) == 0 && (off == 0 ||
		    r.p[off - 1] == '\n'))
			datas++;
	CHECK(datas >= pieces);
	buf_reset(&r);
	CHECK(sse_fmt_reframe(&r, NULL, p, size) == 0);
	CHECK(r.len == size && (size == 0 || memcmp(r.p, p, size) == 0));
	buf_reset(&r);
}

/* True when s matches the JSON number grammar (RFC 8259, section 6). */
static int
is_json_number(const char *s)
{
	if (*s == '-')
		s++;
	if (*s == '0')
		s++;
	else if (*s >= '1' && *s <= '9')
		while (*s >= '0' && *s <= '9')
			s++;
	else
		return 0;
	if (*s == '.') {
		s++;
		if (*s < '0' || *s > '9')
			return 0;
		while (*s >= '0' && *s <= '9')
			s++;
	}
	if (*s == 'e' || *s == 'E') {
		s++;
		if (*s == '+' || *s == '-')
			s++;
		if (*s < '0' || *s > '9')
			return 0;
		while (*s >= '0' && *s <= '9')
			s++;
	}
	return *s == '\0';
}

/* sse_fmt_double() on the first eight bytes. */
static void
check_double(const uint8_t *data, size_t size)
{
	struct buf b;
	double d, back;
	const char *e, *p, *first = NULL, *last = NULL;
	size_t digits = 0;

	if (size < sizeof(d))
		return;
	memcpy(&d, data, sizeof(d));
	buf_init(&b);
	sse_fmt_double(&b, d);
	if (!isfinite(d)) {
		CHECK(strcmp(b.p, "null") == 0);
		buf_reset(&b);
		return;
	}
	CHECK(is_json_number(b.p));
	back = strtod(b.p, NULL);
	CHECK(memcmp(&back, &d, sizeof(d)) == 0);
	/* Go: exponent form below 1e-6 and from 1e21, as e-7 or e+21. */
	e = strchr(b.p, 'e');
	CHECK((e != NULL) == (d != 0 && (fabs(d) < 1e-6 ||
	    fabs(d) >= 1e21)));
	if (e != NULL) {
		CHECK(e[1] == '+' || e[1] == '-');
		CHECK(e[2] != '0');
	}
	/* Shortest: never more significant digits than a double has. */
	for (p = b.p; *p != '\0' && p != e; p++) {
		if (*p < '0' || *p > '9')
			continue;
		if (first == NULL && *p != '0')
			first = p;
		if (*p != '0')
			last = p;
	}
	for (p = first; p != NULL && p <= last; p++)
		digits += *p >= '0' && *p <= '9';
	if (digits > 17)
		fprintf(stderr, "%a -> %s\n", d, b.p);
	CHECK(digits <= 17);
	buf_reset(&b);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	check_string(data, size);
	check_event(data, size);
	check_reframe_any(data, size);
	check_double(data, size);
	return 0;
}
