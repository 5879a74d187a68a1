/*
 * batch.h -- a batch of code runs: each item runs in a fresh context of
 * its own (deleted when the item ends), at most a given number at once,
 * and what every run gave is gathered into one JSON document, in item
 * order.
 *
 * An item is a code run (run.h) read to its end: its stdout and stderr
 * (cut as a run cuts them, to max_output), its results (MIME bundles,
 * text/plain named "text"; those past max_output bytes are dropped and
 * the item says so), its error, a status and its duration.  A failing
 * item (an error, a kernel that would not start or died) does not stop
 * the others.  Loop thread only.
 */
#ifndef EXECD_BATCH_H
#define EXECD_BATCH_H

#include <stddef.h>

#include <jansson.h>

#include "../process/limits.h"

struct loop;
struct batch;

#define BATCH_MAX_ITEMS		1000		/* items per batch */
#define BATCH_ITEM_OUTPUT	(1 << 20)	/* text, results per item */
#define BATCH_OUTPUT		(64 << 20)	/* ... and over all items */

struct batch_item {
	char		*code;
	char		*language;
	long long	 timeout_ms;	/* 0: none */
	struct limits	 lim;		/* the item's own, over defaults */
};

/*
 * Read a request {"items": [{"code","language","limits"?,"timeout"?}],
 * "concurrency"?}: the items into *items (n of them, 1 to max_items;
 * the caller frees them with batch_items_free) and the concurrency asked
 * (0: none asked) into *conc.  0, or -EINVAL with why in err and nothing
 * set.
 */
int	batch_parse(const json_t *body, size_t max_items,
	    struct batch_item **items, size_t *n, unsigned *conc, char *err,
	    size_t errlen);
void	batch_items_free(struct batch_item *, size_t n);

struct batch_opts {
	struct loop	*loop;
	unsigned	 concurrency;	/* items at once, at least 1 */
	size_t		 max_output;	/* per item, text and results each */
};

/*
 * The batch is over: doc is {"items": [{"status": "ok"|"error",
 * "stdout", "stderr", "results": [...], "error": {...}|null,
 * "duration_ms", "context"}]}, the callee's.  Called once, from the
 * loop, never from inside batch_new(); the batch frees itself after
 * this returns (batch_free must not be called then).
 */
typedef void	batch_done_cb(json_t *doc, void *arg);

/*
 * Start the items (taken: freed with the batch).  Never fails: an item
 * that cannot start ends at once as an error.
 */
struct batch	*batch_new(struct batch_item *items, size_t n,
		    const struct batch_opts *, batch_done_cb *done, void *arg);
/*
 * Stop a batch before its end: runs are abandoned, their contexts
 * deleted, done never called.  NULL is fine.
 */
void		 batch_free(struct batch *);

#endif
