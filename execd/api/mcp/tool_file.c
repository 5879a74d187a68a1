/*
 * tool_file.c -- the tools on one file: read_file (whole, a byte range or
 * a window of lines), write_file and edit_file (one exact, unique
 * occurrence replaced), as fsjob.h's jobs on a worker.
 *
 * A write goes to a temporary file in the same directory, is synced, and
 * is renamed over the path, so a reader never sees half of it; an edit
 * writes the same way and keeps the file's mode.
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

#define READ_MAX	(1 << 20)	/* bytes read_file returns */
#define EDIT_MAX	(64 << 20)	/* a file edit_file takes */

static int	 write_atomic(struct fsjob *, const char *, size_t, mode_t,
		    bool);

/* read_file on the worker: whole, a byte range, or a line window. */
static void
do_read(struct fsjob *j)
{
	long long off = j->a, len = j->b, first, count;
	struct stat st;
	char *line = NULL;
	size_t cap = 0, lineno = 0;
	ssize_t n;
	FILE *f;

	if ((f = fopen(j->path, "re")) == NULL || fstat(fileno(f), &st) < 0) {
		fsjob_fail(j, -errno, "cannot read %s: %s", j->key, strerror(errno));
		if (f != NULL)
			fclose(f);
		return;
	}
	if (S_ISDIR(st.st_mode)) {
		fclose(f);
		fsjob_fail(j, -EISDIR, "%s is a directory: use list_directory",
		    j->key);
		return;
	}
	first = json_integer_value(json_object_get(j->out, "start_line"));
	count = json_integer_value(json_object_get(j->out, "line_count"));
	json_decref(j->out);
	j->out = NULL;
	if (first > 0) {
		if (count <= 0)
			count = 200;
		/* beyond any file's lines, and no overflow below */
		if (first > (1LL << 40))
			first = 1LL << 40;
		if (count > (1LL << 40))
			count = 1LL << 40;
		while ((n = getline(&line, &cap, f)) >= 0 &&
		    lineno < (size_t)(first - 1 + count)) {
			if (++lineno < (size_t)first)
				continue;
			if (j->text.len + (size_t)n > READ_MAX) {
				buf_addf(&j->text, "\n[execd: window cut at "
				    "%d bytes, after line %zu]\n", READ_MAX,
				    lineno - 1);
				break;
			}
			buf_add(&j->text, line, (size_t)n);
		}
		free(line);
		fclose(f);
		return;
	}
	if (off > st.st_size)
		off = st.st_size;
	if (len <= 0 || len > st.st_size - off)
		len = st.st_size - off;
	if (len > READ_MAX)
		len = READ_MAX;
	buf_reserve(&j->text, (size_t)len + 1);
	n = len > 0 ? pread(fileno(f), j->text.p, (size_t)len, off) : 0;
	fclose(f);
	if (n < 0) {
		fsjob_fail(j, -errno, "cannot read %s: %s", j->key, strerror(errno));
		return;
	}
	j->text.len = (size_t)n;
	if (off + n < st.st_size)
		buf_addf(&j->text, "\n[execd: %lld of %lld bytes shown, from "
		    "offset %lld; read more with offset and length]\n",
		    (long long)n, (long long)st.st_size, off);
}

void
mcp_read_file(struct mcp_call *call, const json_t *args)
{
	struct fsjob *j = fsjob_new(call, args, "path", NULL);

	if (j == NULL)
		return;
	j->a = mcp_arg_int(args, "offset", 0);
	j->b = mcp_arg_int(args, "length", 0);
	/* the line window rides in out until the worker reads it */
	j->out = json_pack("{s:I, s:I}", "start_line",
	    (json_int_t)mcp_arg_int(args, "start_line", 0), "line_count",
	    (json_int_t)mcp_arg_int(args, "line_count", 0));
	fsjob_start(call, j, do_read);
}

/*
 * Write n bytes of p to j->path through a synced temporary renamed over
 * it, with mode (keep: the file's own when it exists); 0 or j->rc.
 */
static int
write_atomic(struct fsjob *j, const char *p, size_t n, mode_t mode,
    bool keep)
{
	char *dir = xstrdup(j->path), *slash = strrchr(dir, '/'), *tmp;
	struct stat st;
	ssize_t w;
	int fd, rc = 0;

	if (slash != NULL)
		*(slash == dir ? slash + 1 : slash) = '\0';
	if ((rc = fileops_mkdir(j->key, dir, 0, (uid_t)-1, (gid_t)-1,
	    j->err, sizeof(j->err))) < 0) {
		free(dir);
		return j->rc = rc;	/* err says why */
	}
	if (keep && stat(j->path, &st) == 0)
		mode = st.st_mode & 07777;
	tmp = xasprintf("%s/.%s.execd-XXXXXX", dir, slash != NULL ?
	    strrchr(j->path, '/') + 1 : j->path);
	free(dir);
	if ((fd = mkstemp(tmp)) < 0) {
		rc = fsjob_fail(j, -errno, "cannot write %s: %s", j->key,
		    strerror(errno));
		free(tmp);
		return rc;
	}
	for (size_t done = 0; done < n; done += (size_t)w)
		if ((w = write(fd, p + done, n - done)) < 0) {
			if (errno == EINTR) {
				w = 0;
				continue;
			}
			rc = fsjob_fail(j, -errno, "cannot write %s: %s", j->key,
			    strerror(errno));
			break;
		}
	if (rc == 0 && (fchmod(fd, mode) < 0 || fsync(fd) < 0))
		rc = fsjob_fail(j, -errno, "cannot write %s: %s", j->key,
		    strerror(errno));
	close(fd);
	if (rc == 0 && rename(tmp, j->path) < 0)
		rc = fsjob_fail(j, -errno, "cannot write %s: %s", j->key,
		    strerror(errno));
	if (rc < 0)
		unlink(tmp);
	free(tmp);
	return rc;
}

