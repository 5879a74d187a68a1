/*
 * route_batch.c -- POST /code/batch: many code runs, one JSON answer.
 *
 * The batch is the domain's (batch.h): this file checks the request,
 * chooses how many items run at once (the request's "concurrency",
 * capped by --batch-concurrency, whose 0 means the CPU count), and
 * answers with the batch's document once every item has ended.  A client
 * that leaves first stops its batch: the runs' contexts are deleted.
 */
#include <unistd.h>

#include "../../config/conf.h"
#include "../../domain/batch.h"
#include "../../transport/http.h"
#include "../execd.h"
#include "../idem.h"
#include "../runhold.h"
#include "route.h"

/*
 * Per item: stdout and stderr cut as --max-output cuts a run, to at most
 * BATCH_ITEM_OUTPUT, and to a share of BATCH_OUTPUT, so that a whole
 * batch held until its answer stays bounded however many items it has.
 */
static size_t
item_output(const struct conf *conf, size_t n)
{
	size_t m = BATCH_ITEM_OUTPUT;

	if (conf->max_output < m)
		m = conf->max_output;
	if (BATCH_OUTPUT / n < m)
		m = BATCH_OUTPUT / n;
	return m;
}

/* How many items may run at once: --batch-concurrency, or the CPUs. */
static unsigned
batch_cap(const struct conf *conf)
{
	long n;

	if (conf->batch_conc > 0)
		return conf->batch_conc;
	n = sysconf(_SC_NPROCESSORS_ONLN);
	return n > 0 ? (unsigned)n : 1;
}

static void
batch_done(json_t *doc, void *arg)
{
	http_reply_json(arg, 200, doc);
}

static void
batch_cancel(struct http_req *req, void *arg)
{
	batch_free(arg);
}

/* POST /code/batch {"items":[{"code","language","limits","timeout"}]} */
void
route_code_batch(struct http_req *req)
{
	struct execd *app = http_req_app(req);
	struct batch_item *items;
	struct batch_opts o = { .loop = app->loop };
	struct batch *b;
	char err[1024];
	unsigned conc;
	size_t n;

	if (runhold(req, route_code_batch))
		return;	/* a restore runs: after it */
	if (idem_front(req))
		return;
	if (batch_parse(http_req_json(req), BATCH_MAX_ITEMS, &items, &n,
	    &conc, err, sizeof(err)) < 0) {
		http_reply_error(req, 400, HTTP_E_BODY, "invalid request, %s",
		    err);
		return;
	}
	o.max_output = item_output(app->conf, n);
	o.concurrency = batch_cap(app->conf);
	if (conc > 0 && conc < o.concurrency)
		o.concurrency = conc;
	b = batch_new(items, n, &o, batch_done, req);
	http_req_defer(req, batch_cancel, b);
}
