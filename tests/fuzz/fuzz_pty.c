/*
 * fuzz_pty.c -- fuzz target for what a /pty client sends: the messages
 * of route_pty.c (JSON control frames: stdin, signal, resize, ping; and
 * binary 0x00 input) and the query of GET /pty/{id}/ws (since, viewer,
 * takeover, pty).  WebSocket framing itself is not fuzzed here.
 *
 * route_pty.c is included, its statics being the parsers; the terminal,
 * the socket and the HTTP request are fakes that record what they are
 * asked (the calls are renamed below, in this file only).  Byte 0 picks:
 * bit 0 a viewer, bit 1 a binary frame, bit 2 a failing pty_write, bit 3
 * the query instead of a message.  Invariants, any break aborts: each
 * message does exactly what a model of the protocol says -- ping: one
 * pong; stdin (writer, non-empty data): those bytes written; a known
 * signal: that signal; resize with 1..65535 integers: that size; an
 * unknown type: one error frame INVALID_FRAME; JSON that does not parse:
 * nothing; a viewer: nothing but pongs -- every text frame sent is a JSON
 * object with a string "type", and a failed write says STDIN_WRITE_FAILED
 * and closes; the query sets since to its decimal value (0 for anything
 * else, as upstream) and each flag only for its exact value.
 */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <string.h>

#include <jansson.h>

#include "fz.h"

#define pty_write		fz_pty_write
#define pty_signal		fz_pty_signal
#define pty_resize		fz_pty_resize
#define pty_id			fz_pty_id
#define pty_find		fz_pty_find
#define pty_watcher		fz_pty_watcher
#define pty_state		fz_pty_state
#define ws_send			fz_ws_send
#define ws_close		fz_ws_close
#define log_msg			fz_log_msg
#define http_req_param		fz_http_req_param
#define http_req_query		fz_http_req_query
#define http_req_query_uint	fz_http_req_query_uint
#define http_req_header		fz_http_req_header
#define http_req_app		fz_http_req_app
#define http_reply_error	fz_http_reply_error
#define http_reply_upgrade	fz_http_reply_upgrade
#define loop_timer_add		fz_loop_timer_add
#include "../../execd/route_pty.c"

struct pty {
	int	 unused;
};

/* What the fakes were asked. */
static struct {
	struct buf	 written;
	int		 nwrites, sig, nsigs, nresize, nframes, nclose;
	unsigned	 cols, rows;
	bool		 fail_write;
	char		 type[64], code[64];	/* of the last text frame */
	struct client	*upgraded;
	int		 nerrors;
	const char	*query;
	size_t		 qlen;
} f;

static struct pty	 the_pty;
static struct term	*the_term;	/* what the registry finds */
static struct execd	 app;
static struct conf	 conf;

int
fz_pty_write(struct pty *p, const void *buf, size_t len)
{
	f.nwrites++;
	if (f.fail_write)
		return -ENOBUFS;
	buf_add(&f.written, buf, len);
	return 0;
}

int
fz_pty_signal(struct pty *p, int sig)
{
	f.sig = sig;
	f.nsigs++;
	return 0;
}

int
fz_pty_resize(struct pty *p, unsigned cols, unsigned rows)
{
	f.cols = cols;
	f.rows = rows;
	f.nresize++;
	return 0;
}

const char *
fz_pty_id(const struct pty *p)
{
	return "t1";
}

struct pty *
fz_pty_find(const char *id)
{
	return the_term != NULL ? &the_pty : NULL;
}

void *
fz_pty_watcher(const struct pty *p)
{
	return the_term;
}

enum pty_state
fz_pty_state(const struct pty *p)
{
	return PTY_RUNNING;
}

int
fz_ws_send(struct ws *ws, int type, const void *hdr, size_t hn,
    const void *p, size_t n)
{
	json_error_t e;
	json_t *v;

	if (type != WS_TEXT)
		return 0;
	CHECK(hn == 0);
	v = json_loadb(p, n, 0, &e);
	CHECK(json_is_object(v));
	CHECK(json_is_string(json_object_get(v, "type")));
	snprintf(f.type, sizeof(f.type), "%s",
	    json_string_value(json_object_get(v, "type")));
	snprintf(f.code, sizeof(f.code), "%s",
	    json_string_value(json_object_get(v, "code")) ?: "");
	json_decref(v);
	f.nframes++;
	return 0;
}

