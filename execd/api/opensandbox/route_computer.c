/*
 * route_computer.c -- the computer-use endpoints: the X display's screen,
 * screenshots, mouse, keyboard and windows (computer.h).
 *
 * A handler checks its input on the loop thread (400 before anything
 * runs; key names are resolved on the worker, still before any key is
 * pressed), then the call runs on a worker, since X calls may block, and
 * its result is answered from the loop.  No display is 503 UNAVAILABLE
 * naming what is missing; a window that does not exist is 404; an X
 * server that does not answer within --fs-timeout is 504.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "../../core/xmalloc.h"
#include "../../domain/computer.h"
#include "../../transport/http.h"
#include "route.h"

#define COORD_MAX	65535	/* larger than any X screen */
#define SCROLL_MAX	100	/* wheel notches in one call */
#define CLICKS_MAX	10

static void	op_start(struct http_req *, struct computer_op *);
static void	op_run(void *);
static void	op_done(struct http_req *, void *);

static void
op_start(struct http_req *req, struct computer_op *op)
{
	http_req_work(req, HTTP_WORK_DISPLAY, NULL, op_run, op_done, op);
}

static void
op_run(void *arg)
{
	computer_op_run(arg);
}

static void
op_done(struct http_req *req, void *arg)
{
	struct computer_op *op = arg;

	if (req == NULL) {
		/* The client left, or the deadline answered it. */
	} else if (op->rc == -ENXIO) {
		http_reply_error(req, 503, HTTP_E_UNAVAILABLE, "%s", op->err);
	} else if (op->rc == -EINVAL) {
		http_reply_error(req, 400, HTTP_E_BODY, "%s", op->err);
	} else if (op->rc == -ENOENT) {
		http_reply_error(req, 404, HTTP_E_NOT_FOUND, "%s", op->err);
	} else if (op->rc < 0) {
		http_reply_error(req, 500, HTTP_E_RUNTIME, "%s", op->err);
	} else if (op->kind == COMPUTER_OP_SCREEN) {
		http_reply_json(req, 200, json_pack("{s:i, s:i, s:{s:i, s:i}, "
		    "s:s}", "width", op->screen.width, "height",
		    op->screen.height, "cursor", "x", op->screen.cursor_x,
		    "y", op->screen.cursor_y, "display",
		    computer_display_name() != NULL ?
		    computer_display_name() : ""));
	} else if (op->kind == COMPUTER_OP_SHOT) {
		http_reply_text(req, 200, "image/png", op->png, op->png_len,
		    "Cache-Control", "no-store");
	} else if (op->kind == COMPUTER_OP_WINDOWS) {
		http_reply_json(req, 200, json_pack("{s:O}", "windows",
		    op->windows));
	} else {
		http_reply_empty(req);
	}
	computer_op_free(op);
}

/* GET /computer/screen: {width, height, cursor: {x, y}}. */
void
route_computer_screen(struct http_req *req)
{
	struct computer_op *op = xcalloc(1, sizeof(*op));

	op->kind = COMPUTER_OP_SCREEN;
	op_start(req, op);
}

/*
 * GET /computer/screenshot[?x=&y=&width=&height=&scale_width=]: a PNG
 * of the screen or a region (width, height: to the edge when absent),
 * scaled down to scale_width keeping the aspect, never up.
 */
void
route_computer_screenshot(struct http_req *req)
{
	static const char *const keys[] = { "x", "y", "width", "height",
	    "scale_width" };
	uint64_t v[5] = { 0, 0, 0, 0, 0 };
	struct computer_op *op;

	for (size_t i = 0; i < 5; i++) {
		int rc = http_req_query_uint(req, keys[i], COORD_MAX, &v[i]);

		if (rc < 0 || (rc == 1 && i >= 2 && v[i] == 0)) {
			http_reply_error(req, 400, HTTP_E_BODY, "invalid query "
			    "%s: want %s from %d to %d", keys[i], i < 2 ?
			    "a coordinate" : "a size", i < 2 ? 0 : 1,
			    COORD_MAX);
			return;
		}
	}
	op = xcalloc(1, sizeof(*op));
	op->kind = COMPUTER_OP_SHOT;
	op->shot.x = (int)v[0];
	op->shot.y = (int)v[1];
	op->shot.w = (int)v[2];
	op->shot.h = (int)v[3];
	op->shot.scale_width = (int)v[4];
	op_start(req, op);
}

