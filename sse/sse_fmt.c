/*
 * sse_fmt.c -- event and JSON encoding, byte-compatible with upstream.
 *
 * This file turns values into bytes and nothing else: it neither reads
 * input nor knows about connections.  jansson parses for us, but we write
 * JSON ourselves because clients were built against another encoder's
 * exact output (sorted keys, HTML-safe escapes, U+FFFD for invalid UTF-8,
 * shortest floats) and because kernel output need not be valid UTF-8.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../util/utf8.h"
#include "sse_fmt.h"

static int	 cmp_keys(const void *, const void *);

/* Quote and escape s[0..n) the way upstream's JSON encoder does. */
void
sse_fmt_string(struct buf *b, const char *s, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *u = (const unsigned char *)s;
	size_t i = 0, run = 0, k;
	char esc[7];

	(void)buf_reserve(b, n + 2);
	buf_add(b, "\"", 1);
	while (i < n) {
		unsigned c = u[i];

		if (c >= 0x20 && c != '"' && c != '\\' && c != '<' &&
		    c != '>' && c != '&' && c < 0x80) {
			i++;
			run++;
			continue;
		}
		buf_add(b, s + i - run, run);
		run = 0;
		if (c >= 0x80) {
			k = utf8_len(u + i, n - i);
			if (k == 0) {
				buf_add(b, "\\ufffd", 6);
				i++;
			} else if (k == 3 && c == 0xe2 && u[i + 1] == 0x80 &&
			    (u[i + 2] == 0xa8 || u[i + 2] == 0xa9)) {
				buf_adds(b, u[i + 2] == 0xa8 ? "\\u2028" :
				    "\\u2029");
				i += 3;
			} else {
				buf_add(b, s + i, k);
				i += k;
			}
			continue;
		}
		switch (c) {
		case '"':
			buf_add(b, "\\\"", 2);
			break;
		case '\\':
			buf_add(b, "\\\\", 2);
			break;
		case '\n':
			buf_add(b, "\\n", 2);
			break;
		case '\r':
			buf_add(b, "\\r", 2);
			break;
		case '\t':
			buf_add(b, "\\t", 2);
			break;
		case '\b':
			buf_add(b, "\\b", 2);
			break;
		case '\f':
			buf_add(b, "\\f", 2);
			break;
		default:
			memcpy(esc, "\\u00", 4);
			esc[4] = hex[c >> 4];
			esc[5] = hex[c & 15];
			buf_add(b, esc, 6);
			break;
		}
		i++;
	}
	buf_add(b, s + i - run, run);
	buf_add(b, "\"", 1);
}

/*
 * Shortest decimal that reads back as d, as upstream writes floats: plain
 * notation between 1e-6 and 1e21, exponent notation outside ("1e-07" is
 * written "1e-7").  The digits always come from the shortest %e form, so a
 * large whole number is padded with zeros rather than written exactly
 * (2^60 is 1152921504606847000).
 */
void
sse_fmt_double(struct buf *b, double d)
{
	char tmp[40], digits[24], *e;
	int prec, exp10, nd = 0;
	double a = fabs(d);

	if (!isfinite(d)) {
		buf_adds(b, "null");	/* no JSON for it */
		return;
	}
	if (d == 0) {
		buf_adds(b, signbit(d) ? "-0" : "0");
		return;
	}
	for (prec = 1; prec <= 17; prec++) {
		snprintf(tmp, sizeof(tmp), "%.*e", prec - 1, a);
		if (strtod(tmp, NULL) == a)
			break;
	}
	e = strchr(tmp, 'e');
	exp10 = atoi(e + 1);
	for (const char *p = tmp; p < e; p++)
		if (*p >= '0' && *p <= '9')
			digits[nd++] = *p;
	if (d < 0)
		buf_add(b, "-", 1);
	if (a < 1e-6 || a >= 1e21) {
		/* 1. Exponent form: d[.ddd]e-7 / e+21, no zero padding. */
		buf_add(b, digits, 1);
		if (nd > 1) {
			buf_add(b, ".", 1);
			buf_add(b, digits + 1, (size_t)nd - 1);
		}
		buf_addf(b, "e%c%d", exp10 < 0 ? '-' : '+', abs(exp10));
	} else if (exp10 >= nd - 1) {
		/* 2. A whole number: the digits, then zeros. */
		buf_add(b, digits, (size_t)nd);
		for (int i = nd - 1; i < exp10; i++)
			buf_add(b, "0", 1);
	} else if (exp10 >= 0) {
		/* 3. Digits on both sides of the point. */
		buf_add(b, digits, (size_t)exp10 + 1);
		buf_add(b, ".", 1);
		buf_add(b, digits + exp10 + 1, (size_t)(nd - exp10 - 1));
	} else {
		/* 4. Below one: 0.000ddd. */
		buf_add(b, "0.", 2);
		for (int i = -1; i > exp10; i--)
			buf_add(b, "0", 1);
		buf_add(b, digits, (size_t)nd);
	}
}

