/*
 * t_fileops.c -- unit tests for fileops.c, with no HTTP.
 *
 * Every test works in a fresh temporary directory (in $TMPDIR, else
 * /tmp) and checks the JSON an operation answers, or its errno and the
 * exact message a client is told.  Covered: the FileInfo of a file, a
 * directory, a symbolic link and a missing path; listing to a depth (and
 * a listing refused for a file and a link); search by glob, and a
 * malformed glob; grep with matches, with a cap, cancelled, and with
 * patterns refused before and after the walk; replace; and batches of
 * info, mkdir, unlink, rm -rf, permissions and moves, each with one
 * failing item among good ones (the items before it stay done, nothing
 * is answered), and an unknown owner that stops a batch before any change.
 */
#include <errno.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "../../execd/domain/fileops.h"
#include "../t.h"
#include "../t_tmp.h"

static const char *str(const json_t *, const char *);
static const char *path_at(const json_t *, size_t);
static json_t	*sentinel(void);

/* The string field name of obj, or NULL. */
static const char *
str(const json_t *obj, const char *name)
{
	return json_string_value(json_object_get(obj, name));
}

/* The "path" of the i-th object of an array, or NULL. */
static const char *
path_at(const json_t *a, size_t i)
{
	return str(json_array_get(a, i), "path");
}

/* A value an out-param must still hold after a failure. */
static json_t *
sentinel(void)
{
	static json_t s;

	return &s;
}

static void
test_info(void)
{
	char *d = t_tmpdir(), err[FILEOPS_ERRLEN], want[FILEOPS_ERRLEN];
	json_t *v = sentinel();

	t_mkfile(d, "f", "hello");
	T_EQ_INT(chmod(t_path(d, "f"), 0640), 0);
	T_EQ_INT(fileops_info("~/f", t_path(d, "f"), &v, err, sizeof(err)),
	    0);
	T_EQ_STR(str(v, "type"), "file");
	T_EQ_STR(str(v, "path"), t_path(d, "f"));
	T_EQ_INT(json_integer_value(json_object_get(v, "size")), 5);
	T_EQ_INT(json_integer_value(json_object_get(v, "mode")), 640);
	T_OK(str(v, "modified_at") != NULL && str(v, "owner") != NULL);
	T_OK(json_object_get(v, "path_base64") == NULL);
	json_decref(v);

	t_mkdir(d, "sub");
	v = sentinel();
	T_EQ_INT(fileops_info("sub", t_path(d, "sub"), &v, err, sizeof(err)),
	    0);
	T_EQ_STR(str(v, "type"), "directory");
	json_decref(v);

	/* A link is itself, even dangling. */
	T_EQ_INT(symlink("nowhere", t_path(d, "l")), 0);
	v = sentinel();
	T_EQ_INT(fileops_info("l", t_path(d, "l"), &v, err, sizeof(err)), 0);
	T_EQ_STR(str(v, "type"), "symlink");
	json_decref(v);

	v = sentinel();
	T_EQ_INT(fileops_info("~/none", t_path(d, "none"), &v, err,
	    sizeof(err)), -ENOENT);
	T_OK(v == sentinel());
	snprintf(want, sizeof(want), "file not found. file not found: ~/none: "
	    "lstat %s: %s", t_path(d, "none"), strerror(ENOENT));
	T_EQ_STR(err, want);
	t_tmpdir_free(d);
}

