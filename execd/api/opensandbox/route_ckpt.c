/*
 * route_ckpt.c -- workspace checkpoints: POST /files/checkpoint,
 * POST /files/restore, DELETE /files/checkpoint/{id} and
 * GET /files/checkpoint.
 *
 * Every operation runs on a worker (ckpt.h blocks; a hung mount costs
 * only its request, answered 504 after --fs-timeout).  A restore keeps
 * the run gate (rungate.h) closed while its work runs, so that no run,
 * from any front end, starts on a half-restored tree.  Loop thread only.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "../../core/xmalloc.h"
#include "../../domain/ckpt.h"
#include "../../domain/rungate.h"
#include "../../transport/http.h"
#include "../idem.h"
#include "../reqpath.h"
#include "route.h"

enum ck_what { CK_TAKE, CK_RESTORE, CK_DROP, CK_LIST };

struct ckop {
	enum ck_what		 what;
	char			 path[PATH_MAX];	/* take */
	char			 key[PATH_MAX];		/* as written */
	char			 id[CKPT_ID_LEN + 1];
	struct ckpt_info	 info;
	struct ckpt_counts	 counts;
	struct ckpt_info	*list;
	size_t			 nlist;
	int			 rc;
	char			 err[CKPT_ERRLEN];
};

static void	ck_run(void *);
static void	ck_done(struct http_req *, void *);
static void	ck_start(struct http_req *, struct ckop *);
static json_t	*info_json(const struct ckpt_info *);

static json_t *
info_json(const struct ckpt_info *i)
{
	return json_pack("{s:s, s:s, s:I, s:I, s:I, s:I}", "id", i->id,
	    "path", i->path, "files", (json_int_t)i->files,
	    "dirs", (json_int_t)i->dirs, "bytes", (json_int_t)i->bytes,
	    "created", (json_int_t)i->created);
}

/* On a worker. */
static void
ck_run(void *arg)
{
	struct ckop *op = arg;

	switch (op->what) {
	case CK_TAKE:
		op->rc = ckpt_take(op->path, &op->info, op->err,
		    sizeof(op->err));
		break;
	case CK_RESTORE:
		op->rc = ckpt_restore(op->id, &op->info, &op->counts,
		    op->err, sizeof(op->err));
		break;
	case CK_DROP:
		op->rc = ckpt_drop(op->id, op->err, sizeof(op->err));
		break;
	case CK_LIST:
		ckpt_list(&op->list, &op->nlist);
		break;
	}
}

/* Back on the loop: answer (if the request is still there). */
static void
ck_done(struct http_req *req, void *arg)
{
	struct ckop *op = arg;
	json_t *v;
	size_t i;

	if (op->what == CK_RESTORE)
		rungate_open();
	if (req == NULL) {
		/* The client left, or the 504 went: nothing to say. */
	} else if (op->rc == -ENOSPC && op->what == CK_TAKE) {
		http_reply_error(req, 507, "CHECKPOINT_STORE_FULL", "%s",
		    op->err);
	} else if (op->rc == -ENOTDIR && op->what == CK_TAKE) {
		http_reply_error(req, 400, HTTP_E_BODY, "%s", op->err);
	} else if (op->rc == -ENOENT && op->what != CK_TAKE) {
		http_reply_error(req, 404, "CHECKPOINT_NOT_FOUND", "%s",
		    op->err);
	} else if (op->rc < 0) {
		http_reply_errno(req, op->rc, "%s", op->err);
	} else if (op->what == CK_TAKE) {
		v = info_json(&op->info);
		json_object_set_new(v, "path", json_string(op->key));
		http_reply_json(req, 201, v);
	} else if (op->what == CK_RESTORE) {
		http_reply_json(req, 200, json_pack("{s:s, s:s, s:I, s:I, "
		    "s:I, s:I}", "id", op->info.id, "path", op->info.path,
		    "removed", (json_int_t)op->counts.removed,
		    "written", (json_int_t)op->counts.written,
		    "dirs", (json_int_t)op->counts.dirs,
		    "unchanged", (json_int_t)op->counts.unchanged));
	} else if (op->what == CK_DROP) {
		http_reply_text(req, 204, "text/plain", "", 0, NULL, NULL);
	} else {
		v = json_array();
		for (i = 0; i < op->nlist; i++)
			json_array_append_new(v, info_json(&op->list[i]));
		http_reply_json(req, 200, v);
	}
	free(op->list);
	free(op);
}

static void
ck_start(struct http_req *req, struct ckop *op)
{
	if (op->what == CK_RESTORE)
		rungate_close();
	http_req_work(req, 0, NULL, ck_run, ck_done, op);
}

/* An id as ckpt.h makes them, or false. */
static bool
id_ok(const char *id)
{
	size_t i;

	if (id == NULL || strlen(id) != CKPT_ID_LEN)
		return false;
	for (i = 0; i < CKPT_ID_LEN; i++)
		if (!((id[i] >= '0' && id[i] <= '9') ||
		    (id[i] >= 'a' && id[i] <= 'f')))
			return false;
	return true;
}

/* POST /files/checkpoint {"path": DIR}: 201 {id, path, files, ...}. */
void
route_files_checkpoint(struct http_req *req)
{
	const char *path = json_string_value(json_object_get(
	    http_req_json(req), "path"));
	struct ckop *op;

	if (idem_front(req))
		return;
	op = xcalloc(1, sizeof(*op));
	op->what = CK_TAKE;
	if (reqpath_resolve(req, path, op->path, sizeof(op->path)) < 0) {
		free(op);
		return;
	}
	snprintf(op->key, sizeof(op->key), "%s", path);
	ck_start(req, op);
}

/* POST /files/restore {"id": ID}: 200 {id, path, removed, written, ...}. */
void
route_files_restore(struct http_req *req)
{
	const char *id = json_string_value(json_object_get(http_req_json(req),
	    "id"));
	struct ckop *op;

	if (idem_front(req))
		return;
	if (!id_ok(id)) {
		http_reply_error(req, 404, "CHECKPOINT_NOT_FOUND",
		    "checkpoint %s not found", id != NULL ? id : "");
		return;
	}
	op = xcalloc(1, sizeof(*op));
	op->what = CK_RESTORE;
	snprintf(op->id, sizeof(op->id), "%s", id);
	ck_start(req, op);
}

/* DELETE /files/checkpoint/{id}: 204. */
void
route_files_checkpoint_delete(struct http_req *req)
{
	const char *id = http_req_param(req, "id");
	struct ckop *op;

	if (!id_ok(id)) {
		http_reply_error(req, 404, "CHECKPOINT_NOT_FOUND",
		    "checkpoint %s not found", id != NULL ? id : "");
		return;
	}
	op = xcalloc(1, sizeof(*op));
	op->what = CK_DROP;
	snprintf(op->id, sizeof(op->id), "%s", id);
	ck_start(req, op);
}

/* GET /files/checkpoint: [{id, path, files, dirs, bytes, created}]. */
void
route_files_checkpoint_list(struct http_req *req)
{
	struct ckop *op = xcalloc(1, sizeof(*op));

	op->what = CK_LIST;
	ck_start(req, op);
}
