/*
 * batch.c -- a batch of code runs, each in a fresh context (batch.h).
 *
 * Each item goes through: waiting for its turn, its context starting,
 * its run (read as it comes: the batch is the run's only reader), then
 * over.  An item ends from a timer, never from inside a run's or a
 * context's callback, because only then may its run be freed and its
 * context deleted; the next waiting item starts there, and the last
 * item's end answers the batch.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/loop.h"
#include "../core/xmalloc.h"
#include "../../util/buf.h"
#include "../../util/utf8.h"
#include "batch.h"
#include "context.h"
#include "run.h"

enum item_state { I_WAIT, I_START, I_RUN, I_OVER, I_DONE };

struct item {
	struct batch		*b;
	struct batch_item	*in;
	enum item_state		 state;
	char			*ctx_id;	/* once its context exists */
	struct context		*waiting;	/* context_wait pending */
	struct run		*run;
	uint64_t		 t0;
	json_t			*out;		/* the item's answer */
	struct buf		 text[2];	/* stdout, stderr */
	size_t			 results_len;
};

struct batch {
	struct batch_opts	 o;
	struct batch_item	*in;
	struct item		*it;
	size_t			 n, next, running, left;
	uint64_t		 timer;
	batch_done_cb		*done;
	void			*arg;
};

static void	 item_start(struct item *);
static void	 item_fail(struct item *, const char *ename, const char *why);
static void	 item_ready(struct context *, const char *, void *);
static void	 item_notify(void *);
static void	 item_close(struct item *);
static void	 batch_kick(struct batch *);
static void	 batch_tick(struct loop *, uint64_t, void *);

/* One item object of a request; 0 or -EINVAL with why. */
static int
parse_item(json_t *o, size_t i, struct batch_item *it, char *err,
    size_t errlen)
{
	const char *k;
	json_t *v;

	if (!json_is_object(o)) {
		snprintf(err, errlen, "items[%zu] must be an object", i);
		return -EINVAL;
	}
	json_object_foreach(o, k, v) {
		if (strcmp(k, "code") != 0 && strcmp(k, "language") != 0 &&
		    strcmp(k, "limits") != 0 && strcmp(k, "timeout") != 0) {
			snprintf(err, errlen, "items[%zu] has an unknown "
			    "field '%s'", i, k);
			return -EINVAL;
		}
	}
	v = json_object_get(o, "code");
	if (!json_is_string(v) || json_string_length(v) == 0) {
		snprintf(err, errlen, "items[%zu].code must be a non-empty "
		    "string", i);
		return -EINVAL;
	}
	v = json_object_get(o, "language");
	if (!json_is_string(v) || json_string_length(v) == 0 ||
	    context_is_command_language(json_string_value(v))) {
		snprintf(err, errlen, "items[%zu].language must name a code "
		    "language", i);
		return -EINVAL;
	}
	v = json_object_get(o, "timeout");
	if (v != NULL && (!json_is_integer(v) || json_integer_value(v) < 0)) {
		snprintf(err, errlen, "items[%zu].timeout must be a "
		    "non-negative integer (ms)", i);
		return -EINVAL;
	}
	memset(it, 0, sizeof(*it));
	v = json_object_get(o, "limits");
	if (v != NULL && !json_is_null(v) && !json_is_object(v)) {
		snprintf(err, errlen, "items[%zu].limits must be an object",
		    i);
		return -EINVAL;
	}
	if (limits_for(&it->lim, NULL, o, err, errlen) < 0)
		return -EINVAL;
	it->timeout_ms = json_integer_value(json_object_get(o, "timeout"));
	it->code = xstrdup(json_string_value(json_object_get(o, "code")));
	it->language = xstrdup(json_string_value(json_object_get(o,
	    "language")));
	return 0;
}