static void
test_list(void)
{
	char *d = t_tmpdir(), err[FILEOPS_ERRLEN], want[FILEOPS_ERRLEN];
	json_t *v = sentinel();

	t_mkfile(d, "a", "");
	t_mkdir(d, "b");
	t_mkfile(d, "b/c", "");
	T_EQ_INT(symlink("b", t_path(d, "link")), 0);
	T_EQ_INT(fileops_list(d, 1, &v, err, sizeof(err)), 0);
	T_EQ_INT(json_array_size(v), 3);
	T_EQ_STR(path_at(v, 0), t_path(d, "a"));
	T_EQ_STR(path_at(v, 1), t_path(d, "b"));
	T_EQ_STR(path_at(v, 2), t_path(d, "link"));
	json_decref(v);
	/* Depth 2: b's child too, in pre-order; the link is not entered. */
	T_EQ_INT(fileops_list(d, 2, &v, err, sizeof(err)), 0);
	T_EQ_INT(json_array_size(v), 4);
	T_EQ_STR(path_at(v, 2), t_path(d, "b/c"));
	T_EQ_STR(str(json_array_get(v, 3), "type"), "symlink");
	json_decref(v);
	T_EQ_INT(fileops_list(d, 0, &v, err, sizeof(err)), 0);
	T_EQ_INT(json_array_size(v), 0);
	json_decref(v);

	v = sentinel();
	T_EQ_INT(fileops_list(t_path(d, "a"), 1, &v, err, sizeof(err)),
	    -EINVAL);
	snprintf(want, sizeof(want), "path is not a directory: %s",
	    t_path(d, "a"));
	T_EQ_STR(err, want);
	T_EQ_INT(fileops_list(t_path(d, "link"), 1, &v, err, sizeof(err)),
	    -EINVAL);
	snprintf(want, sizeof(want), "path is a symbolic link, refusing to "
	    "traverse: %s", t_path(d, "link"));
	T_EQ_STR(err, want);
	T_EQ_INT(fileops_list(t_path(d, "none"), 1, &v, err, sizeof(err)),
	    -ENOENT);
	snprintf(want, sizeof(want), "file not found. lstat %s: %s",
	    t_path(d, "none"), strerror(ENOENT));
	T_EQ_STR(err, want);
	T_OK(v == sentinel());
	t_tmpdir_free(d);
}

static void
test_search(void)
{
	char *d = t_tmpdir(), err[FILEOPS_ERRLEN];
	json_t *v = sentinel();

	t_mkfile(d, "a.txt", "");
	t_mkfile(d, "b.c", "");
	t_mkdir(d, "s.txt");
	t_mkfile(d, "s.txt/c.txt", "");
	T_EQ_INT(fileops_search(d, "*.txt", &v, err, sizeof(err)), 0);
	/* Directories are never answered, whatever their name. */
	T_EQ_INT(json_array_size(v), 2);
	T_EQ_STR(path_at(v, 0), t_path(d, "a.txt"));
	T_EQ_STR(path_at(v, 1), t_path(d, "s.txt/c.txt"));
	T_EQ_STR(str(json_array_get(v, 0), "type"), "file");
	json_decref(v);
	/* A file is tested itself. */
	T_EQ_INT(fileops_search(t_path(d, "b.c"), "*.c", &v, err,
	    sizeof(err)), 0);
	T_EQ_INT(json_array_size(v), 1);
	json_decref(v);

	v = sentinel();
	T_EQ_INT(fileops_search(d, "[a", &v, err, sizeof(err)), -EINVAL);
	T_EQ_STR(err, "error searching files. invalid pattern [a: syntax "
	    "error in pattern");
	T_EQ_INT(fileops_search(t_path(d, "none"), "*", &v, err,
	    sizeof(err)), -ENOENT);
	T_OK(strncmp(err, "file not found. stat ", 21) == 0);
	T_OK(v == sentinel());
	t_tmpdir_free(d);
}

