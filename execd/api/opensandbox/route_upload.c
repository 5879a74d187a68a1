/*
 * route_upload.c -- POST /files/upload: multipart uploads written to disk
 * as they arrive.
 *
 * Memory stays flat whatever the size: the body goes through the
 * streaming multipart parser into a temporary file beside each target
 * (fs_atomic, whose journal lets the next start remove what a crash left),
 * and every target is renamed into place only when the whole body has
 * arrived and checked out, so an upload cut off midway leaves the old
 * files as they were and no debris.  The final sync-and-rename runs on a
 * worker thread (http_req_work).  Not for downloads (route_download.c)
 * nor for writing files from a JSON body (route_fs.c).  Loop thread only,
 * but for that job's fn.
 *
 * Under /v1/filesystem/{uid}/{gid} (route_fs_as.c) the handler runs as
 * that user; the upload keeps the identity and takes it again around each
 * later step on the loop thread (the body's bytes, its end, an abort), so
 * that every file is opened, created and removed as that user.
 */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
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
static void	 end_body(struct http_req *, struct upload *);
static void	 up_commit(void *);
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

/* Body bytes as they arrive. */
static int
up_feed(struct http_req *req, const char *p, size_t n, void *arg)
{
	struct upload *up = arg;
	int rc;

	if ((rc = cred_enter(up->cred)) < 0) {
		http_reply_error(req, 503, HTTP_E_IDENTITY, "cannot act as "
		    "uid %lu gid %lu: %s", (unsigned long)up->cred->uid,
		    (unsigned long)up->cred->gid, strerror(-rc));
		return -1;
	}
	if ((rc = mp_feed(up->mp, p, n)) < 0) {
		if (up->rc == 0)
			up_fail(up, 400, E_FILE,
			    "malformed multipart body: %s", mp_error(up->mp));
		up_reply(req, up);
	}
	cred_leave(up->cred);
	return rc < 0 ? -1 : 0;
}

/* The whole body is in: check the pairs, then put every file in place. */
static void
up_end(struct http_req *req, void *arg)
{
	struct upload *up = arg;
	struct cred *c = up->cred;
	int rc;

	if ((rc = cred_enter(c)) < 0) {
		http_reply_error(req, 503, HTTP_E_IDENTITY, "cannot act as "
		    "uid %lu gid %lu: %s", (unsigned long)c->uid,
		    (unsigned long)c->gid, strerror(-rc));
		up_free(up);	/* its temporaries go as execd: ours */
		return;
	}
	up->cred = NULL;	/* up_free() runs as c */
	end_body(req, up);
	cred_leave(c);
	free(c);
}

/* up_end() as the upload's user. */
static void
end_body(struct http_req *req, struct upload *up)
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
	if (up->rc < 0) {
		up_reply(req, up);
		up_free(up);
		return;
	}
	/* Syncing and renaming may take a while: on a worker. */
	up->cred = cred_dup_current();
	http_req_work(req, 0, NULL, up_commit, up_committed, up);
}

/* On a worker: sync, own and rename every file, in order. */
static void
up_commit(void *arg)
{
	struct upload *up = arg;
	struct target *t;
	char err[ERRLEN];
	int rc;

	for (size_t i = 0; i < up->nfiles; i++) {
		t = &up->targets[i];
		err[0] = '\0';
		if ((rc = fs_atomic_commit(&up->files[i], t->mode, t->uid,
		    t->gid, err, sizeof(err))) < 0) {
			up_fail_errno(up, rc, "error writing file", t->path,
			    err);
			return;
		}
	}
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

/* The request died before its end: nothing is put in place. */
static void
up_abort(void *arg)
{
	struct upload *up = arg;
	struct cred *c = up->cred;
	int rc;

	if ((rc = cred_enter(c)) < 0) {
		log_warnx("upload: cannot act as uid %lu gid %lu to remove "
		    "its temporaries: %s", (unsigned long)c->uid,
		    (unsigned long)c->gid, strerror(-rc));
	} else {
		up->cred = NULL;
		up_free(up);
		cred_leave(c);
		free(c);
		return;
	}
	up_free(up);
}

/* Free everything; temporaries not committed are removed. */
static void
up_free(struct upload *up)
{
	for (size_t i = 0; i < up->nfiles; i++)
		fs_atomic_abort(&up->files[i]);
	free(up->files);
	free(up->targets);
	buf_reset(&up->meta);
	mp_free(up->mp);
	free(up->cred);
	free(up);
}
