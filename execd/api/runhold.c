/*
 * runhold.c -- requests held at the run gate.  See runhold.h.
 */
#include <stdlib.h>

#include "../core/xmalloc.h"
#include "../domain/rungate.h"
#include "runhold.h"

struct held {
	struct http_req		*req;
	http_handler		*handler;
	struct rungate_wait	*w;
};

/* The gate opened: the handler again, which may hold the request anew. */
static void
go(void *arg)
{
	struct held *h = arg;
	struct http_req *req = h->req;
	http_handler *handler = h->handler;

	free(h);
	http_req_defer(req, NULL, NULL);	/* h is gone */
	handler(req);
}

/* The client left, or execd stops: nothing runs for it. */
static void
cancel(struct http_req *req, void *arg)
{
	struct held *h = arg;

	(void)req;
	rungate_cancel(h->w);
	free(h);
}

bool
runhold(struct http_req *req, http_handler *handler)
{
	struct held *h;

	if (!rungate_closed())
		return false;
	h = xmalloc(sizeof(*h));
	h->req = req;
	h->handler = handler;
	h->w = rungate_wait(go, h);
	http_req_defer(req, cancel, h);
	return true;
}
