/*
 * sessions.c -- Jupyter Server's sessions: a notebook (or console, or
 * file) path bound to a kernel, kept in memory for as long as execd runs
 * (jupyter_server/services/sessions).
 *
 * A session names its kernel by id; the kernel is a context of the
 * registry and may go without us (deleted through either API, or dead):
 * a session whose kernel is gone is dropped the next time it is looked
 * at, as Jupyter Server drops a session whose kernel was culled.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../../util/id.h"
#include "../../core/xmalloc.h"
#include "../../domain/context.h"
#include "jupyter.h"

struct jsession {
	char		 id[ID_UUID_LEN + 1];
	char		*path, *name, *type;
	char		 kernel[64];	/* a context id */
	struct jsession	*next;
};

static struct jsession	*sessions;

static void
drop(struct jsession *s)
{
	for (struct jsession **pp = &sessions; *pp != NULL;
	    pp = &(*pp)->next) {
		if (*pp == s) {
			*pp = s->next;
			break;
		}
	}
	free(s->path);
	free(s->name);
	free(s->type);
	free(s);
}

void
jupyter_shutdown(void)
{
	while (sessions != NULL)
		drop(sessions);
}

/* The session's kernel, or NULL: the session is then dropped. */
static struct context *
kernel_of(struct jsession *s)
{
	struct context *c = jupyter_kernel_find(s->kernel);

	if (c == NULL)
		drop(s);
	return c;
}

/* The model: id, path, name, type, kernel (and notebook for notebooks). */
static json_t *
model(struct jsession *s, struct context *c)
{
	json_t *o = json_pack("{s:s, s:s, s:s, s:s, s:o}", "id", s->id,
	    "path", s->path, "name", s->name, "type", s->type, "kernel",
	    jupyter_kernel_model(c));

	if (strcmp(s->type, "notebook") == 0)
		json_object_set_new(o, "notebook", json_pack("{s:s, s:s}",
		    "path", s->path, "name", s->name));
	return o;
}

/* GET /api/sessions */
void
jupyter_sessions(struct http_req *req)
{
	json_t *a = json_array();
	struct jsession *s, *next;
	struct context *c;

	for (s = sessions; s != NULL; s = next) {
		next = s->next;
		if ((c = kernel_of(s)) != NULL)
			json_array_append_new(a, model(s, c));
	}
	http_reply_json(req, 200, a);
}

/* The session of an id, or of a path when id is NULL; or NULL. */
static struct jsession *
find(const char *id, const char *path)
{
	const char *want = id != NULL ? id : path;

	for (struct jsession *s = sessions; s != NULL; s = s->next)
		if (strcmp(id != NULL ? s->id : s->path, want) == 0)
			return kernel_of(s) != NULL ? s : NULL;
	return NULL;
}

/* The session of the path's id, or a 404 answer and NULL. */
static struct jsession *
path_session(struct http_req *req)
{
	const char *id = http_req_param(req, "session_id");
	struct jsession *s = find(id, NULL);

	if (s == NULL)
		http_reply_error(req, 404, HTTP_E_NOT_FOUND,
		    "Session not found: session_id='%s'", id);
	return s;
}

/* A new session of path bound to context c, answered 201. */
static void
created(struct http_req *req, struct context *c, const char *why,
    void *arg)
{
	struct jsession *s = arg;
	char loc[64 + ID_UUID_LEN];

	if (req == NULL || c == NULL) {
		if (req != NULL)
			http_reply_error(req, 500, HTTP_E_RUNTIME, "%s", why);
		free(s->path);
		free(s->name);
		free(s->type);
		free(s);
		return;
	}
	snprintf(s->kernel, sizeof(s->kernel), "%s", context_id(c));
	s->next = sessions;
	sessions = s;
	snprintf(loc, sizeof(loc), "/api/sessions/%s", s->id);
	jupyter_reply_located(req, 201, model(s, c), loc);
}

/*
 * The path and type of a body, with the old form {"notebook":{...}}
 * read as Jupyter Server reads it.
 */
static void
body_path(json_t *body, const char **path, const char **type)
{
	json_t *nb = json_object_get(body, "notebook");

	*path = body_str(body, "path", NULL);
	*type = body_str(body, "type", NULL);
	if (json_is_object(nb)) {
		*type = "notebook";
		*path = body_str(nb, "name", body_str(nb, "path", *path));
	}
}

/*
 * POST /api/sessions {"path","type","name","kernel":{"id"|"name"}}: the
 * session of that path if there is one, else a new one on the kernel
 * named by id, or on a new kernel of that name (the default's if none).
 */