int
batch_parse(const json_t *body, size_t max_items, struct batch_item **items,
    size_t *n, unsigned *conc, char *err, size_t errlen)
{
	json_t *a = json_object_get(body, "items"), *c;
	struct batch_item *it;
	size_t i, len;

	if (!json_is_array(a) || (len = json_array_size(a)) == 0) {
		snprintf(err, errlen, "'items' must be a non-empty array");
		return -EINVAL;
	}
	if (len > max_items) {
		snprintf(err, errlen, "'items' holds %zu items, more than the "
		    "%zu a batch may have", len, max_items);
		return -EINVAL;
	}
	c = json_object_get(body, "concurrency");
	if (c != NULL && (!json_is_integer(c) || json_integer_value(c) < 1 ||
	    json_integer_value(c) > 1000000)) {
		snprintf(err, errlen, "'concurrency' must be a positive "
		    "integer");
		return -EINVAL;
	}
	it = xcalloc(len, sizeof(*it));
	for (i = 0; i < len; i++) {
		if (parse_item(json_array_get(a, i), i, &it[i], err,
		    errlen) < 0) {
			batch_items_free(it, i);
			return -EINVAL;
		}
	}
	*items = it;
	*n = len;
	*conc = c != NULL ? (unsigned)json_integer_value(c) : 0;
	return 0;
}

void
batch_items_free(struct batch_item *it, size_t n)
{
	size_t i;

	if (it == NULL)
		return;
	for (i = 0; i < n; i++) {
		free(it[i].code);
		free(it[i].language);
	}
	free(it);
}

struct batch *
batch_new(struct batch_item *items, size_t n, const struct batch_opts *o,
    batch_done_cb *done, void *arg)
{
	struct batch *b = xcalloc(1, sizeof(*b));
	size_t i;

	b->o = *o;
	if (b->o.concurrency == 0)
		b->o.concurrency = 1;
	b->in = items;
	b->n = b->left = n;
	b->it = xcalloc(n, sizeof(*b->it));
	b->done = done;
	b->arg = arg;
	for (i = 0; i < n; i++) {
		b->it[i].b = b;
		b->it[i].in = &items[i];
	}
	/* Items start from the timer: done never fires inside batch_new. */
	batch_kick(b);
	return b;
}

/* Come back to the loop soon, to end and start items. */
static void
batch_kick(struct batch *b)
{
	if (b->timer == 0)
		b->timer = loop_timer_add(b->o.loop, 0, batch_tick, b);
}

static void
batch_tick(struct loop *loop, uint64_t id, void *arg)
{
	struct batch *b = arg;
	json_t *doc, *a;
	size_t i;

	b->timer = 0;
	for (i = 0; i < b->n; i++) {
		if (b->it[i].state == I_OVER) {
			item_close(&b->it[i]);
			b->running--;
			b->left--;
		}
	}
	while (b->running < b->o.concurrency && b->next < b->n) {
		b->running++;
		item_start(&b->it[b->next++]);
	}
	if (b->left > 0)
		return;
	a = json_array();
	for (i = 0; i < b->n; i++) {
		json_array_append_new(a, b->it[i].out);
		b->it[i].out = NULL;
	}
	doc = json_pack("{s:o}", "items", a);
	b->done(doc, b->arg);
	batch_free(b);
}

static void
item_start(struct item *it)
{
	char err[2048];
	struct context *c;
	int rc;

	it->state = I_START;
	it->t0 = loop_now_ms();
	it->out = json_pack("{s:s, s:s, s:[], s:n}", "stdout", "", "stderr",
	    "", "results", "error");
	buf_init(&it->text[0]);
	buf_init(&it->text[1]);
	rc = context_create_once(it->in->language, &it->in->lim, &c, err,
	    sizeof(err));
	if (rc < 0) {
		item_fail(it, rc == -ENOENT ? "LanguageNotSupported" :
		    "KernelStartError", err);
		return;
	}
	it->ctx_id = xstrdup(context_id(c));
	json_object_set_new(it->out, "context", json_string(it->ctx_id));
	it->waiting = c;
	context_wait(c, item_ready, it);	/* at once when ready */
}

/* The item ends with an error of execd's, before or without a run. */
static void
item_fail(struct item *it, const char *ename, const char *why)
{
	json_object_set_new(it->out, "error", json_pack("{s:s, s:s, s:[]}",
	    "ename", ename, "evalue", why, "traceback"));
	it->state = I_OVER;
	batch_kick(it->b);
}

