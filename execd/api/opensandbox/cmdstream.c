/*
 * cmdstream.c -- a command's events as a response (see cmdstream.h).
 *
 * The glue between a command reader, which knows a command's events but
 * no client, and a feed, which knows a client but no command: the feed
 * pulls the reader when its client has room, and the reader's notify
 * kicks the feed when there is more.  A client of stripped lines gets
 * what the reader pulls through outstream_strip.
 */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "../../config/conf.h"
#include "../../core/xmalloc.h"
#include "../../domain/command.h"
#include "../../domain/outstream.h"
#include "../../transport/feed.h"
#include "../../transport/http.h"
#include "../execd.h"
#include "cmdstream.h"

struct cmdstream {
	struct command_reader	*rd;
	struct feed		*feed;	/* NULL while feed_reply pulls first */
	bool			 strip;	/* terminators taken off */
	struct outstream_strip	 st;
	struct buf		 raw;	/* strip: what the reader gave */
};

static bool	 version_at_least(const char *, unsigned, unsigned,
		    unsigned);

/* "X.Y.Z" at v (then the end, a blank, or a pre-release "-..."). */
static bool
version_at_least(const char *v, unsigned x, unsigned y, unsigned z)
{
	unsigned long part[3];
	char *end;

	for (int i = 0; i < 3; i++) {
		if (!isdigit((unsigned char)*v))
			return false;
		part[i] = strtoul(v, &end, 10);
		v = end;
		if (i < 2 && *v++ != '.')
			return false;
	}
	if (part[0] != x)
		return part[0] > x;
	if (part[1] != y)
		return part[1] > y;
	if (part[2] != z)
		return part[2] > z;
	return *v != '-';	/* 1.1.1-rc.1 comes before 1.1.1 */
}

/* See cmdstream.h. */
bool
cmdstream_sdk_keeps(const char *ua)
{
	const char *p, *name, *slash;

	for (p = ua; p != NULL && (p = strstr(p, "OpenSandbox-")) != NULL;
	    p++) {
		if (p != ua && !isspace((unsigned char)p[-1]))
			continue;		/* inside another product */
		name = p + strlen("OpenSandbox-");
		if ((slash = strchr(name, '/')) == NULL || slash - name < 5 ||
		    memcmp(slash - 4, "-SDK", 4) != 0)
			continue;
		for (const char *c = name; c < slash - 4; c++)
			if (!isalnum((unsigned char)*c))
				goto next;
		return version_at_least(slash + 1, 1, 1, 1);
next:
		;
	}
	return false;
}

/* See cmdstream.h. */
int
cmdstream_line_endings(struct http_req *req, bool *keep)
{
	const struct execd *app = http_req_app(req);
	json_t *v = json_object_get(http_req_json(req), "line_endings");
	const char *s = NULL;

	if (v != NULL && !json_is_null(v))
		s = json_is_string(v) ? json_string_value(v) : "";
	else
		s = http_req_query(req, "line_endings");
	if (s != NULL) {
		if (strcmp(s, "keep") != 0 && strcmp(s, "strip") != 0) {
			http_reply_error(req, 400, HTTP_E_BODY, "invalid "
			    "request, line_endings must be \"keep\" or "
			    "\"strip\"");
			return -EINVAL;
		}
		*keep = strcmp(s, "keep") == 0;
		return 0;
	}
	switch (app->conf->line_endings) {
	case CONF_ENDINGS_STRIP:
		*keep = false;
		break;
	case CONF_ENDINGS_KEEP:
		*keep = true;
		break;
	default:
		*keep = cmdstream_sdk_keeps(http_req_header(req,
		    "User-Agent"));
		break;
	}
	return 0;
}

static int	 on_pull(struct buf *, void *);
static void	 on_notify(void *);
static void	 on_gone(void *);

int
cmdstream_reply(struct http_req *req, struct command *c, uint64_t after)
{
	struct cmdstream *cs = xcalloc(1, sizeof(*cs));
	bool keep;
	int rc;

	_Static_assert(COMMAND_MORE == FEED_MORE && COMMAND_WAIT ==
	    FEED_WAIT && COMMAND_END == FEED_END, "a reader's pull is a "
	    "feed's");
	if ((rc = cmdstream_line_endings(req, &keep)) < 0) {
		free(cs);
		return rc;
	}
	/* A background command's events are lines already (its file's). */
	cs->strip = !keep && !c->background;
	outstream_strip_init(&cs->st);
	buf_init(&cs->raw);
	if ((rc = command_reader_new(c, after, on_notify, cs, &cs->rd)) < 0) {
		free(cs);
		return rc;
	}
	/* Answered from here on (a failed stream got 500). */
	if ((cs->feed = feed_reply(req, on_pull, on_gone, cs)) == NULL)
		on_gone(cs);
	return 0;
}

void
cmdstream_replay(struct http_req *req, const char *id)
{
	struct command *c = command_find(id);
	int rc;

	if (c == NULL) {
		http_reply_error(req, 404, HTTP_E_NOT_FOUND, "command %s, "
		    "which this request started, is no longer kept", id);
		return;
	}
	if ((rc = cmdstream_reply(req, c, 0)) < 0 && rc != -EINVAL)
		http_reply_errno(req, rc, "cannot read command %s", id);
}

/* The feed wants more: the reader's next events. */
static int
on_pull(struct buf *out, void *arg)
{
	struct cmdstream *cs = arg;
	int rc;

	if (!cs->strip)
		return command_reader_pull(cs->rd, out, FEED_CHUNK);
	rc = command_reader_pull(cs->rd, &cs->raw, FEED_CHUNK);
	outstream_strip(&cs->st, out, cs->raw.p, cs->raw.len);
	buf_drain(&cs->raw, cs->raw.len);
	return rc;
}

/* The reader has more: the feed pulls if its client has room. */
static void
on_notify(void *arg)
{
	struct cmdstream *cs = arg;

	if (cs->feed != NULL)
		feed_kick(cs->feed);
}

/* The client left (or no stream was made): the command runs on. */
static void
on_gone(void *arg)
{
	struct cmdstream *cs = arg;

	command_reader_free(cs->rd);
	buf_reset(&cs->raw);
	free(cs);
}