void
jupyter_session_create(struct http_req *req)
{
	json_t *body = http_req_json(req), *k = json_object_get(body,
	    "kernel");
	const char *path, *type, *kid = body_str(k, "id", ""),
	    *kname = body_str(k, "name", "");
	struct jsession *s;
	struct context *c = NULL;
	char loc[64 + ID_UUID_LEN];

	body_path(body, &path, &type);
	if (path == NULL || type == NULL) {
		http_reply_error(req, 400, HTTP_E_BODY, "Missing field in "
		    "JSON data: %s", path == NULL ? "path" : "type");
		return;
	}
	if ((s = find(NULL, path)) != NULL) {
		snprintf(loc, sizeof(loc), "/api/sessions/%s", s->id);
		jupyter_reply_located(req, 201, model(s, kernel_of(s)), loc);
		return;
	}
	if (kid[0] != '\0' && (c = jupyter_kernel_find(kid)) == NULL) {
		http_reply_error(req, 404, HTTP_E_NOT_FOUND,
		    "Kernel does not exist: %s", kid);
		return;
	}
	s = xcalloc(1, sizeof(*s));
	id_uuid(s->id);
	s->path = xstrdup(path);
	s->type = xstrdup(type);
	s->name = xstrdup(body_str(body, "name", ""));
	if (kid[0] != '\0')
		created(req, c, NULL, s);
	else if (jupyter_kernel_new(req, kname, created, s) < 0)
		created(NULL, NULL, NULL, s);
}

/* GET /api/sessions/{session_id} */
void
jupyter_session_get(struct http_req *req)
{
	struct jsession *s = path_session(req);

	if (s != NULL)
		http_reply_json(req, 200, model(s, kernel_of(s)));
}

/* The changes of a PATCH, applied once its new kernel (if any) is up. */
struct patch {
	char	 id[ID_UUID_LEN + 1];
	json_t	*body;
};

/* Apply the changes to the session (gone meanwhile: 404). */
static void
patched(struct http_req *req, struct context *c, const char *why,
    void *arg)
{
	struct patch *p = arg;
	struct jsession *s;
	struct context *old;
	const char *path, *type, *name;

	if (req == NULL)
		goto out;
	if (why != NULL) {
		http_reply_error(req, 500, HTTP_E_RUNTIME, "%s", why);
		goto out;
	}
	if ((s = find(p->id, NULL)) == NULL) {
		http_reply_error(req, 404, HTTP_E_NOT_FOUND,
		    "Session not found: session_id='%s'", p->id);
		goto out;
	}
	body_path(p->body, &path, &type);
	name = body_str(p->body, "name", NULL);
	if (path != NULL) {
		free(s->path);
		s->path = xstrdup(path);
	}
	if (type != NULL) {
		free(s->type);
		s->type = xstrdup(type);
	}
	if (name != NULL) {
		free(s->name);
		s->name = xstrdup(name);
	}
	if (c != NULL && strcmp(context_id(c), s->kernel) != 0) {
		/* The old kernel is shut down, as Jupyter Server does. */
		old = jupyter_kernel_find(s->kernel);
		snprintf(s->kernel, sizeof(s->kernel), "%s", context_id(c));
		if (old != NULL)
			context_delete(old);
	}
	if ((c = kernel_of(s)) == NULL)
		http_reply_error(req, 404, HTTP_E_NOT_FOUND,
		    "Session not found: session_id='%s'", p->id);
	else
		http_reply_json(req, 200, model(s, c));
out:
	json_decref(p->body);
	free(p);
}

/*
 * PATCH /api/sessions/{session_id}: path, name, type; kernel.id moves
 * the session to a running kernel (400 if none), kernel.name to a new
 * one; a kernel left behind is shut down.
 */
void
jupyter_session_patch(struct http_req *req)
{
	struct jsession *s = path_session(req);
	json_t *body = http_req_json(req), *k = json_object_get(body,
	    "kernel");
	const char *kid = body_str(k, "id", ""), *kname = body_str(k,
	    "name", "");
	struct context *c = NULL;
	struct patch *p;

	if (s == NULL)
		return;
	if (kid[0] != '\0' && (c = jupyter_kernel_find(kid)) == NULL) {
		http_reply_error(req, 400, HTTP_E_BODY, "No such kernel: %s",
		    kid);
		return;
	}
	p = xcalloc(1, sizeof(*p));
	memcpy(p->id, s->id, sizeof(p->id));
	p->body = json_incref(body);
	if (kid[0] == '\0' && kname[0] != '\0') {
		if (jupyter_kernel_new(req, kname, patched, p) < 0)
			patched(NULL, NULL, NULL, p);
		return;
	}
	patched(req, c, NULL, p);
}

/* DELETE /api/sessions/{session_id}: 204; its kernel is shut down. */
void
jupyter_session_delete(struct http_req *req)
{
	struct jsession *s = path_session(req);
	struct context *c;

	if (s == NULL)
		return;
	if ((c = jupyter_kernel_find(s->kernel)) != NULL)
		context_delete(c);
	drop(s);
	jupyter_reply_none(req);
}
