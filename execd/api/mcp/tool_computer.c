/*
 * tool_computer.c -- the computer-use tools: screenshot (MCP image
 * content), click, type, key and scroll, over the X display execd drives
 * (computer.h).
 *
 * Arguments are checked on the loop (a key name, a button); the X call
 * runs on a worker, since it may block on the server, and its outcome is
 * the result: the screenshot as image content, the others as a line of
 * text, a failure (no display, off screen) as isError.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include "../../core/xmalloc.h"
#include "../../domain/computer.h"
#include "mcp.h"

#define SCROLL_DEFAULT	3
#define SCROLL_MAX	100
#define CLICKS_MAX	10

static void
op_run(void *arg)
{
	computer_op_run(arg);
}

static void
op_done(struct mcp_call *c, void *arg)
{
	struct computer_op *op = arg;
	char *b64;

	if (op->rc < 0) {
		mcp_call_fail(c, "%s", op->err);
	} else if (op->kind == COMPUTER_OP_SHOT) {
		b64 = xmalloc(4 * ((op->png_len + 2) / 3) + 1);
		EVP_EncodeBlock((unsigned char *)b64, op->png,
		    (int)op->png_len);
		mcp_call_result(c, json_pack("{s:[{s:s, s:s, s:s}]}",
		    "content", "type", "image", "data", b64, "mimeType",
		    "image/png"));
		free(b64);
	} else {
		mcp_call_text(c, op->kind == COMPUTER_OP_TYPE ? "typed" :
		    op->kind == COMPUTER_OP_KEYS ? "pressed" : "done", NULL);
	}
	computer_op_free(op);
}

static void
op_start(struct mcp_call *c, struct computer_op *op)
{
	mcp_call_work(c, op_run, op_done, op);
}

/* x and y: both (1), neither (0), or one (-1, the call answered). */
static int
point_args(struct mcp_call *c, const json_t *args, struct computer_mouse *m)
{
	bool hx = json_object_get(args, "x") != NULL;
	bool hy = json_object_get(args, "y") != NULL;

	if (hx != hy) {
		mcp_call_fail(c, "give both x and y, or neither");
		return -1;
	}
	if (mcp_arg_int(args, "x", 0) > 65535 ||
	    mcp_arg_int(args, "y", 0) > 65535) {
		mcp_call_fail(c, "point %lld,%lld is off the screen",
		    mcp_arg_int(args, "x", 0), mcp_arg_int(args, "y", 0));
		return -1;
	}
	m->has_xy = hx;
	m->x = (int)mcp_arg_int(args, "x", 0);
	m->y = (int)mcp_arg_int(args, "y", 0);
	return hx ? 1 : 0;
}

void
mcp_screenshot(struct mcp_call *c, const json_t *args)
{
	struct computer_op *op = xcalloc(1, sizeof(*op));

	op->kind = COMPUTER_OP_SHOT;
	op->shot.x = (int)mcp_arg_int(args, "x", 0);
	op->shot.y = (int)mcp_arg_int(args, "y", 0);
	op->shot.w = (int)mcp_arg_int(args, "width", 0);
	op->shot.h = (int)mcp_arg_int(args, "height", 0);
	op->shot.scale_width = (int)mcp_arg_int(args, "scale_width", 0);
	if (mcp_arg_int(args, "x", 0) > 65535 ||
	    mcp_arg_int(args, "y", 0) > 65535 ||
	    mcp_arg_int(args, "width", 0) > 65535 ||
	    mcp_arg_int(args, "height", 0) > 65535 ||
	    mcp_arg_int(args, "scale_width", 0) > 65535) {
		free(op);
		mcp_call_fail(c, "coordinates and sizes are at most 65535");
		return;
	}
	op_start(c, op);
}

void
mcp_click(struct mcp_call *c, const json_t *args)
{
	static const char *const names[] = { "left", "middle", "right" };
	const char *b = mcp_arg_str(args, "button", "left");
	struct computer_mouse m = { .action = COMPUTER_CLICK };
	struct computer_op *op;

	if (point_args(c, args, &m) < 0)
		return;
	for (int i = 0; i < 3; i++)
		if (strcmp(b, names[i]) == 0)
			m.button = i + 1;
	if (m.button == 0) {
		mcp_call_fail(c, "button must be left, middle or right");
		return;
	}
	if (mcp_arg_int(args, "count", 1) < 1 ||
	    mcp_arg_int(args, "count", 1) > CLICKS_MAX) {
		mcp_call_fail(c, "count must be from 1 to %d", CLICKS_MAX);
		return;
	}
	m.count = (int)mcp_arg_int(args, "count", 1);
	op = xcalloc(1, sizeof(*op));
	op->kind = COMPUTER_OP_MOUSE;
	op->mouse = m;
	op_start(c, op);
}

void
mcp_scroll(struct mcp_call *c, const json_t *args)
{
	const char *d = mcp_arg_str(args, "direction", "");
	long long n = mcp_arg_int(args, "amount", SCROLL_DEFAULT);
	struct computer_mouse m = { .action = COMPUTER_SCROLL, .button = 4 };
	struct computer_op *op;

	if (point_args(c, args, &m) < 0)
		return;
	if (n < 1 || n > SCROLL_MAX) {
		mcp_call_fail(c, "amount must be from 1 to %d", SCROLL_MAX);
		return;
	}
	if (strcmp(d, "up") == 0)
		m.dy = -(int)n;
	else if (strcmp(d, "down") == 0)
		m.dy = (int)n;
	else if (strcmp(d, "left") == 0)
		m.dx = -(int)n;
	else if (strcmp(d, "right") == 0)
		m.dx = (int)n;
	else {
		mcp_call_fail(c, "direction must be up, down, left or right");
		return;
	}
	op = xcalloc(1, sizeof(*op));
	op->kind = COMPUTER_OP_MOUSE;
	op->mouse = m;
	op_start(c, op);
}

void
mcp_type(struct mcp_call *c, const json_t *args)
{
	const json_t *t = json_object_get(args, "text");
	size_t n = json_string_length(t);
	struct computer_op *op;
	uint32_t *syms;
	char err[COMPUTER_ERRLEN];
	int rc = -1;

	if (n == 0) {
		mcp_call_fail(c, "text is empty");
		return;
	}
	/* Checked whole now: never a half-typed text. */
	syms = xmalloc(sizeof(*syms) * n);
	rc = computer_text_keysyms(json_string_value(t), n, syms,
	    COMPUTER_TEXT_MAX, err, sizeof(err));
	free(syms);
	if (rc < 0) {
		mcp_call_fail(c, "%s", err);
		return;
	}
	op = xcalloc(1, sizeof(*op));
	op->kind = COMPUTER_OP_TYPE;
	op->text = xmalloc(n + 1);
	memcpy(op->text, json_string_value(t), n + 1);
	op->text_len = n;
	op_start(c, op);
}

void
mcp_key(struct mcp_call *c, const json_t *args)
{
	struct computer_op *op = xcalloc(1, sizeof(*op));

	/* Parsed on the worker: names may need Xlib's database. */
	op->kind = COMPUTER_OP_KEYS;
	op->text = xstrdup(mcp_arg_str(args, "keys", ""));
	op_start(c, op);
}