static void
test_grep(void)
{
	char *d = t_tmpdir(), err[FILEOPS_ERRLEN], want[FILEOPS_ERRLEN];
	atomic_int cancel = 0;
	json_t *v = sentinel(), *m;

	t_mkfile(d, "f", "one\nTwo\nthree two\n");
	t_mkdir(d, "sub");
	t_mkfile(d, "sub/g", "two\n");
	T_EQ_INT(fileops_grep(d, "two", false, 0, &cancel, &v, err,
	    sizeof(err)), 0);
	m = json_object_get(v, "matches");
	T_EQ_INT(json_array_size(m), 2);
	T_EQ_STR(path_at(m, 0), t_path(d, "f"));
	T_EQ_INT(json_integer_value(json_object_get(json_array_get(m, 0),
	    "line")), 3);
	T_EQ_STR(str(json_array_get(m, 0), "text"), "three two");
	T_EQ_STR(path_at(m, 1), t_path(d, "sub/g"));
	T_OK(json_is_false(json_object_get(v, "truncated")));
	json_decref(v);
	/* Ignoring case, capped at one. */
	T_EQ_INT(fileops_grep(t_path(d, "f"), "two", true, 1, NULL, &v, err,
	    sizeof(err)), 0);
	T_EQ_INT(json_array_size(json_object_get(v, "matches")), 1);
	T_OK(json_is_true(json_object_get(v, "truncated")));
	json_decref(v);

	/* Refused: before the walk, and by the walk itself. */
	T_EQ_INT(fileops_grep_check("(a", false, err, sizeof(err)), -EINVAL);
	T_OK(strncmp(err, "invalid pattern (a: ", 20) == 0);
	T_EQ_INT(fileops_grep_check("t(w|o)+", true, err, sizeof(err)), 0);
	v = sentinel();
	T_EQ_INT(fileops_grep(d, "(a)\\1", false, 0, NULL, &v, err,
	    sizeof(err)), -EINVAL);
	T_OK(strncmp(err, "invalid pattern (a)\\1: ", 23) == 0);
	cancel = 1;
	T_EQ_INT(fileops_grep(d, "two", false, 0, &cancel, &v, err,
	    sizeof(err)), -ECANCELED);
	T_OK(strncmp(err, "error searching ", 16) == 0);
	T_EQ_INT(fileops_grep(t_path(d, "none"), "two", false, 0, NULL, &v,
	    err, sizeof(err)), -ENOENT);
	snprintf(want, sizeof(want), "error searching %s: ", t_path(d,
	    "none"));
	T_OK(strncmp(err, want, strlen(want)) == 0);
	T_OK(v == sentinel());
	t_tmpdir_free(d);
}

static void
test_replace(void)
{
	char *d = t_tmpdir(), err[FILEOPS_ERRLEN], want[FILEOPS_ERRLEN], *p;
	struct fileops_batch *b;
	unsigned long long n = 99;
	json_t *v = sentinel();
	size_t len;

	t_mkfile(d, "f", "a-a-a");
	T_EQ_INT(fileops_replace("f", t_path(d, "f"), "a", 1, "bb", 2, &n,
	    err, sizeof(err)), 0);
	T_EQ_INT(n, 3);
	p = t_slurp(t_path(d, "f"), &len);
	T_EQ_STR(p, "bb-bb-bb");
	free(p);
	n = 99;
	T_EQ_INT(fileops_replace("~/none", t_path(d, "none"), "a", 1, "", 0,
	    &n, err, sizeof(err)), -ENOENT);
	T_EQ_INT(n, 99);
	snprintf(want, sizeof(want), "file not found. stat %s: no such file "
	    "or directory", t_path(d, "none"));
	T_EQ_STR(err, want);
	T_EQ_INT(fileops_replace("d", d, "a", 1, "", 0, &n, err, sizeof(err)),
	    -EISDIR);
	snprintf(want, sizeof(want), "path is a directory: %s", d);
	T_EQ_STR(err, want);

	/* A batch answers per key. */
	b = fileops_batch_new(FILEOPS_REPLACE);
	fileops_batch_add(b, &(struct fileops_item){ .key = "~/f",
	    .path = t_path(d, "f"), .old = "bb", .oldlen = 2, .new_ = "c",
	    .newlen = 1 });
	T_EQ_INT(fileops_batch_count(b), 1);
	T_EQ_INT(fileops_batch_run(b, &v, err, sizeof(err)), 0);
	T_EQ_INT(json_integer_value(json_object_get(json_object_get(v, "~/f"),
	    "replacedCount")), 3);
	json_decref(v);
	fileops_batch_free(b);
	t_tmpdir_free(d);
}