/* The button: a name or 1-5; 0 when it is neither. */
static int
button_of(const json_t *v)
{
	static const char *const names[] = { "left", "middle", "right" };
	const char *s;

	if (v == NULL || json_is_null(v))
		return 1;
	if (json_is_integer(v))
		return json_integer_value(v) >= 1 &&
		    json_integer_value(v) <= 5 ? (int)json_integer_value(v) :
		    0;
	if ((s = json_string_value(v)) == NULL)
		return 0;
	for (int i = 0; i < 3; i++)
		if (strcmp(s, names[i]) == 0)
			return i + 1;
	return 0;
}

/* An integer field in [lo, hi]: 1 set, 0 absent, -1 out of range. */
static int
int_field(const json_t *b, const char *name, int lo, int hi, int *out)
{
	const json_t *v = json_object_get(b, name);

	if (v == NULL || json_is_null(v))
		return 0;
	if (json_integer_value(v) < lo || json_integer_value(v) > hi)
		return -1;
	*out = (int)json_integer_value(v);
	return 1;
}

/*
 * POST /computer/mouse {"action", "x", "y", "button", "count", "to_x",
 * "to_y", "dx", "dy"}: move needs x and y, drag also to_x and to_y;
 * click and scroll happen where the pointer is unless given x and y.
 */
void
route_computer_mouse(struct http_req *req)
{
	static const char *const actions[] = { "move", "click", "drag",
	    "scroll" };
	const json_t *b = http_req_json(req);
	const char *action = json_string_value(json_object_get(b, "action"));
	struct computer_mouse m = { .button = 1, .count = 1 };
	struct computer_op *op;
	int hx, hy, ht = 2, hd;
	size_t a;

	for (a = 0; a < 4; a++)
		if (action != NULL && strcmp(action, actions[a]) == 0)
			break;
	if (a == 4) {
		http_reply_error(req, 400, HTTP_E_BODY, "unknown action "
		    "'%.64s': want move, click, drag or scroll",
		    action != NULL ? action : "");
		return;
	}
	m.action = (enum computer_mouse_action)a;
	hx = int_field(b, "x", 0, COORD_MAX, &m.x);
	hy = int_field(b, "y", 0, COORD_MAX, &m.y);
	if (hx < 0 || hy < 0) {
		http_reply_error(req, 400, HTTP_E_BODY, "x and y must be "
		    "coordinates from 0 to %d", COORD_MAX);
		return;
	}
	if (hx != hy || (hx == 0 && (m.action == COMPUTER_MOVE ||
	    m.action == COMPUTER_DRAG))) {
		http_reply_error(req, 400, HTTP_E_BODY, "%s needs both x and "
		    "y%s", action, hx != hy ? "" : " (missing)");
		return;
	}
	m.has_xy = hx == 1;
	if ((m.button = button_of(json_object_get(b, "button"))) == 0) {
		http_reply_error(req, 400, HTTP_E_BODY, "button must be left, "
		    "middle, right or 1 to 5");
		return;
	}
	if (int_field(b, "count", 1, CLICKS_MAX, &m.count) < 0) {
		http_reply_error(req, 400, HTTP_E_BODY, "count must be from 1 "
		    "to %d", CLICKS_MAX);
		return;
	}
	if (m.action == COMPUTER_DRAG) {
		ht = int_field(b, "to_x", 0, COORD_MAX, &m.to_x);
		if (ht == 1)
			ht = int_field(b, "to_y", 0, COORD_MAX, &m.to_y);
		if (ht != 1) {
			http_reply_error(req, 400, HTTP_E_BODY, "drag needs "
			    "to_x and to_y, coordinates from 0 to %d",
			    COORD_MAX);
			return;
		}
	}
	if (m.action == COMPUTER_SCROLL) {
		hd = int_field(b, "dx", -SCROLL_MAX, SCROLL_MAX, &m.dx);
		if (hd >= 0)
			hd = int_field(b, "dy", -SCROLL_MAX, SCROLL_MAX,
			    &m.dy);
		if (hd < 0 || (m.dx == 0 && m.dy == 0)) {
			http_reply_error(req, 400, HTTP_E_BODY, "scroll needs "
			    "dx or dy, notches from -%d to %d, not both 0",
			    SCROLL_MAX, SCROLL_MAX);
			return;
		}
	}
	op = xcalloc(1, sizeof(*op));
	op->kind = COMPUTER_OP_MOUSE;
	op->mouse = m;
	op_start(req, op);
}