void
fz_ws_close(struct ws *ws, uint16_t code, const char *reason)
{
	f.nclose++;
}

void
fz_log_msg(enum log_level level, const char *func, int err,
    const char *fmt, ...)
{
}

const char *
fz_http_req_param(const struct http_req *req, const char *name)
{
	CHECK(strcmp(name, "sessionId") == 0);
	return "t1";
}

/* As http.c's, over the fake query (the number parser is the real one). */
int
fz_http_req_query_uint(const struct http_req *req, const char *key,
    uint64_t max, uint64_t *out)
{
	const char *s = fz_http_req_query(req, key);

	if (s == NULL || *s == '\0')
		return 0;
	return http_parse_uint(s, max, out) < 0 ? -EINVAL : 1;
}

/* The first value of key in the input's "k=v&k=v" query, or NULL. */
const char *
fz_http_req_query(const struct http_req *req, const char *key)
{
	static char vals[8][4096];	/* stable, as MHD's values are */
	static unsigned nv;
	char *val = vals[nv++ % 8];
	const char *p = f.query, *end = f.query + f.qlen, *amp, *eq;
	size_t klen = strlen(key);

	for (; p < end; p = amp + 1) {
		if ((amp = memchr(p, '&', (size_t)(end - p))) == NULL)
			amp = end;
		eq = memchr(p, '=', (size_t)(amp - p));
		if ((size_t)((eq != NULL ? eq : amp) - p) != klen ||
		    memcmp(p, key, klen) != 0)
			continue;
		if (eq == NULL)
			return "";
		snprintf(val, sizeof(vals[0]), "%.*s", (int)(amp - eq - 1),
		    eq + 1);
		return val;
	}
	return NULL;
}

const char *
fz_http_req_header(const struct http_req *req, const char *name)
{
	if (strcmp(name, "Upgrade") == 0)
		return "websocket";
	if (strcmp(name, "Connection") == 0)
		return "Upgrade";
	if (strcmp(name, "Sec-WebSocket-Version") == 0)
		return "13";
	if (strcmp(name, "Sec-WebSocket-Key") == 0)
		return "dGhlIHNhbXBsZSBub25jZQ==";
	return NULL;
}

void *
fz_http_req_app(const struct http_req *req)
{
	return &app;
}

void
fz_http_reply_error(struct http_req *req, unsigned status, const char *code,
    const char *fmt, ...)
{
	f.nerrors++;
}

void
fz_http_reply_upgrade(struct http_req *req, const char *const *headers,
    http_upgrade_cb *up, http_upgrade_shutdown_cb *shutdown, void *arg)
{
	f.upgraded = arg;
}

uint64_t
fz_loop_timer_add(struct loop *l, uint64_t ms, loop_timer_cb *cb, void *arg)
{
	return 1;
}

/* The signal a name stands for, or 0. */
static int
sig_of(const char *s)
{
	static const char *const names[] = { "SIGINT", "SIGTERM", "SIGKILL",
	    "SIGQUIT", "SIGHUP" };
	static const int nums[] = { SIGINT, SIGTERM, SIGKILL, SIGQUIT,
	    SIGHUP };

	for (size_t i = 0; s != NULL && i < NELEM(names); i++)
		if (strcmp(s, names[i]) == 0)
			return nums[i];
	return 0;
}

