/*
 * tool_fs.c -- the file tools' jobs (fsjob.h), and the tools over trees:
 * list_directory, search_files, grep, move and delete.
 *
 * Paths are resolved on the loop as the file routes resolve them; the
 * work itself blocks (it walks trees, renames, unlinks), so it runs on a
 * worker (mcp_call_work: http_req_work underneath, with --fs-timeout)
 * and the answer is made back on the loop.  The operations are
 * fileops.h's, so they say what the file routes say.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../core/xmalloc.h"
#include "fsjob.h"

static void	 job_run(void *);
static void	 job_done(struct mcp_call *, void *);

struct fsjob *
fsjob_new(struct mcp_call *call, const json_t *args, const char *k1,
    const char *k2)
{
	struct fsjob *j = xcalloc(1, sizeof(*j));

	buf_init(&j->text);
	j->key = xstrdup(mcp_arg_str(args, k1, ""));
	if (mcp_arg_path(call, j->key, j->path, sizeof(j->path)) < 0)
		goto fail;
	if (k2 != NULL) {
		j->key2 = xstrdup(mcp_arg_str(args, k2, ""));
		if (mcp_arg_path(call, j->key2, j->path2,
		    sizeof(j->path2)) < 0)
			goto fail;
	}
	return j;
fail:
	free(j->key);
	free(j->key2);
	free(j);
	return NULL;
}

void
fsjob_start(struct mcp_call *call, struct fsjob *j, void (*fn)(struct fsjob *))
{
	j->fn = fn;
	j->cancel = mcp_call_flag(call);
	mcp_call_work(call, job_run, job_done, j);
}

static void
job_run(void *arg)
{
	struct fsjob *j = arg;

	j->fn(j);
}

/* Back on the loop: answer (call NULL-answered if the client left). */
static void
job_done(struct mcp_call *call, void *arg)
{
	struct fsjob *j = arg;
	char *s;

	if (j->rc < 0) {
		mcp_call_fail(call, "%s", j->err);
		json_decref(j->out);
	} else {
		s = xstrndup(j->text.p != NULL ? j->text.p : "", j->text.len);
		mcp_call_text(call, s, j->out);
		free(s);
	}
	buf_reset(&j->text);
	free(j->key);
	free(j->key2);
	free(j->s1);
	free(j->s2);
	free(j);
}

int
fsjob_fail(struct fsjob *j, int rc, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(j->err, sizeof(j->err), fmt, ap);
	va_end(ap);
	return j->rc = rc;
}

/* One text line per FileInfo of a list, and the list kept as out. */
static void
list_text(struct fsjob *j, json_t *list, const char *key)
{
	size_t i;
	json_t *v;

	json_array_foreach(list, i, v)
		buf_addf(&j->text, "%s%s\t%lld\n",
		    json_string_value(json_object_get(v, "path")),
		    strcmp(json_string_value(json_object_get(v, "type")) ?: "",
		    "directory") == 0 ? "/" : "",
		    (long long)json_integer_value(json_object_get(v, "size")));
	if (i == 0)
		buf_adds(&j->text, "(nothing)");
	j->out = json_pack("{s:o}", key, list);
}

static void
do_list(struct fsjob *j)
{
	json_t *list;

	if ((j->rc = fileops_list(j->path, (int)j->a, &list, j->err,
	    sizeof(j->err))) == 0)
		list_text(j, list, "entries");
}

void
mcp_list_directory(struct mcp_call *call, const json_t *args)
{
	struct fsjob *j = fsjob_new(call, args, "path", NULL);

	if (j == NULL)
		return;
	j->a = mcp_arg_int(args, "depth", 1);
	if (j->a < 1)
		j->a = 1;
	if (j->a > 16)
		j->a = 16;
	fsjob_start(call, j, do_list);
}

static void
do_search(struct fsjob *j)
{
	json_t *list;

	if ((j->rc = fileops_search(j->path, j->s1, &list, j->err,
	    sizeof(j->err))) == 0)
		list_text(j, list, "files");
}

void
mcp_search_files(struct mcp_call *call, const json_t *args)
{
	struct fsjob *j = fsjob_new(call, args, "path", NULL);

	if (j == NULL)
		return;
	j->s1 = xstrdup(mcp_arg_str(args, "pattern", ""));
	fsjob_start(call, j, do_search);
}

static void
do_grep(struct fsjob *j)
{
	json_t *m;
	size_t i;

	if ((j->rc = fileops_grep(j->path, j->s1, j->flag, (size_t)j->a,
	    j->cancel, &j->out, j->err, sizeof(j->err))) < 0)
		return;
	json_array_foreach(json_object_get(j->out, "matches"), i, m)
		buf_addf(&j->text, "%s:%lld:%s\n",
		    json_string_value(json_object_get(m, "path")),
		    (long long)json_integer_value(json_object_get(m, "line")),
		    json_string_value(json_object_get(m, "text")) ?: "");
	if (i == 0)
		buf_adds(&j->text, "(no match)");
	if (json_is_true(json_object_get(j->out, "truncated")))
		buf_adds(&j->text, "[execd: more matches not shown]\n");
}

void
mcp_grep(struct mcp_call *call, const json_t *args)
{
	struct fsjob *j = fsjob_new(call, args, "path", NULL);

	if (j == NULL)
		return;
	j->s1 = xstrdup(mcp_arg_str(args, "pattern", ""));
	j->flag = mcp_arg_bool(args, "ignore_case", false);
	j->a = mcp_arg_int(args, "max_matches", 200);
	fsjob_start(call, j, do_grep);
}

static void
do_move(struct fsjob *j)
{
	if ((j->rc = fileops_move(j->key, j->key2, j->path, j->path2,
	    j->err, sizeof(j->err))) == 0)
		buf_addf(&j->text, "moved %s to %s", j->key, j->key2);
}

void
mcp_move(struct mcp_call *call, const json_t *args)
{
	struct fsjob *j = fsjob_new(call, args, "source", "destination");

	if (j != NULL)
		fsjob_start(call, j, do_move);
}

static void
do_delete(struct fsjob *j)
{
	j->rc = j->flag ? fileops_rmtree(j->key, j->path, j->err,
	    sizeof(j->err)) : fileops_unlink(j->key, j->path, j->err,
	    sizeof(j->err));
	if (j->rc == -EISDIR)
		fsjob_fail(j, -EISDIR, "%s is a directory: pass recursive to delete "
		    "it and everything under it", j->key);
	if (j->rc == 0)
		buf_addf(&j->text, "deleted %s", j->key);
}

void
mcp_delete(struct mcp_call *call, const json_t *args)
{
	struct fsjob *j = fsjob_new(call, args, "path", NULL);

	if (j == NULL)
		return;
	j->flag = mcp_arg_bool(args, "recursive", false);
	fsjob_start(call, j, do_delete);
}
