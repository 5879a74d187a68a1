/*
 * route_upload.c -- POST /files/upload: multipart uploads written to disk
 * as they arrive.
 *
 * Memory stays flat whatever the size: the body goes through the
 * streaming multipart parser into a temporary file beside each target
 * (fs_atomic, whose journal lets the next start remove what a crash left),
 * and every target is renamed into place only when the whole body has
 * arrived and checked out, so an upload cut off midway leaves the old
 * files as they were and no debris.
 *
 * The body is written off the loop thread, since a hung mount under the
 * target would stop the daemon there: the loop only gathers the
 * body's bytes, and a feed job on a worker (http_req_body_work) hands them
 * to the parser, whose callbacks open and write the temporaries.  While a
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
#include <limits.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../../../fs/fs_atomic.h"
#include "../../../fs/fs_ops.h"
#include "../../../fs/fs_path.h"
#include "../../../util/buf.h"
#include "../../core/cred.h"
#include "../../core/log.h"
#include "../../core/xmalloc.h"
#include "../../transport/body.h"
#include "../../transport/http.h"
#include "../../transport/multipart.h"
#include "route.h"

#define E_FILE		"INVALID_FILE"
#define E_META		"INVALID_FILE_METADATA"
#define E_CONTENT	"INVALID_FILE_CONTENT"
#define META_MAX	65536	/* bytes of one metadata part */
#define PAIRS_MAX	4096	/* metadata/file pairs in one request */
#define ERRLEN		(PATH_MAX + 256)
#define PENDING_MAX	(1u << 20)	/* body bytes waiting for a worker */

static const struct body_field meta_fields[] = {
	{ "path", BODY_STRING, 0 },
	{ "mode", BODY_INT, 0 },
	{ "owner", BODY_STRING, 0 },
	{ "group", BODY_STRING, 0 },
	BODY_END
};

/* One metadata part, checked: where its file goes and how. */
struct target {
	char		path[PATH_MAX];
	mode_t		mode;		/* 0: keep or default */
	uid_t		uid;
	gid_t		gid;
};

enum part { P_SKIP, P_META, P_FILE };

struct upload {
	struct mp		*mp;
	enum part		 part;
	struct buf		 meta;		/* the metadata part so far */
	struct target		*targets;	/* one per metadata part */
	size_t			 ntargets, cap;
	struct fs_atomic	*files;		/* one per file part */
	size_t			 nfiles;
	mode_t			 newmode;	/* for files created */
	struct cred		*cred;	/* the user it acts as, or NULL */
	/* Loop thread: bytes arrived while a feed job runs. */
	struct buf		 pending;
	struct buf		 feeding;	/* the running job's */
	bool			 running;	/* a job of ours is on a worker */
	bool			 ended;		/* up_end ran: the body is in */
	bool			 gone;		/* up_abort ran */
	atomic_int		 cancel;	/* no commit will come */
	/* The first failure, answered by the sink. */
	int			 rc;
	unsigned		 status;	/* 0: from rc */
	const char		*code;
	char			 msg[ERRLEN];
};

static int	 up_part(const struct mp_part *, void *);
static int	 up_data(const char *, size_t, void *);
static int	 up_end_part(void *);
static int	 up_feed(struct http_req *, const char *, size_t, void *);
static void	 up_end(struct http_req *, void *);
static void	 up_abort(void *);
static void	 up_free(struct upload *);
static int	 feed_start(struct http_req *, struct upload *);
static void	 feed_run(void *);
static void	 feed_done(struct http_req *, void *);
static void	 finish(struct http_req *, struct upload *);
static void	 drop_files(struct upload *);
static void	 reply_identity(struct http_req *, const struct cred *, int);
static void	 up_commit(void *);
static void	 check_pairs(struct upload *);
static void	 up_committed(struct http_req *, void *);
static int	 up_fail(struct upload *, unsigned, const char *,
		    const char *, ...) __attribute__((format(printf, 4, 5)));
static int	 up_fail_errno(struct upload *, int, const char *,
		    const char *, const char *);
static void	 up_reply(struct http_req *, struct upload *);

static const struct mp_cbs up_cbs = { up_part, up_data, up_end_part };

/* Record the first failure (status 0: map rc); returns rc. */
static int
up_fail(struct upload *up, unsigned status, const char *code,
    const char *fmt, ...)
{
	va_list ap;

	if (up->rc < 0)
		return up->rc;
	up->status = status;
	up->code = code;
	up->rc = -EINVAL;
	va_start(ap, fmt);
	vsnprintf(up->msg, sizeof(up->msg), fmt, ap);
	va_end(ap);
	return up->rc;
}