/* One control frame against the model. */
static void
check_control(struct client *c, const char *p, size_t n)
{
	json_error_t e;
	json_t *v = json_loadb(p, n, 0, &e), *x, *cols, *rows;
	const char *type;
	long long w, h;

	on_msg(NULL, WS_TEXT, p, n, c);
	if (v == NULL) {
		CHECK(f.nframes == 0 && f.nwrites == 0 && f.nsigs == 0 &&
		    f.nresize == 0);
		return;
	}
	type = json_string_value(json_object_get(v, "type")) ?: "";
	if (strcmp(type, "ping") == 0) {
		CHECK(f.nframes == 1 && strcmp(f.type, "pong") == 0);
	} else if (c->viewer) {
		CHECK(f.nframes == 0);
	} else if (strcmp(type, "stdin") == 0) {
		x = json_object_get(v, "data");
		if (json_is_string(x) && json_string_length(x) > 0 &&
		    json_string_value(x)[0] != '\0') {
			CHECK(f.nwrites == 1);
			if (f.fail_write) {
				CHECK(f.nframes == 1 && f.nclose == 1 &&
				    strcmp(f.code, "STDIN_WRITE_FAILED") == 0);
			} else {
				CHECK(f.written.len == json_string_length(x) &&
				    memcmp(f.written.p, json_string_value(x),
				    f.written.len) == 0);
			}
		} else {
			CHECK(f.nwrites == 0);
		}
	} else if (strcmp(type, "signal") == 0) {
		x = json_object_get(v, "signal");
		CHECK(f.nsigs == (sig_of(json_string_value(x)) != 0));
		if (f.nsigs)
			CHECK(f.sig == sig_of(json_string_value(x)));
	} else if (strcmp(type, "resize") == 0) {
		cols = json_object_get(v, "cols");
		rows = json_object_get(v, "rows");
		w = json_integer_value(cols);
		h = json_integer_value(rows);
		if (json_is_integer(cols) && json_is_integer(rows) && w >= 1 &&
		    w <= 65535 && h >= 1 && h <= 65535)
			CHECK(f.nresize == 1 && f.cols == w && f.rows == h);
		else
			CHECK(f.nresize == 0);
	} else {
		CHECK(f.nframes == 1 && strcmp(f.type, "error") == 0 &&
		    strcmp(f.code, "INVALID_FRAME") == 0);
	}
	if (strcmp(type, "ping") != 0 && strcmp(type, "stdin") != 0 &&
	    !(strcmp(type, "resize") != 0 && strcmp(type, "signal") != 0 &&
	    !c->viewer))
		CHECK(f.nframes == 0);
	CHECK(f.nwrites <= 1 && f.nsigs <= 1 && f.nresize <= 1);
	json_decref(v);
}

/* since as upstream reads it: decimal digits that fit, else 0. */
static uint64_t
since_model(const char *s)
{
	uint64_t v = 0;

	if (s == NULL || *s == '\0')
		return 0;
	for (; *s != '\0'; s++) {
		if (*s < '0' || *s > '9' || v > (UINT64_MAX - (uint64_t)(*s -
		    '0')) / 10)
			return 0;
		v = v * 10 + (uint64_t)(*s - '0');
	}
	return v;
}

static void
check_query(void)
{
	struct term t = { .pty = &the_pty };
	const char *v;
	struct client *c;

	the_term = &t;
	route_pty_ws(NULL);
	CHECK(f.nerrors == 0);
	CHECK((c = f.upgraded) != NULL);
	CHECK(c->since == since_model(fz_http_req_query(NULL, "since")));
	v = fz_http_req_query(NULL, "viewer");
	CHECK(c->viewer == (v != NULL && strcmp(v, "1") == 0));
	v = fz_http_req_query(NULL, "takeover");
	CHECK(c->takeover == (v != NULL && strcmp(v, "1") == 0));
	v = fz_http_req_query(NULL, "pty");
	CHECK(c->pipe == (v != NULL && strcmp(v, "0") == 0));
	CHECK(c->max_queue == conf.pty_replay + QUEUE_EXTRA);
	CHECK(t.clients == c && (c->viewer || t.claim == c));
	unlink_client(c);
	CHECK(t.clients == NULL && t.claim == NULL);
	free(c);
	the_term = NULL;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct term t = { .pty = &the_pty };
	struct client c = { .t = &t, .live = true };
	const char *p;
	size_t n;

	if (size < 1)
		return 0;
	p = (const char *)data + 1;
	n = size - 1;
	memset(&f, 0, sizeof(f));
	buf_init(&f.written);
	app.conf = &conf;
	conf.pty_replay = 1 << 20;
	c.viewer = data[0] & 1;
	f.fail_write = data[0] & 4;
	if (!c.viewer)
		t.writer = &c;
	t.clients = &c;
	if (data[0] & 8) {
		f.query = p;
		f.qlen = n;
		check_query();
	} else if (data[0] & 2) {
		on_msg(NULL, WS_BINARY, p, n, &c);
		if (!c.viewer && n > 1 && p[0] == 0) {
			CHECK(f.nwrites == 1);
			if (!f.fail_write)
				CHECK(f.written.len == n - 1 &&
				    memcmp(f.written.p, p + 1, n - 1) == 0);
		} else {
			CHECK(f.nwrites == 0 && f.nframes == 0);
		}
	} else {
		check_control(&c, p, n);
	}
	buf_reset(&f.written);
	return 0;
}
