/*
 * fuzz_cmdlog.c -- fuzz target for the command history and its replay
 * reader (execd/cmdlog.c), through cmdlog.h only.
 *
 * Byte 0 picks the cap (tiny, so that files rotate and old ones go, or
 * the default) and the pull chunk; byte 1 the "after" of the readers.
 * The rest, cut at NUL bytes, is the text of stdout events numbered from
 * 1, appended as the command would (a text starting with 0x01 starts a
 * new append; else it joins the batch).  A reader opened before the first
 * event follows the log live, pulling after every append; two more open
 * at the end, from 0 and from "after".  In raw mode (byte 0 bit 7) the
 * input after byte 1 is appended as is, ending "\n\n": arbitrary bytes
 * where events belong.  Invariants, any break aborts: a reader gives
 * whole events, each byte for byte one appended, with numbers rising
 * above its "after"; with nothing dropped (the default cap) it gives
 * every event above "after", in order, and no history_gap; with a tiny
 * cap a missing run is announced by a history_gap before the next event;
 * every reader ends (FEED_END) once the log has ended and been read; in
 * raw mode a reader gives no more than the bytes appended and a
 * history_gap per jump.
 */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "../../execd/domain/cmdlog.h"
#include "../../execd/transport/feed.h"
#include "../../sse/sse_fmt.h"
#include "fz.h"

#define MAX_EVENTS	512

static char	 dir[256];

struct ev {
	size_t	 off, len;	/* in the appended bytes */
};

struct rd {
	struct cmdlog_reader	*r;
	uint64_t		 after;
	uint64_t		 last;	/* the last number seen, or after */
	bool			 gap;	/* a history_gap is pending */
	bool			 gaps;	/* any history_gap */
	bool			 ended;
	size_t			 nbytes;
	struct buf		 rest;	/* bytes pulled, not yet checked */
};

static struct buf	 all;	/* every event appended */
static struct ev	 evs[MAX_EVENTS + 1];	/* by number */
static uint64_t		 nev;
static bool		 raw;

/* Check the whole events in r->rest; keep an incomplete tail. */
static void
check_events(struct rd *r)
{
	const char *p = r->rest.p, *e;
	size_t n = r->rest.len, m;
	json_t *v, *seq;
	json_error_t je;
	uint64_t s;

	if (raw) {
		buf_drain(&r->rest, n);
		return;
	}
	while (n > 0 && (e = memmem(p, n, "\n\n", 2)) != NULL) {
		m = (size_t)(e - p) + 2;
		v = json_loadb(p, m - 2, 0, &je);
		CHECK(json_is_object(v));
		if (strcmp(json_string_value(json_object_get(v, "type")) ?: "",
		    "history_gap") == 0) {
			CHECK(json_object_get(v, "seq") == NULL);
			CHECK(!r->gap);
			r->gap = r->gaps = true;
		} else {
			seq = json_object_get(v, "seq");
			CHECK(json_is_integer(seq));
			s = (uint64_t)json_integer_value(seq);
			CHECK(s > r->last && s <= nev);
			/* A jump is said first, and a gap is a jump. */
			CHECK((s == r->last + 1) == !r->gap);
			CHECK(m == evs[s].len &&
			    memcmp(p, all.p + evs[s].off, m) == 0);
			r->last = s;
			r->gap = false;
		}
		json_decref(v);
		p += m;
		n -= m;
	}
	buf_drain(&r->rest, r->rest.len - n);
}

/* Pull until the reader waits or ends. */
static void
drain(struct rd *r, size_t chunk)
{
	struct buf out;
	int rc;

	for (int i = 0; i < 100000 && !r->ended; i++) {
		buf_init(&out);
		rc = cmdlog_reader_pull(r->r, &out, chunk);
		CHECK(rc == FEED_MORE || rc == FEED_WAIT || rc == FEED_END);
		r->nbytes += out.len;
		buf_add(&r->rest, out.p != NULL ? out.p : "", out.len);
		buf_reset(&out);
		check_events(r);
		if (rc == FEED_END)
			r->ended = true;
		if (rc != FEED_MORE)
			return;
	}
	CHECK(!"a reader that never waits");
}