/* Record a failed system call (the status comes from rc). */
static int
up_fail_errno(struct upload *up, int rc, const char *what, const char *path,
    const char *err)
{
	if (up->rc < 0)
		return up->rc;
	up->rc = rc;
	up->status = 0;
	snprintf(up->msg, sizeof(up->msg), "%s %s. %s", what, path,
	    err != NULL && err[0] != '\0' ? err : strerror(-rc));
	return rc;
}

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
		http_reply_error(req, 400, E_FILE, "multipart form is empty: "
		    "the body must be multipart/form-data with a boundary, "
		    "not %s", ct != NULL ? ct : "(no Content-Type)");
		return;
	}
	up = xcalloc(1, sizeof(*up));
	buf_init(&up->meta);
	buf_init(&up->pending);
	buf_init(&up->feeding);
	um = umask(0);
	umask(um);
	up->newmode = 0777 & ~um;	/* upstream: 0755 under umask 022 */
	up->mp = mp_new(boundary, &up_cbs, up);
	up->cred = cred_dup_current();
	http_req_sink(req, up_feed, up_end, up_abort, up);
}

/* A part's headers: decide what it is. */
static int
up_part(const struct mp_part *p, void *arg)
{
	struct upload *up = arg;
	struct target *t;
	char err[ERRLEN];
	int rc;

	if (strcmp(p->name, "metadata") == 0) {
		up->part = P_META;
		buf_reset(&up->meta);
		return 0;
	}
	if (strcmp(p->name, "file") != 0) {
		up->part = P_SKIP;	/* other form fields are ignored */
		return 0;
	}
	if (up->nfiles >= up->ntargets)
		return up_fail(up, 400, E_META, "metadata file is missing: "
		    "file part %zu has no metadata part before it",
		    up->nfiles + 1);
	t = &up->targets[up->nfiles];
	up->files = xreallocarray(up->files, up->nfiles + 1,
	    sizeof(*up->files));
	err[0] = '\0';
	if ((rc = fs_atomic_open(&up->files[up->nfiles], t->path, up->newmode,
	    err, sizeof(err))) < 0)
		return up_fail_errno(up, rc, "error opening destination file",
		    t->path, err);
	up->nfiles++;
	up->part = P_FILE;
	return 0;
}

/* Bytes of the current part. */
static int
up_data(const char *p, size_t n, void *arg)
{
	struct upload *up = arg;
	struct fs_atomic *fa;
	int rc;

	switch (up->part) {
	case P_META:
		if (up->meta.len + n > META_MAX)
			return up_fail(up, 400, E_META, "invalid metadata "
			    "format. a metadata part is larger than %d bytes",
			    META_MAX);
		buf_add(&up->meta, p, n);
		return 0;
	case P_FILE:
		fa = &up->files[up->nfiles - 1];
		if ((rc = fs_atomic_write(fa, p, n)) < 0)
			return up_fail_errno(up, rc, "error copying file",
			    fa->path, NULL);
		return 0;
	case P_SKIP:
		return 0;
	}
	return 0;
}

/* The end of a part: a metadata part is checked here, all of it. */
static int
up_end_part(void *arg)
{
	struct upload *up = arg;
	struct target t;
	json_t *v;
	json_error_t je;
	char err[ERRLEN];
	const char *path;

	if (up->part != P_META)
		return 0;
	up->part = P_SKIP;
	v = json_loadb(up->meta.p != NULL ? up->meta.p : "", up->meta.len, 0,
	    &je);
	if (v == NULL)
		return up_fail(up, 400, E_META, "invalid metadata format. %s",
		    je.text);
	if (body_check_table(v, "metadata", meta_fields, err,
	    sizeof(err)) < 0) {
		json_decref(v);
		return up_fail(up, 400, E_META, "invalid metadata format. %s",
		    err);
	}
	path = body_str(v, "path", "");
	memset(&t, 0, sizeof(t));
	if (path[0] == '\0') {
		json_decref(v);
		return up_fail(up, 400, E_META, "metadata path is empty");
	}
	if (fs_path_resolve(path, json_string_length(json_object_get(v,
	    "path")), cred_home(), t.path, sizeof(t.path)) < 0) {
		up_fail(up, 400, E_META, "invalid metadata path '%s': paths "
		    "must be absolute or start with ~", path);
		json_decref(v);
		return up->rc;
	}
	if (fs_mode_parse(body_int(v, "mode", 0), &t.mode) < 0) {
		up_fail(up, 400, E_META, "invalid metadata mode %lld: octal "
		    "digits such as 644 are expected", body_int(v, "mode", 0));
		json_decref(v);
		return up->rc;
	}
	if (fs_owner_lookup(body_str(v, "owner", NULL), body_str(v, "group",
	    NULL), &t.uid, &t.gid, err, sizeof(err)) < 0) {
		json_decref(v);
		return up_fail(up, 400, E_META, "invalid metadata. %s", err);
	}
	json_decref(v);
	if (up->ntargets == PAIRS_MAX)
		return up_fail(up, 400, E_FILE, "more than %d files in one "
		    "upload", PAIRS_MAX);
	if (up->ntargets == up->cap) {
		up->cap = up->cap ? up->cap * 2 : 4;
		up->targets = xreallocarray(up->targets, up->cap,
		    sizeof(*up->targets));
	}
	up->targets[up->ntargets++] = t;
	return 0;
}

