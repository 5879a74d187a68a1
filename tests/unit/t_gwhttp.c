/*
 * t_gwhttp.c -- the event-stream reader of the MCP gateway's HTTP client
 * (gwhttp_sse_line): lines taken whole, data joined, events ended by a
 * blank line, the rest skipped, and nothing read from an empty buffer
 * (whose pointer is NULL before anything came).
 */
#include <string.h>

#include "../../execd/api/mcp/gwhttp.h"
#include "../../util/buf.h"
#include "../t.h"

/* Feed s line by line; the events joined with '|' into out. */
static void
events(const char *s, char *out, size_t outlen)
{
	struct buf data;
	size_t n = strlen(s), used;
	int rc;

	buf_init(&data);
	out[0] = '\0';
	while ((rc = gwhttp_sse_line(s, n, &data, &used)) >= 0) {
		T_OK(used > 0 && used <= n);
		s += used;
		n -= used;
		if (rc == 1) {
			strncat(out, data.p, outlen - strlen(out) - 2);
			strcat(out, "|");
			buf_truncate(&data, 0);
		}
	}
	T_EQ_INT(used, 0);
	buf_reset(&data);
}

static void
test_nothing_yet(void)
{
	struct buf data;
	size_t used = 7;

	buf_init(&data);
	/* A body with nothing in it yet: its pointer is NULL. */
	T_EQ_INT(gwhttp_sse_line(NULL, 0, &data, &used), -1);
	T_EQ_INT(used, 0);
	T_EQ_INT(gwhttp_sse_line("data: x", 7, &data, &used), -1);
	T_EQ_INT(data.len, 0);
	buf_reset(&data);
}

static void
test_events(void)
{
	char out[256];

	events("data: {\"a\":1}\n\n", out, sizeof(out));
	T_EQ_STR(out, "{\"a\":1}|");
	/* CRLF, two data lines joined, comments, id and event skipped. */
	events(": hi\r\nid: 3\r\nevent: message\r\ndata: one\r\ndata:two\r\n"
	    "\r\n\ndata: three\n\ndata: unfinished\n", out, sizeof(out));
	T_EQ_STR(out, "one\ntwo|three|");
}

int
main(void)
{
	static const struct t_case cases[] = {
		{ "nothing_yet", test_nothing_yet },
		{ "events", test_events },
	};

	return T_RUN(cases);
}
