/*
 * route_upload.c -- POST /files/upload: multipart uploads written to disk
 * as they arrive.
 *
 * Memory stays flat whatever the size: the body goes through the
 * streaming multipart parser into a temporary file beside each target,
 * and every target is renamed into place only when the whole body has
 * arrived and checked out (upbody.h, which knows no HTTP).
 *
 * The body is written off the loop thread, since a hung mount under the
 * target would stop the daemon there: the loop only gathers the
 * body's bytes, and a feed job on a worker (http_req_body_work) hands them
 * to upbody_feed(), which opens and writes the temporaries.  While a
 * job runs, bytes arriving wait in a pending buffer (the body is paused
 * when it holds PENDING_MAX), and the next job takes all of them at once,
 * so a fast client costs a worker round trip per megabyte, not per read.
 * One feed job at a time per upload, so the parser and the temporaries
 * are one thread's at a time.  At the end of the body, once the feed job
 * (if any) has ended -- the request deferred meanwhile -- a last job
 * (http_req_work) feeds what is pending, checks the pairs, then syncs and
 * renames every file.  Each job has --fs-timeout: past it the client gets
 * 504 and the job is abandoned; the upload is freed when its last job's
 * done runs (whatever happened to the request meanwhile), or by abort
 * when no job runs.  A failure found by the parser on the worker is
 * answered by the job's done, with the words answered before.  Not for
 * downloads (route_download.c) nor for writing files from a JSON body
 * (route_fs.c).  Loop thread only, but for the jobs' fn.
 *
 * Under /v1/filesystem/{uid}/{gid} (route_fs_as.c) the handler runs as
 * that user; the upload keeps the identity and takes it again around each
 * job it submits (work.c runs the job, and its done, as the submitter)
 * and around an abort, so that every file is opened, created and removed
 * as that user.  A feed job removes the temporaries itself after a
 * failure it finds, or when the upload timed out or its client left
 * while it ran; what still runs on the loop thread is removing those of
 * an upload whose client left while no job ran (up_abort).
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../../../util/buf.h"
#include "../../core/cred.h"
#include "../../core/log.h"
#include "../../core/xmalloc.h"
#include "../../transport/http.h"
#include "../../transport/multipart.h"
#include "route.h"
#include "upbody.h"

#define PENDING_MAX	(1u << 20)	/* body bytes waiting for a worker */

/* An upload under way: its body's files, and what waits for a worker. */
struct upload {
	struct upbody		*body;
	struct cred		*cred;	/* the user it acts as, or NULL */
	/* Loop thread: bytes arrived while a feed job runs. */
	struct buf		 pending;
	struct buf		 feeding;	/* the running job's */
	bool			 running;	/* a job of ours is on a worker */
	bool			 ended;		/* up_end ran: the body is in */
	bool			 gone;		/* up_abort ran */
	atomic_int		 cancel;	/* no commit will come */
};

static int	 up_feed(struct http_req *, const char *, size_t, void *);
static void	 up_end(struct http_req *, void *);
static void	 up_abort(void *);
static void	 up_free(struct upload *);
static int	 feed_start(struct http_req *, struct upload *);
static void	 feed_run(void *);
static void	 feed_done(struct http_req *, void *);
static void	 finish(struct http_req *, struct upload *);
static void	 reply_identity(struct http_req *, const struct cred *, int);
static void	 up_commit(void *);
static void	 up_committed(struct http_req *, void *);
static void	 up_reply(struct http_req *, struct upload *);
static bool	 failed(const struct upload *);

/*
 * POST /files/upload: multipart pairs of a "metadata" part (JSON: path,
 * mode, owner, group) and a "file" part, paired by order.  200 only once
 * every file is in place.
 */
void
route_files_upload(struct http_req *req)
{
	const char *ct = http_req_header(req, "Content-Type");
	char boundary[128];
	struct upload *up;
	mode_t um;

	if (ct == NULL || mp_boundary(ct, boundary, sizeof(boundary)) < 0) {
		http_reply_error(req, 400, "INVALID_FILE", "multipart form is empty: "
		    "the body must be multipart/form-data with a boundary, "
		    "not %s", ct != NULL ? ct : "(no Content-Type)");
		return;
	}
	up = xcalloc(1, sizeof(*up));
	buf_init(&up->pending);
	buf_init(&up->feeding);
	um = umask(0);
	umask(um);
	/* Files created get 0777 less the umask: upstream's 0755 under 022. */
	up->body = upbody_new(boundary, 0777 & ~um);
	up->cred = cred_dup_current();
	http_req_sink(req, up_feed, up_end, up_abort, up);
}

/* Answer the recorded failure. */
static void
up_reply(struct http_req *req, struct upload *up)
{
	const char *code, *msg;
	unsigned status;
	int rc = upbody_error(up->body, &status, &code, &msg);

	if (status != 0)
		http_reply_error(req, status, code, "%s", msg);
	else
		http_reply_errno(req, rc, "%s", msg);
}

/* Whether the body failed (its failure recorded, to be answered). */
static bool
failed(const struct upload *up)
{
	const char *code, *msg;
	unsigned status;

	return upbody_error(up->body, &status, &code, &msg) < 0;
}