/* Answer the recorded failure. */
static void
up_reply(struct http_req *req, struct upload *up)
{
	if (up->status != 0)
		http_reply_error(req, up->status, up->code, "%s", up->msg);
	else
		http_reply_errno(req, up->rc, "%s", up->msg);
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

	if (mp_feed(up->mp, up->feeding.p, up->feeding.len) < 0) {
		if (up->rc == 0)
			up_fail(up, 400, E_FILE,
			    "malformed multipart body: %s", mp_error(up->mp));
		drop_files(up);
	}
	buf_drain(&up->feeding, up->feeding.len);
	/* Timed out or left: the temporaries go here, not on the loop. */
	if (atomic_load(&up->cancel))
		drop_files(up);
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
	if (up->rc < 0) {
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
	struct target *t;
	char err[ERRLEN];
	int rc;

	if (up->pending.len > 0 && mp_feed(up->mp, up->pending.p,
	    up->pending.len) < 0 && up->rc == 0)
		up_fail(up, 400, E_FILE, "malformed multipart body: %s",
		    mp_error(up->mp));
	buf_drain(&up->pending, up->pending.len);
	if (up->rc == 0)
		check_pairs(up);
	if (up->rc < 0) {
		drop_files(up);
		return;
	}
	for (size_t i = 0; i < up->nfiles; i++) {
		t = &up->targets[i];
		err[0] = '\0';
		if ((rc = fs_atomic_commit(&up->files[i], t->mode, t->uid,
		    t->gid, err, sizeof(err))) < 0) {
			up_fail_errno(up, rc, "error writing file", t->path,
			    err);
			drop_files(up);
			return;
		}
	}
}

/* The end of the body: the parser's last word, then the pairs. */
static void
check_pairs(struct upload *up)
{
	if (mp_finish(up->mp) < 0)
		up_fail(up, 400, E_FILE, "malformed multipart body: %s",
		    mp_error(up->mp));
	else if (up->ntargets == 0 && up->nfiles == 0)
		up_fail(up, 400, E_FILE, "multipart form is empty");
	else if (up->ntargets == 0)
		up_fail(up, 400, E_META, "metadata file is missing");
	else if (up->nfiles == 0)
		up_fail(up, 400, E_CONTENT, "file is missing");
	else if (up->nfiles != up->ntargets)
		up_fail(up, 400, E_FILE, "metadata and file count mismatch: "
		    "%zu vs %zu", up->ntargets, up->nfiles);
}

/* Back on the loop thread: answer, if the request is still there. */
static void
up_committed(struct http_req *req, void *arg)
{
	struct upload *up = arg;

	if (req != NULL) {
		if (up->rc < 0)
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
	free(c);
}

/* Remove the temporaries not committed (a job's, after a failure). */
static void
drop_files(struct upload *up)
{
	for (size_t i = 0; i < up->nfiles; i++)
		fs_atomic_abort(&up->files[i]);
}

/* Free everything; temporaries not committed are removed. */
static void
up_free(struct upload *up)
{
	drop_files(up);
	free(up->files);
	free(up->targets);
	buf_reset(&up->meta);
	buf_reset(&up->pending);
	buf_reset(&up->feeding);
	mp_free(up->mp);
	free(up->cred);
	free(up);
}