static void
test_batch_info(void)
{
	char *d = t_tmpdir(), err[FILEOPS_ERRLEN];
	struct fileops_batch *b = fileops_batch_new(FILEOPS_INFO);
	json_t *v = sentinel();

	t_mkfile(d, "f", "x");
	fileops_batch_add(b, &(struct fileops_item){ .key = "~/f",
	    .path = t_path(d, "f") });
	fileops_batch_add(b, &(struct fileops_item){ .key = "~/none",
	    .path = t_path(d, "none") });
	T_EQ_INT(fileops_batch_run(b, &v, err, sizeof(err)), -ENOENT);
	T_OK(v == sentinel());
	T_OK(strncmp(err, "file not found. file not found: ~/none: ", 40) ==
	    0);
	fileops_batch_free(b);

	b = fileops_batch_new(FILEOPS_INFO);
	fileops_batch_add(b, &(struct fileops_item){ .key = "~/f",
	    .path = t_path(d, "f") });
	T_EQ_INT(fileops_batch_run(b, &v, err, sizeof(err)), 0);
	T_EQ_STR(str(json_object_get(v, "~/f"), "type"), "file");
	json_decref(v);
	fileops_batch_free(b);
	t_tmpdir_free(d);
}

static void
test_batch_mkdir_unlink(void)
{
	char *d = t_tmpdir(), err[FILEOPS_ERRLEN], want[FILEOPS_ERRLEN];
	struct fileops_batch *b = fileops_batch_new(FILEOPS_MKDIR);
	json_t *v = sentinel();
	struct stat st;

	t_mkfile(d, "file", "");
	fileops_batch_add(b, &(struct fileops_item){ .key = "x",
	    .path = t_path(d, "x/y"), .mode = 0700 });
	fileops_batch_add(b, &(struct fileops_item){ .key = "bad",
	    .path = t_path(d, "file/z") });
	fileops_batch_add(b, &(struct fileops_item){ .key = "after",
	    .path = t_path(d, "after") });
	T_EQ_INT(fileops_batch_run(b, &v, err, sizeof(err)), -EEXIST);
	T_OK(strncmp(err, "error accessing file: ", 22) == 0);
	T_EQ_INT(t_mode(t_path(d, "x/y")), 0700);	/* done before */
	T_EQ_INT(lstat(t_path(d, "after"), &st), -1);	/* never reached */
	fileops_batch_free(b);

	/* An unknown owner stops the batch before anything is made. */
	b = fileops_batch_new(FILEOPS_MKDIR);
	fileops_batch_add(b, &(struct fileops_item){ .key = "n",
	    .path = t_path(d, "n") });
	fileops_batch_add(b, &(struct fileops_item){ .key = "o",
	    .path = t_path(d, "o"), .owner = "no-such-user-execd" });
	T_EQ_INT(fileops_batch_run(b, &v, err, sizeof(err)), -EINVAL);
	T_EQ_STR(err, "invalid request, unknown user no-such-user-execd");
	T_EQ_INT(lstat(t_path(d, "n"), &st), -1);
	fileops_batch_free(b);

	b = fileops_batch_new(FILEOPS_UNLINK);
	fileops_batch_add(b, &(struct fileops_item){ .key = "~/file",
	    .path = t_path(d, "file") });
	fileops_batch_add(b, &(struct fileops_item){ .key = "~/none",
	    .path = t_path(d, "none") });
	fileops_batch_add(b, &(struct fileops_item){ .key = "~/x",
	    .path = t_path(d, "x") });
	T_EQ_INT(fileops_batch_run(b, &v, err, sizeof(err)), -EISDIR);
	snprintf(want, sizeof(want), "error removing file ~/x. path is a "
	    "directory: %s (use DELETE /directories)", t_path(d, "x"));
	T_EQ_STR(err, want);
	T_EQ_INT(lstat(t_path(d, "file"), &st), -1);
	T_OK(v == sentinel());
	fileops_batch_free(b);

	b = fileops_batch_new(FILEOPS_RMTREE);
	fileops_batch_add(b, &(struct fileops_item){ .key = "~/x",
	    .path = t_path(d, "x") });
	fileops_batch_add(b, &(struct fileops_item){ .key = "/",
	    .path = "/" });
	T_EQ_INT(fileops_batch_run(b, &v, err, sizeof(err)), -EBUSY);
	T_EQ_STR(err, "error removing directory /. refusing to remove /");
	T_EQ_INT(lstat(t_path(d, "x"), &st), -1);
	fileops_batch_free(b);
	t_tmpdir_free(d);
}