static int
cmp_keys(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Compact JSON with object keys in byte order, recursively. */
int
sse_fmt_json(struct buf *b, const json_t *v)
{
	const char **keys, *k;
	size_t n, i;
	json_t *x;
	int rc = 0;

	switch (json_typeof(v)) {
	case JSON_OBJECT:
		n = json_object_size(v);
		keys = malloc((n ? n : 1) * sizeof(*keys));
		if (keys == NULL)
			abort();
		i = 0;
		/* jansson's iteration does not change the object. */
		json_object_foreach((json_t *)(uintptr_t)v, k, x)
			keys[i++] = k;
		qsort(keys, n, sizeof(*keys), cmp_keys);
		buf_add(b, "{", 1);
		for (i = 0; i < n && rc == 0; i++) {
			if (i > 0)
				buf_add(b, ",", 1);
			sse_fmt_string(b, keys[i], strlen(keys[i]));
			buf_add(b, ":", 1);
			rc = sse_fmt_json(b, json_object_get(v, keys[i]));
		}
		free(keys);
		buf_add(b, "}", 1);
		return rc;
	case JSON_ARRAY:
		buf_add(b, "[", 1);
		for (i = 0; i < json_array_size(v) && rc == 0; i++) {
			if (i > 0)
				buf_add(b, ",", 1);
			rc = sse_fmt_json(b, json_array_get(v, i));
		}
		buf_add(b, "]", 1);
		return rc;
	case JSON_STRING:
		sse_fmt_string(b, json_string_value(v), json_string_length(v));
		return 0;
	case JSON_INTEGER:
		buf_addi(b, (long long)json_integer_value(v));
		return 0;
	case JSON_REAL:
		sse_fmt_double(b, json_real_value(v));
		return 0;
	case JSON_TRUE:
		buf_adds(b, "true");
		return 0;
	case JSON_FALSE:
		buf_adds(b, "false");
		return 0;
	case JSON_NULL:
		buf_adds(b, "null");
		return 0;
	}
	return -EINVAL;
}

/* OpenSandbox's framing: nothing before the object. */
static int
head_opensandbox(struct buf *b, const char *type, uint64_t seq)
{
	return 0;
}

/* Standard SSE: the sequence number as id, the type as the event. */
static int
head_standard(struct buf *b, const char *type, uint64_t seq)
{
	if (seq != 0) {
		buf_adds(b, "id: ");
		buf_addu(b, (unsigned long long)seq);
		buf_add(b, "\n", 1);
	}
	if (type != NULL && type[0] != '\0' &&
	    strpbrk(type, "\r\n") == NULL) {
		buf_adds(b, "event: ");
		buf_adds(b, type);
		buf_add(b, "\n", 1);
	}
	return buf_adds(b, "data: ");
}

const struct sse_framing sse_framing_opensandbox = {
	"opensandbox", head_opensandbox, "\n\n", NULL
};

/* Compact JSON holds no line break, so one data line carries it. */
const struct sse_framing sse_framing_standard = {
	"sse", head_standard, "\n\n", ": ping\n\n"
};

/*
 * Appends that may be refused part way: begin notes where b was, end
 * takes back everything since if any append was refused (b->full then
 * stays set, as before).  0 or -ENOBUFS.
 */
struct mark {
	size_t	len;
	bool	full;
};

static struct mark
mark_begin(struct buf *b)
{
	struct mark m = { b->len, b->full };

	b->full = false;
	return m;
}

static int
mark_end(struct buf *b, struct mark m)
{
	bool refused = b->full;

	b->full = m.full || refused;
	if (!refused)
		return 0;
	buf_truncate(b, m.len);
	return -ENOBUFS;
}

/* The event's JSON object, fields in upstream's order. */
static void
event_object(struct buf *b, const struct sse_event *ev)
{
	buf_adds(b, "{\"type\":");
	sse_fmt_string(b, ev->type, strlen(ev->type));
	if (ev->text != NULL && (ev->text_len > 0 || ev->text[0] != '\0')) {
		buf_adds(b, ",\"text\":");
		sse_fmt_string(b, ev->text, ev->text_len ? ev->text_len :
		    strlen(ev->text));
	}
	if (ev->execution_count != 0) {
		buf_adds(b, ",\"execution_count\":");
		buf_addi(b, ev->execution_count);
	}
	if (ev->execution_time != 0) {
		buf_adds(b, ",\"execution_time\":");
		buf_addi(b, ev->execution_time);
	}
	buf_adds(b, ",\"timestamp\":");
	buf_addi(b, (long long)ev->timestamp);
	if (ev->results != NULL) {
		buf_adds(b, ",\"results\":");
		sse_fmt_json(b, ev->results);
	}
	if (ev->error != NULL) {
		buf_adds(b, ",\"error\":");
		sse_fmt_json(b, ev->error);
	}
	if (ev->seq != 0) {
		buf_adds(b, ",\"seq\":");
		buf_addu(b, (unsigned long long)ev->seq);
	}
	buf_add(b, "}", 1);
}

int
sse_fmt_event(struct buf *b, const struct sse_event *ev)
{
	return sse_fmt_event_framed(b, NULL, ev);
}

int
sse_fmt_event_framed(struct buf *b, const struct sse_framing *f,
    const struct sse_event *ev)
{
	struct mark m = mark_begin(b);

	if (f == NULL)
		f = &sse_framing_opensandbox;
	f->head(b, ev->type, ev->seq);
	event_object(b, ev);
	buf_adds(b, f->tail);
	return mark_end(b, m);
}

int
sse_fmt_json_event(struct buf *b, const struct sse_framing *f,
    const json_t *v)
{
	struct mark m = mark_begin(b);
	int rc;

	if (f == NULL)
		f = &sse_framing_opensandbox;
	f->head(b, json_string_value(json_object_get(v, "type")), 0);
	rc = sse_fmt_json(b, v);
	buf_adds(b, f->tail);
	if (rc < 0) {
		buf_truncate(b, m.len);
		b->full = m.full;
		return rc;
	}
	return mark_end(b, m);
}

/*
 * One OpenSandbox event's type: the string that opens it, when it opens
 * with {"type":"..." and the string has no escape.  Into out, or "".
 */
static void
event_type(const char *p, size_t n, char *out, size_t outlen)
{
	static const char open[] = "{\"type\":\"";
	size_t k = sizeof(open) - 1, i;

	out[0] = '\0';
	if (n < k || memcmp(p, open, k) != 0)
		return;
	for (i = k; i < n && p[i] != '"' && p[i] != '\\'; i++)
		;
	if (i == n || p[i] != '"' || i - k >= outlen)
		return;
	memcpy(out, p + k, i - k);
	out[i - k] = '\0';
}

/* One event's "seq", when it ends with ,"seq":N}; else 0. */
static uint64_t
event_seq(const char *p, size_t n)
{
	static const char key[] = ",\"seq\":";
	size_t k = sizeof(key) - 1, i;
	uint64_t v = 0;

	if (n < k + 2 || p[n - 1] != '}')
		return 0;
	for (i = n - 1; i > 0 && p[i - 1] >= '0' && p[i - 1] <= '9'; i--)
		;
	if (i < k || i == n - 1 || memcmp(p + i - k, key, k) != 0 ||
	    n - 1 - i > 19)
		return 0;
	for (; i < n - 1; i++)
		v = v * 10 + (uint64_t)(p[i] - '0');
	return v;
}

int
sse_fmt_reframe(struct buf *b, const struct sse_framing *f, const char *p,
    size_t n)
{
	struct mark m;
	const char *e;
	char type[64];
	size_t k;

	if (f == NULL || f == &sse_framing_opensandbox)
		return buf_add(b, p, n);
	m = mark_begin(b);
	while (n > 0) {
		e = memmem(p, n, "\n\n", 2);
		k = e != NULL ? (size_t)(e - p) : n;
		event_type(p, k, type, sizeof(type));
		f->head(b, type, event_seq(p, k));
		buf_add(b, p, k);
		buf_adds(b, f->tail);
		k += e != NULL ? 2 : 0;
		p += k;
		n -= k;
	}
	return mark_end(b, m);
}