static void
rd_open(struct rd *r, struct cmdlog *l, uint64_t after)
{
	memset(r, 0, sizeof(*r));
	r->after = after;
	r->last = after;
	buf_init(&r->rest);
	r->r = cmdlog_reader_new(l, after, NULL, NULL);
	CHECK(cmdlog_reader_last(r->r) == after);
}

/* At the end: everything read, whole, and all of it when none dropped. */
static void
rd_close(struct rd *r, bool lossless)
{
	CHECK(r->ended);
	CHECK(r->rest.len == 0);
	if (!raw) {
		if (lossless)
			CHECK(!r->gaps);
		/* The final event is always kept. */
		CHECK(r->last == (nev > r->after ? nev : r->after));
	} else {
		/* Only history_gap events (< 512 bytes each) add bytes. */
		CHECK(r->nbytes <= all.len + 512 * (all.len / 2 + 1));
	}
	buf_reset(&r->rest);
	cmdlog_reader_free(r->r);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const size_t chunks[] = { 1, 7, 100, FEED_CHUNK };
	struct cmdlog *l;
	struct buf batch;
	struct sse_event e = { .type = "stdout" };
	struct rd live, from0, fromafter;
	char prefix[300], *t;
	const char *p, *end, *z;
	size_t cap, chunk;
	uint64_t after;
	bool lossless;

	if (size < 2)
		return 0;
	if (dir[0] == '\0') {
		snprintf(dir, sizeof(dir), "%s/fuzz_cmdlog.XXXXXX", P_tmpdir);
		if (mkdtemp(dir) == NULL)
			abort();
	}
	raw = (data[0] & 0x80) != 0;
	lossless = (data[0] & 1) == 0;
	cap = lossless ? CMDLOG_CAP : 300 + 50 * (data[0] >> 4 & 7);
	chunk = chunks[data[0] >> 1 & 3];
	snprintf(prefix, sizeof(prefix), "%s/c", dir);
	CHECK(cmdlog_new(prefix, cap, lossless ? CMDLOG_LAG : 0, &l) == 0);
	buf_init(&all);
	buf_init(&batch);
	nev = 0;
	rd_open(&live, l, 0);
	p = (const char *)data + 2;
	end = (const char *)data + size;
	if (raw) {
		buf_add(&all, p, (size_t)(end - p));
		buf_add(&all, "\n\n", 2);
		CHECK(cmdlog_append(l, all.p, all.len) == 0);
		drain(&live, chunk);
	}
	while (!raw && p < end && nev < MAX_EVENTS) {
		if ((z = memchr(p, '\0', (size_t)(end - p))) == NULL)
			z = end;
		if (*p == '\1' && batch.len > 0) {
			CHECK(cmdlog_append(l, batch.p, batch.len) == 0);
			buf_drain(&batch, batch.len);
			drain(&live, chunk);
		}
		if ((t = strndup(p, (size_t)(z - p))) == NULL)
			abort();
		e.text = t;
		e.text_len = strlen(t);
		e.seq = ++nev;
		e.timestamp = 1700000000000 + (int64_t)nev;
		evs[nev].off = all.len;
		sse_fmt_event(&all, &e);
		evs[nev].len = all.len - evs[nev].off;
		buf_add(&batch, all.p + evs[nev].off, evs[nev].len);
		free(t);
		p = z + 1;
	}
	if (batch.len > 0)
		CHECK(cmdlog_append(l, batch.p, batch.len) == 0);
	buf_reset(&batch);
	drain(&live, chunk);
	cmdlog_end(l);
	CHECK(cmdlog_append(l, "x", 1) == -EPIPE);
	after = data[1] % (nev + 2);
	rd_open(&from0, l, 0);
	rd_open(&fromafter, l, after);
	CHECK(cmdlog_readers(l) == 3);
	drain(&live, chunk);
	drain(&from0, chunk);
	drain(&fromafter, chunk);
	rd_close(&live, lossless);
	rd_close(&from0, lossless);
	rd_close(&fromafter, lossless);
	CHECK(cmdlog_readers(l) == 0);
	cmdlog_free(l);
	buf_reset(&all);
	return 0;
}