static void
test_batch_perms(void)
{
	char *d = t_tmpdir(), err[FILEOPS_ERRLEN], want[FILEOPS_ERRLEN];
	struct fileops_batch *b = fileops_batch_new(FILEOPS_CHMOD);
	json_t *v = sentinel();

	t_mkfile(d, "f", "");
	t_mkfile(d, "g", "");
	fileops_batch_add(b, &(struct fileops_item){ .key = "~/f",
	    .path = t_path(d, "f"), .mode = 0600 });
	fileops_batch_add(b, &(struct fileops_item){ .key = "~/none",
	    .path = t_path(d, "none"), .mode = 0600 });
	fileops_batch_add(b, &(struct fileops_item){ .key = "~/g",
	    .path = t_path(d, "g"), .mode = 0600 });
	T_EQ_INT(fileops_batch_run(b, &v, err, sizeof(err)), -ENOENT);
	snprintf(want, sizeof(want), "error changing permissions for ~/none. "
	    "chmod %s: %s", t_path(d, "none"), strerror(ENOENT));
	T_EQ_STR(err, want);
	T_EQ_INT(t_mode(t_path(d, "f")), 0600);
	T_EQ_INT(t_mode(t_path(d, "g")), 0644);
	fileops_batch_free(b);

	b = fileops_batch_new(FILEOPS_CHMOD);
	fileops_batch_add(b, &(struct fileops_item){ .key = "~/g",
	    .path = t_path(d, "g"), .mode = 0640 });
	T_EQ_INT(fileops_batch_run(b, &v, err, sizeof(err)), 0);
	T_OK(v == NULL);
	T_EQ_INT(t_mode(t_path(d, "g")), 0640);
	fileops_batch_free(b);
	t_tmpdir_free(d);
}

static void
test_batch_move(void)
{
	char *d = t_tmpdir(), err[FILEOPS_ERRLEN];
	struct fileops_batch *b = fileops_batch_new(FILEOPS_MOVE);
	json_t *v = sentinel();
	size_t len;
	char *p;

	t_mkfile(d, "a", "A");
	t_mkfile(d, "b", "B");
	t_mkfile(d, "c", "C");
	fileops_batch_add(b, &(struct fileops_item){ .key = "~/a",
	    .path = t_path(d, "a"), .dstkey = "~/n/a",
	    .dst = t_path(d, "n/a") });
	fileops_batch_add(b, &(struct fileops_item){ .key = "~/b",
	    .path = t_path(d, "b"), .dstkey = "~/c", .dst = t_path(d, "c") });
	T_EQ_INT(fileops_batch_run(b, &v, err, sizeof(err)), -EEXIST);
	T_EQ_STR(err, "destination path already exists: ~/c");
	p = t_slurp(t_path(d, "n/a"), &len);
	T_EQ_STR(p, "A");
	free(p);
	p = t_slurp(t_path(d, "c"), &len);
	T_EQ_STR(p, "C");
	free(p);
	fileops_batch_free(b);

	T_EQ_INT(fileops_move("~/gone", "~/x", t_path(d, "gone"),
	    t_path(d, "x"), err, sizeof(err)), -ENOENT);
	T_EQ_STR(err, "file not found. source path not found: ~/gone");
	T_EQ_INT(fileops_move("~/b", "~/m", t_path(d, "b"), t_path(d, "m"),
	    err, sizeof(err)), 0);
	t_tmpdir_free(d);
}

int
main(void)
{
	static const struct t_case cases[] = {
		{ "fileops_info", test_info },
		{ "fileops_list", test_list },
		{ "fileops_search", test_search },
		{ "fileops_grep", test_grep },
		{ "fileops_replace", test_replace },
		{ "fileops_batch_info", test_batch_info },
		{ "fileops_batch_mkdir_unlink", test_batch_mkdir_unlink },
		{ "fileops_batch_perms", test_batch_perms },
		{ "fileops_batch_move", test_batch_move },
	};

	return T_RUN(cases);
}
