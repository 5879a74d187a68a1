/*
 * upbody.c -- the body of POST /files/upload made into files (upbody.h).
 */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
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
#include "../../core/xmalloc.h"
#include "../../transport/body.h"
#include "../../transport/multipart.h"
#include "upbody.h"

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

struct upbody {
	struct mp		*mp;
	enum part		 part;
	struct buf		 meta;		/* the metadata part so far */
	struct target		*targets;	/* one per metadata part */
	size_t			 ntargets, cap;
	struct fs_atomic	*files;		/* one per file part */
	size_t			 nfiles;
	mode_t			 newmode;	/* for files created */
	/* The first failure. */
	int			 rc;
	unsigned		 status;	/* 0: from rc */
	const char		*code;
	char			 msg[ERRLEN];
};

static int	 up_part(const struct mp_part *, void *);
static int	 up_data(const char *, size_t, void *);
static int	 up_end_part(void *);
static void	 check_pairs(struct upbody *);
static int	 up_fail(struct upbody *, unsigned, const char *,
		    const char *, ...) __attribute__((format(printf, 4, 5)));
static int	 up_fail_errno(struct upbody *, int, const char *,
		    const char *, const char *);

static const struct mp_cbs up_cbs = { up_part, up_data, up_end_part };

struct upbody *
upbody_new(const char *boundary, mode_t newmode)
{
	struct upbody *up = xcalloc(1, sizeof(*up));

	buf_init(&up->meta);
	up->newmode = newmode;
	up->mp = mp_new(boundary, &up_cbs, up);
	return up;
}

int
upbody_feed(struct upbody *up, const char *p, size_t n)
{
	if (up->rc < 0)
		return -1;
	if (mp_feed(up->mp, p, n) < 0) {
		if (up->rc == 0)
			up_fail(up, 400, E_FILE,
			    "malformed multipart body: %s", mp_error(up->mp));
		upbody_drop(up);
		return -1;
	}
	return 0;
}

int
upbody_commit(struct upbody *up)
{
	struct target *t;
	char err[ERRLEN];
	int rc;

	if (up->rc == 0)
		check_pairs(up);
	if (up->rc < 0) {
		upbody_drop(up);
		return -1;
	}
	for (size_t i = 0; i < up->nfiles; i++) {
		t = &up->targets[i];
		err[0] = '\0';
		if ((rc = fs_atomic_commit(&up->files[i], t->mode, t->uid,
		    t->gid, err, sizeof(err))) < 0) {
			up_fail_errno(up, rc, "error writing file", t->path,
			    err);
			upbody_drop(up);
			return -1;
		}
	}
	return 0;
}

int
upbody_error(const struct upbody *up, unsigned *status, const char **code,
    const char **msg)
{
	*status = up->status;
	*code = up->code;
	*msg = up->msg;
	return up->rc;
}

void
upbody_drop(struct upbody *up)
{
	for (size_t i = 0; i < up->nfiles; i++)
		fs_atomic_abort(&up->files[i]);
}

void
upbody_free(struct upbody *up)
{
	if (up == NULL)
		return;
	upbody_drop(up);
	free(up->files);
	free(up->targets);
	buf_reset(&up->meta);
	mp_free(up->mp);
	free(up);
}

/* Record the first failure (status 0: map rc); returns rc. */
static int
up_fail(struct upbody *up, unsigned status, const char *code,
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
up_fail_errno(struct upbody *up, int rc, const char *what, const char *path,
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

/* A part's headers: decide what it is. */
static int
up_part(const struct mp_part *p, void *arg)
{
	struct upbody *up = arg;
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
	struct upbody *up = arg;
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
	struct upbody *up = arg;
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

/* The end of the body: the parser's last word, then the pairs. */
static void
check_pairs(struct upbody *up)
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