static void
do_write(struct fsjob *j)
{
	if (write_atomic(j, j->s1, j->n1, (mode_t)j->a, !j->flag) == 0)
		buf_addf(&j->text, "wrote %zu bytes to %s", j->n1, j->key);
}

void
mcp_write_file(struct mcp_call *call, const json_t *args)
{
	const char *mode = mcp_arg_str(args, "mode", NULL);
	const json_t *c = json_object_get(args, "content");
	struct fsjob *j;
	char *end;
	long m = 0644;

	if (mode != NULL) {
		m = strtol(mode, &end, 8);
		if (*mode == '\0' || *end != '\0' || m < 0 || m > 07777) {
			mcp_call_fail(call, "mode '%s' is not an octal mode "
			    "such as 644", mode);
			return;
		}
	}
	if ((j = fsjob_new(call, args, "path", NULL)) == NULL)
		return;
	j->n1 = json_string_length(c);
	j->s1 = xmalloc(j->n1 + 1);
	memcpy(j->s1, json_string_value(c), j->n1 + 1);
	j->a = m;
	j->flag = mode != NULL;		/* set the mode, else keep it */
	fsjob_start(call, j, do_write);
}

/* edit_file on the worker: the old string must occur exactly once. */
static void
do_edit(struct fsjob *j)
{
	struct buf b, nb;
	char chunk[65536], *hit = NULL, *at;
	size_t count = 0;
	ssize_t n;
	int fd;

	if ((fd = open(j->path, O_RDONLY | O_CLOEXEC)) < 0) {
		fsjob_fail(j, -errno, "cannot read %s: %s", j->key, strerror(errno));
		return;
	}
	buf_init_max(&b, EDIT_MAX);
	while ((n = read(fd, chunk, sizeof(chunk))) > 0 && !b.full)
		buf_add(&b, chunk, (size_t)n);
	close(fd);
	if (n < 0 || b.full) {
		fsjob_fail(j, n < 0 ? -errno : -EFBIG, "cannot edit %s: %s", j->key,
		    n < 0 ? strerror(errno) : "larger than 64 MiB");
		buf_reset(&b);
		return;
	}
	for (at = b.p; b.len > 0 && (at = memmem(at, b.len - (size_t)(at -
	    b.p), j->s1, j->n1)) != NULL; at += j->n1)
		if (count++ == 0)
			hit = at;
	if (count == 0)
		fsjob_fail(j, -EINVAL, "old_string was not found in %s (it must "
		    "match exactly, whitespace included); nothing changed",
		    j->key);
	else if (count > 1)
		fsjob_fail(j, -EINVAL, "old_string occurs %zu times in %s; include "
		    "more surrounding text so that it occurs once; nothing "
		    "changed", count, j->key);
	if (count != 1) {
		buf_reset(&b);
		return;
	}
	buf_init(&nb);
	buf_add(&nb, b.p, (size_t)(hit - b.p));
	buf_add(&nb, j->s2, j->n2);
	buf_add(&nb, hit + j->n1, b.len - (size_t)(hit - b.p) - j->n1);
	if (write_atomic(j, nb.p != NULL ? nb.p : "", nb.len, 0644, true) ==
	    0)
		buf_addf(&j->text, "replaced 1 occurrence in %s", j->key);
	buf_reset(&nb);
	buf_reset(&b);
}

void
mcp_edit_file(struct mcp_call *call, const json_t *args)
{
	const json_t *o = json_object_get(args, "old_string");
	const json_t *n = json_object_get(args, "new_string");
	struct fsjob *j;

	if (json_string_length(o) == 0) {
		mcp_call_fail(call, "old_string must not be empty: use "
		    "write_file to write a whole file");
		return;
	}
	if ((j = fsjob_new(call, args, "path", NULL)) == NULL)
		return;
	j->n1 = json_string_length(o);
	j->s1 = xmalloc(j->n1 + 1);
	memcpy(j->s1, json_string_value(o), j->n1 + 1);
	j->n2 = json_string_length(n);
	j->s2 = xmalloc(j->n2 + 1);
	memcpy(j->s2, json_string_value(n), j->n2 + 1);
	fsjob_start(call, j, do_edit);
}