static void
item_ready(struct context *c, const char *why, void *arg)
{
	struct item *it = arg;
	struct run_opts o = { .code = it->in->code,
	    .timeout_ms = it->in->timeout_ms,
	    .max_output = it->b->o.max_output,
	    .max_queue = it->b->o.max_output };

	it->waiting = NULL;
	if (why != NULL) {
		item_fail(it, "KernelStartError", why);
		return;
	}
	it->state = I_RUN;
	it->run = run_new(c, &o, item_notify, it);
	item_notify(it);
}

/* Take what the run has: the batch is its reader, never behind. */
static void
item_notify(void *arg)
{
	struct item *it = arg;
	struct sse_event ev;
	size_t len;
	char *s;
	int rc;

	if (it->state != I_RUN)
		return;
	while ((rc = run_next(it->run, &ev)) == RUN_EVENT) {
		if (strcmp(ev.type, "stdout") == 0 ||
		    strcmp(ev.type, "stderr") == 0) {
			buf_add(&it->text[ev.type[3] == 'e'], ev.text,
			    ev.text_len != 0 ? ev.text_len : strlen(ev.text));
		} else if (strcmp(ev.type, "result") == 0 &&
		    ev.results != NULL) {
			s = json_dumps(ev.results, JSON_COMPACT);
			len = s != NULL ? strlen(s) : 0;
			free(s);
			if (it->results_len + len > it->b->o.max_output) {
				json_object_set_new(it->out,
				    "results_dropped", json_true());
				continue;
			}
			it->results_len += len;
			json_array_append_new(json_object_get(it->out,
			    "results"), json_deep_copy(ev.results));
		} else if (strcmp(ev.type, "error") == 0 && ev.error != NULL) {
			json_object_set_new(it->out, "error",
			    json_deep_copy(ev.error));
		}
	}
	if (rc == RUN_OVERFLOW)
		json_object_set_new(it->out, "error", json_pack("{s:s, s:s, "
		    "s:[]}", "ename", "OutputOverflow", "evalue", "the run "
		    "gave more than its batch item keeps", "traceback"));
	if (rc == RUN_END || rc == RUN_OVERFLOW) {
		it->state = I_OVER;
		batch_kick(it->b);
	}
}

/* Text as a JSON string, its bytes that are not UTF-8 made '?'. */
static json_t *
text_json(struct buf *t)
{
	unsigned char *p = (unsigned char *)t->p;
	size_t i, k;

	for (i = 0; i < t->len; i += k)
		if ((k = utf8_len(p + i, t->len - i)) == 0) {
			p[i] = '?';
			k = 1;
		}
	return json_stringn_nocheck(t->len > 0 ? t->p : "", t->len);
}

/* An over item: its answer completed, its run and context gone. */
static void
item_close(struct item *it)
{
	struct context *c;
	json_t *o = it->out;
	int i;

	if (it->waiting != NULL)
		context_wait_cancel(it->waiting, it);
	it->waiting = NULL;
	run_free(it->run);
	it->run = NULL;
	if (it->ctx_id != NULL && (c = context_find(it->ctx_id)) != NULL)
		context_delete(c);
	for (i = 0; i < 2 && o != NULL; i++)
		json_object_set_new(o, i == 0 ? "stdout" : "stderr",
		    text_json(&it->text[i]));
	if (o != NULL) {
		json_object_set_new(o, "status", json_string(json_is_null(
		    json_object_get(o, "error")) ? "ok" : "error"));
		json_object_set_new(o, "duration_ms",
		    json_integer((json_int_t)(loop_now_ms() - it->t0)));
	}
	for (i = 0; i < 2; i++)
		buf_reset(&it->text[i]);
	free(it->ctx_id);
	it->ctx_id = NULL;
	it->state = I_DONE;
}

void
batch_free(struct batch *b)
{
	size_t i;

	if (b == NULL)
		return;
	if (b->timer != 0)
		loop_timer_cancel(b->o.loop, b->timer);
	for (i = 0; i < b->n; i++) {
		if (b->it[i].state != I_WAIT && b->it[i].state != I_DONE)
			item_close(&b->it[i]);
		json_decref(b->it[i].out);
	}
	batch_items_free(b->in, b->n);
	free(b->it);
	free(b);
}