/*
 * POST /computer/keyboard {"text": "..."} types text (any Unicode), or
 * {"keys": "ctrl+shift+t"} presses key combinations; exactly one.
 */
void
route_computer_keyboard(struct http_req *req)
{
	const json_t *b = http_req_json(req);
	const json_t *text = json_object_get(b, "text");
	const char *keys = json_string_value(json_object_get(b, "keys"));
	struct computer_op *op;
	uint32_t *syms;
	char err[COMPUTER_ERRLEN];
	bool bad;

	if ((text != NULL) == (keys != NULL)) {
		http_reply_error(req, 400, HTTP_E_BODY, "give either text or "
		    "keys");
		return;
	}
	op = xcalloc(1, sizeof(*op));
	if (text != NULL) {
		op->kind = COMPUTER_OP_TYPE;
		op->text_len = json_string_length(text);
		/* Check it all now: a 400, never a half-typed text. */
		if (op->text_len == 0) {
			snprintf(err, sizeof(err), "text is empty");
			bad = true;
		} else {
			syms = xmalloc(sizeof(*syms) * op->text_len);
			bad = computer_text_keysyms(json_string_value(text),
			    op->text_len, syms, COMPUTER_TEXT_MAX, err,
			    sizeof(err)) < 0;
			free(syms);
		}
		if (bad) {
			http_reply_error(req, 400, HTTP_E_BODY, "%s", err);
			computer_op_free(op);
			return;
		}
		op->text = xmalloc(op->text_len + 1);
		memcpy(op->text, json_string_value(text), op->text_len + 1);
	} else {
		/* Parsed on the worker: names may need Xlib's database. */
		op->kind = COMPUTER_OP_KEYS;
		op->text = xstrdup(keys);
	}
	op_start(req, op);
}

/* GET /computer/windows: {"windows": [...]}. */
void
route_computer_windows(struct http_req *req)
{
	struct computer_op *op = xcalloc(1, sizeof(*op));

	op->kind = COMPUTER_OP_WINDOWS;
	op_start(req, op);
}

/* POST /computer/windows/{id}/focus: id in decimal or 0x hex. */
void
route_computer_focus(struct http_req *req)
{
	const char *s = http_req_param(req, "id");
	struct computer_op *op;
	unsigned long id;
	char *end;

	errno = 0;
	id = s != NULL && *s >= '0' && *s <= '9' ? strtoul(s, &end, 0) : 0;
	if (id == 0 || errno != 0 || *end != '\0' || id > UINT32_MAX) {
		http_reply_error(req, 400, HTTP_E_BODY, "invalid window id "
		    "'%.64s': want a number (decimal or 0x hex)",
		    s != NULL ? s : "");
		return;
	}
	op = xcalloc(1, sizeof(*op));
	op->kind = COMPUTER_OP_FOCUS;
	op->window = id;
	op_start(req, op);
}