/* The upload's identity could not be taken. */
static void
reply_identity(struct http_req *req, const struct cred *c, int rc)
{
	http_reply_error(req, 503, HTTP_E_IDENTITY, "cannot act as uid %lu "
	    "gid %lu: %s", (unsigned long)c->uid, (unsigned long)c->gid,
	    strerror(-rc));
}

/* Body bytes as they arrive: kept for the feed job, which runs them. */
static int
up_feed(struct http_req *req, const char *p, size_t n, void *arg)
{
	struct upload *up = arg;

	buf_add(&up->pending, p, n);
	if (!up->running)
		return feed_start(req, up);
	if (up->pending.len >= PENDING_MAX && !http_req_pause(req)) {
		/* Shutting down: the body is read on, and not held. */
		http_reply_error(req, 503, HTTP_E_UNAVAILABLE,
		    "execd is shutting down");
		return -1;
	}
	return 0;
}

/* Hand what is pending to a feed job, as the upload's user; 0 or -1. */
static int
feed_start(struct http_req *req, struct upload *up)
{
	struct buf t;
	int rc;

	if ((rc = cred_enter(up->cred)) < 0) {
		reply_identity(req, up->cred, rc);
		return -1;
	}
	t = up->feeding;
	up->feeding = up->pending;
	up->pending = t;
	up->running = true;
	http_req_body_work(req, &up->cancel, feed_run, feed_done, up);
	cred_leave(up->cred);
	http_req_resume(req);	/* room again, if it was paused */
	return 0;
}

/* On a worker: the bytes through the parser (into the temporaries). */
static void
feed_run(void *arg)
{
	struct upload *up = arg;

	upbody_feed(up->body, up->feeding.p, up->feeding.len);
	buf_drain(&up->feeding, up->feeding.len);
	/* Timed out or left: the temporaries go here, not on the loop. */
	if (atomic_load(&up->cancel))
		upbody_drop(up->body);
}

/* Loop thread, as the upload's user: the next job, or the answer. */
static void
feed_done(struct http_req *req, void *arg)
{
	struct upload *up = arg;

	up->running = false;
	if (req == NULL) {
		/*
		 * Answered meanwhile (the deadline, the client gone from a
		 * deferred request, shutdown) or ended.  Before the end of
		 * the body, up_abort is still to come unless it came.
		 */
		if (up->gone || up->ended)
			up_free(up);
		return;
	}
	if (failed(up)) {
		up_reply(req, up);
		if (up->ended)	/* deferred: no abort follows */
			up_free(up);
		return;
	}
	if (up->ended)
		finish(req, up);
	else if (up->pending.len > 0 && feed_start(req, up) < 0)
		return;		/* answered; abort follows */
}

/* The whole body is in: finish once no feed job runs. */
static void
up_end(struct http_req *req, void *arg)
{
	struct upload *up = arg;

	up->ended = true;
	if (up->running)
		http_req_defer(req, NULL, NULL);	/* feed_done goes on */
	else
		finish(req, up);
}

/* The last job: what is pending, the checks, then every file in place. */
static void
finish(struct http_req *req, struct upload *up)
{
	int rc;

	if ((rc = cred_enter(up->cred)) < 0) {
		reply_identity(req, up->cred, rc);
		up_free(up);	/* its temporaries go as execd: ours */
		return;
	}
	http_req_work(req, 0, NULL, up_commit, up_committed, up);
	cred_leave(up->cred);
}

/* On a worker: feed the rest, check the pairs, sync, own and rename. */
static void
up_commit(void *arg)
{
	struct upload *up = arg;

	if (up->pending.len == 0 || upbody_feed(up->body, up->pending.p,
	    up->pending.len) == 0)
		upbody_commit(up->body);
	buf_drain(&up->pending, up->pending.len);
}

/* Back on the loop thread: answer, if the request is still there. */
static void
up_committed(struct http_req *req, void *arg)
{
	struct upload *up = arg;

	if (req != NULL) {
		if (failed(up))
			up_reply(req, up);
		else
			http_reply_empty(req);
	}
	up_free(up);
}

/*
 * The request died before the end of its body: nothing is put in place.
 * A feed job still running keeps the upload; its done frees it.
 */
static void
up_abort(void *arg)
{
	struct upload *up = arg;
	struct cred *c = up->cred;
	int rc;

	up->gone = true;
	atomic_store(&up->cancel, 1);
	if (up->running)
		return;
	if ((rc = cred_enter(c)) < 0) {
		log_warnx("upload: cannot act as uid %lu gid %lu to remove "
		    "its temporaries: %s", (unsigned long)c->uid,
		    (unsigned long)c->gid, strerror(-rc));
		up_free(up);
		return;
	}
	up->cred = NULL;
	up_free(up);
	cred_leave(c);
	cred_free(c);
}

/* Free everything; temporaries not committed are removed. */
static void
up_free(struct upload *up)
{
	upbody_free(up->body);
	buf_reset(&up->pending);
	buf_reset(&up->feeding);
	cred_free(up->cred);
	free(up);
}
