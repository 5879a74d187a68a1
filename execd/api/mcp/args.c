/*
 * args.c -- what the tools share: their arguments read (already checked
 * against the schema by tools.c), a client's path resolved, a working
 * directory checked on a worker, and text gathered under a cap with the
 * cut marked.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../core/xmalloc.h"
#include "../reqpath.h"
#include "mcp.h"

/* Capped text; see mcp.h. */
void
mcp_text_add(struct mcp_text *t, const char *p, size_t n)
{
	size_t take = t->len < MCP_TEXT_CAP ? MCP_TEXT_CAP - t->len : 0;

	if (take > n)
		take = n;
	if (take > 0) {
		t->p = xrealloc(t->p, t->len + take + 1);
		memcpy(t->p + t->len, p, take);
		t->len += take;
		t->p[t->len] = '\0';
	}
	t->cut += n - take;
}

char *
mcp_text_take(struct mcp_text *t, const char *what, size_t *len)
{
	char *s, note[128] = "";
	int n = 0;

	if (t->cut > 0)
		n = snprintf(note, sizeof(note), "\n[execd: %zu more bytes of "
		    "%s cut; at most %d bytes are returned]\n", t->cut, what,
		    MCP_TEXT_CAP);
	s = xmalloc(t->len + (size_t)n + 1);
	if (t->len > 0)
		memcpy(s, t->p, t->len);
	memcpy(s + t->len, note, (size_t)n);
	*len = t->len + (size_t)n;
	s[*len] = '\0';
	free(t->p);
	*t = (struct mcp_text){ 0 };
	return s;
}

void
mcp_text_free(struct mcp_text *t)
{
	free(t->p);
	*t = (struct mcp_text){ 0 };
}

const char *
mcp_arg_str(const json_t *args, const char *key, const char *def)
{
	const char *s = json_string_value(json_object_get(args, key));

	return s != NULL ? s : def;
}

long long
mcp_arg_int(const json_t *args, const char *key, long long def)
{
	const json_t *v = json_object_get(args, key);

	return json_is_integer(v) ? (long long)json_integer_value(v) : def;
}

bool
mcp_arg_bool(const json_t *args, const char *key, bool def)
{
	const json_t *v = json_object_get(args, key);

	return json_is_boolean(v) ? json_is_true(v) : def;
}

/* A client's path resolved as the file routes resolve it (reqpath.c). */
int
mcp_arg_path(struct mcp_call *c, const char *in, char *out, size_t outlen)
{
	char why[PATH_MAX + 128];

	if (reqpath_resolve_why(in, out, outlen, why, sizeof(why)) == 0)
		return 0;
	mcp_call_fail(c, "%s", why);
	return -1;
}

/* A working directory checked on a worker; see mcp.h. */
struct cwdjob {
	char		 dir[PATH_MAX];
	char		*key;
	int		 rc;
	char		 why[256];
	mcp_cwd_cb	*then;
	mcp_cancel_fn	*drop;
	void		*arg;
};

static void
cwd_run(void *arg)
{
	struct cwdjob *j = arg;

	j->rc = reqpath_dir_check(j->dir, false, j->why, sizeof(j->why));
}

static void
cwd_done(struct mcp_call *call, void *arg)
{
	struct cwdjob *j = arg;

	if (!mcp_call_waited(call)) {
		mcp_call_fail(call, "the client left");	/* goes nowhere */
		j->drop(j->arg);
	} else if (j->rc < 0) {
		mcp_call_fail(call, "cwd %s: %s", j->key, j->why);
		j->drop(j->arg);
	} else
		j->then(call, j->dir, j->arg);
	free(j->key);
	free(j);
}

void
mcp_with_cwd(struct mcp_call *call, const char *cwd, mcp_cwd_cb *then,
    mcp_cancel_fn *drop, void *arg)
{
	struct cwdjob *j;

	if (cwd[0] == '\0') {
		then(call, NULL, arg);
		return;
	}
	j = xcalloc(1, sizeof(*j));
	if (mcp_arg_path(call, cwd, j->dir, sizeof(j->dir)) < 0) {
		drop(arg);
		free(j);
		return;
	}
	j->key = xstrdup(cwd);
	j->then = then;
	j->drop = drop;
	j->arg = arg;
	mcp_call_work(call, cwd_run, cwd_done, j);
}
