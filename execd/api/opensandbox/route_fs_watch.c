/*
 * route_fs_watch.c -- GET /files/watch: a stream of filesystem events
 * (inotify, through fs_watch.h) for a path, or a whole tree.
 *
 * Setting a recursive watch up scans the tree, so it is made on a worker
 * (http_req_work); then the stream (evstream.h) is opened on the loop
 * and the inotify descriptor polled there, each event pushed as one JSON
 * object until the client leaves or the path goes away.  Loop thread
 * only, but for watch_run.
 */
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../../fs/fs_watch.h"
#include "../../core/loop.h"
#include "../../core/xmalloc.h"
#include "../../domain/fileops.h"
#include "../../transport/evstream.h"
#include "../../transport/http.h"
#include "../reqpath.h"
#include "route.h"

/* A watch being made on a worker (http_req_work). */
struct watchop {
	char		 path[PATH_MAX];
	bool		 recursive;
	struct fs_watch	*watch;		/* made on the worker */
	int		 rc;
	char		 err[FILEOPS_ERRLEN];
};

/* A watch streaming to its client. */
struct watcher {
	struct loop		*loop;
	struct evstream		*s;
	struct fs_watch		*w;
	int			 fd;
	bool			 polled;	/* fd is on the loop */
};

static void	 watch_run(void *);
static void	 watch_done(struct http_req *, void *);
static void	 watch_open(struct http_req *, struct fs_watch *);
static void	 watch_ready(struct loop *, int, void *, int, void *);
static int	 watch_event(const struct fs_watch_event *, void *);
static void	 watch_push(struct watcher *, json_t *);
static void	 watch_gone(void *);

/*
 * GET /files/watch?path=P[&recursive=true]: a stream of filesystem events,
 * {"type":"create","path":"/p/x","dir":false,"timestamp":...}, until the
 * client leaves or the path goes away.
 */
void
route_files_watch(struct http_req *req)
{
	const char *rec = http_req_query(req, "recursive");
	char path[PATH_MAX];
	struct watchop *op;

	if (reqpath_query(req, path, sizeof(path)) < 0)
		return;
	op = xcalloc(1, sizeof(*op));
	snprintf(op->path, sizeof(op->path), "%s", path);
	op->recursive = rec != NULL && strcmp(rec, "true") == 0;
	http_req_work(req, 0, NULL, watch_run, watch_done, op);
}

/* On a worker: a recursive watch scans the tree, seconds on a big one. */
static void
watch_run(void *arg)
{
	struct watchop *op = arg;

	op->watch = fs_watch_new(op->path, &(struct fs_watch_opts){
	    .recursive = op->recursive }, op->err, sizeof(op->err));
	if (op->watch == NULL)
		op->rc = -errno;
}

/* Back on the loop thread: stream, if the request is still there. */
static void
watch_done(struct http_req *req, void *arg)
{
	struct watchop *op = arg;

	if (req == NULL) {
		/* The client left: nothing to say. */
	} else if (op->rc < 0) {
		http_reply_errno(req, op->rc, "cannot watch %s: %s", op->path,
		    op->err[0] != '\0' ? op->err : strerror(-op->rc));
	} else {
		watch_open(req, op->watch);
		op->watch = NULL;
	}
	fs_watch_free(op->watch);
	free(op);
}

/* The watch is in place: stream its events (fw is consumed). */
static void
watch_open(struct http_req *req, struct fs_watch *fw)
{
	struct watcher *w;
	struct evstream_opts o = { .shape = EVSTREAM_WATCH,
	    .gone = watch_gone };

	w = xcalloc(1, sizeof(*w));
	w->loop = http_req_loop(req);
	w->w = fw;
	w->fd = fs_watch_fd(fw);
	o.arg = w;
	/*
	 * The stream layer's pings also wake a quiet (suspended) stream,
	 * so the inotify descriptor goes soon after its client does.
	 */
	if ((w->s = evstream_open(req, &o)) == NULL) {
		fs_watch_free(fw);
		free(w);
		return;
	}
	if (evstream_ended(w->s))	/* opened during shutdown */
		return;
	loop_add_fd(w->loop, w->fd, LOOP_READ, watch_ready, w);
	w->polled = true;
}

static void
watch_ready(struct loop *l, int fd, void *zs, int rev, void *arg)
{
	struct watcher *w = arg;
	int rc;

	if ((rc = fs_watch_read(w->w, watch_event, w)) < 0 &&
	    !evstream_ended(w->s)) {
		watch_push(w, json_pack("{s:s, s:s}", "type", "error",
		    "error", strerror(-rc)));
	}
	if (evstream_ended(w->s) && w->polled) {
		loop_del(l, w->fd, NULL);
		w->polled = false;
	}
}

static int
watch_event(const struct fs_watch_event *ev, void *arg)
{
	struct watcher *w = arg;
	json_t *v;

	if (evstream_ended(w->s))
		return -EPIPE;
	v = json_pack("{s:s, s:b}", "type", fs_watch_kind_name(ev->kind),
	    "dir", ev->dir);
	fileops_json_path(v, ev->path);
	if (ev->cookie != 0)
		json_object_set_new(v, "cookie", json_integer(ev->cookie));
	watch_push(w, v);
	if (ev->kind == FS_W_GONE && !evstream_ended(w->s))
		evstream_end(w->s, NULL, 0);
	return 0;
}

/* Queue one event, stamped (v is consumed); see evstream_push. */
static void
watch_push(struct watcher *w, json_t *v)
{
	json_object_set_new(v, "timestamp", json_integer((json_int_t)
	    loop_wall_ms()));
	(void)evstream_json(w->s, v);
}

static void
watch_gone(void *arg)
{
	struct watcher *w = arg;

	if (w->polled)
		loop_del(w->loop, w->fd, NULL);
	fs_watch_free(w->w);
	free(w);
}
