/*
 * cmdstream.c -- a command's events as a response (see cmdstream.h).
 *
 * The glue between a command reader, which knows a command's events but
 * no client, and a feed, which knows a client but no command: the feed
 * pulls the reader when its client has room, and the reader's notify
 * kicks the feed when there is more.
 */
#include <stdlib.h>

#include "../../core/xmalloc.h"
#include "../../domain/command.h"
#include "../../transport/feed.h"
#include "cmdstream.h"

struct cmdstream {
	struct command_reader	*rd;
	struct feed		*feed;	/* NULL while feed_reply pulls first */
};

static int	 on_pull(struct buf *, void *);
static void	 on_notify(void *);
static void	 on_gone(void *);

int
cmdstream_reply(struct http_req *req, struct command *c, uint64_t after)
{
	struct cmdstream *cs = xcalloc(1, sizeof(*cs));
	int rc;

	_Static_assert(COMMAND_MORE == FEED_MORE && COMMAND_WAIT ==
	    FEED_WAIT && COMMAND_END == FEED_END, "a reader's pull is a "
	    "feed's");
	if ((rc = command_reader_new(c, after, on_notify, cs, &cs->rd)) < 0) {
		free(cs);
		return rc;
	}
	/* Answered from here on (a failed stream got 500). */
	if ((cs->feed = feed_reply(req, on_pull, on_gone, cs)) == NULL)
		on_gone(cs);
	return 0;
}

/* The feed wants more: the reader's next events. */
static int
on_pull(struct buf *out, void *arg)
{
	struct cmdstream *cs = arg;

	return command_reader_pull(cs->rd, out, FEED_CHUNK);
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
	free(cs);
}
