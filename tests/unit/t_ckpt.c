/*
 * t_ckpt.c -- unit tests for ckpt.c, with no HTTP.
 *
 * Each test uses a fresh temporary directory holding a store and a tree.
 * Covered: a tree recorded (its counts), changed (a file written in
 * place, one appended, one removed, one created, a directory removed and
 * one created, a link pointed elsewhere, a mode changed) and restored to
 * the same contents, modes and link targets, with the counts of what the
 * restore did; a second restore after nothing changed writes nothing;
 * a file found unchanged keeps its inode; errors: a missing tree, a file,
 * a link to a directory, an unknown id, a full store; drop and list.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../../execd/domain/ckpt.h"
#include "../t.h"
#include "../t_tmp.h"

static void	settle(void);
static char	*store_of(const char *);

/* Past the window in which a ctime is not trusted alone. */
static void
settle(void)
{
	struct timespec ts = { 0, (CKPT_RECENT_MS + 50) * 1000000L };

	nanosleep(&ts, NULL);
}

static char *
store_of(const char *d)
{
	return t_path(d, "store");
}

/* The content of path as a string (static ring of one), or "". */
static const char *
slurp(const char *path)
{
	static char buf[4096];
	size_t n = 0;
	char *p = t_slurp(path, &n);

	snprintf(buf, sizeof(buf), "%.*s", (int)n, p != NULL ? p : "");
	free(p);
	return buf;
}

static void
test_take_and_restore(void)
{
	char *d = t_tmpdir(), *tree, err[CKPT_ERRLEN], lnk[64];
	struct ckpt_counts cnt;
	struct ckpt_info info, ri;
	struct stat st1, st2;
	ssize_t n;
	FILE *f;

	tree = strdup(t_path(d, "tree"));
	T_EQ_INT(ckpt_init(store_of(d), err, sizeof(err)), 0);
	t_mkdir(d, "tree");
	t_mkdir(d, "tree/a");
	t_mkdir(d, "tree/a/b");
	t_mkfile(tree, "keep", "kept\n");
	t_mkfile(tree, "edit", "0123456789");
	t_mkfile(tree, "append", "line\n");
	t_mkfile(tree, "gone", "bye\n");
	t_mkfile(tree, "a/b/deep", "deep\n");
	T_EQ_INT(chmod(t_path(tree, "edit"), 0640), 0);
	T_EQ_INT(symlink("keep", t_path(tree, "link")), 0);
	settle();

	T_EQ_INT(ckpt_take(tree, &info, err, sizeof(err)), 0);
	T_EQ_INT(info.files, 6);
	T_EQ_INT(info.dirs, 2);
	T_EQ_INT(info.bytes, 5 + 10 + 5 + 4 + 5);
	T_EQ_INT(strlen(info.id), CKPT_ID_LEN);
	T_EQ_STR(info.path, tree);
	T_EQ_INT(lstat(t_path(tree, "keep"), &st1), 0);

	/* Changes of every kind. */
	f = fopen(t_path(tree, "edit"), "r+");
	T_OK(f != NULL);
	fputs("XX", f);
	fclose(f);
	f = fopen(t_path(tree, "append"), "a");
	fputs("more\n", f);
	fclose(f);
	T_EQ_INT(unlink(t_path(tree, "gone")), 0);
	t_mkfile(tree, "new", "new\n");
	T_EQ_INT(t_rmtree(t_path(tree, "a")), 0);
	t_mkdir(d, "tree/newdir");
	t_mkfile(tree, "newdir/x", "x");
	T_EQ_INT(unlink(t_path(tree, "link")), 0);
	T_EQ_INT(symlink("edit", t_path(tree, "link")), 0);
	T_EQ_INT(chmod(t_path(tree, "edit"), 0777), 0);

	T_EQ_INT(ckpt_restore(info.id, &ri, &cnt, err, sizeof(err)), 0);
	T_EQ_STR(ri.id, info.id);
	T_EQ_INT(cnt.removed, 2);		/* new, newdir */
	T_EQ_INT(cnt.written, 5);		/* edit append gone deep link */
	T_EQ_INT(cnt.dirs, 2);			/* a, a/b made */
	T_EQ_INT(cnt.unchanged, 1);		/* keep */
	T_EQ_STR(slurp(t_path(tree, "edit")), "0123456789");
	T_EQ_INT(t_mode(t_path(tree, "edit")) & 07777, 0640);
	T_EQ_STR(slurp(t_path(tree, "append")), "line\n");
	T_EQ_STR(slurp(t_path(tree, "gone")), "bye\n");
	T_EQ_STR(slurp(t_path(tree, "a/b/deep")), "deep\n");
	T_OK(access(t_path(tree, "new"), F_OK) < 0);
	T_OK(access(t_path(tree, "newdir"), F_OK) < 0);
	n = readlink(t_path(tree, "link"), lnk, sizeof(lnk) - 1);
	T_EQ_INT(n, 4);
	lnk[n > 0 ? n : 0] = '\0';
	T_EQ_STR(lnk, "keep");
	/* Left alone: the same inode. */
	T_EQ_INT(lstat(t_path(tree, "keep"), &st2), 0);
	T_EQ_INT(st1.st_ino, st2.st_ino);

	/* Nothing changed since: nothing written. */
	settle();
	T_EQ_INT(ckpt_restore(info.id, &ri, &cnt, err, sizeof(err)), 0);
	T_EQ_INT(cnt.removed, 0);
	T_EQ_INT(cnt.written, 0);
	T_EQ_INT(cnt.dirs, 0);
	T_EQ_INT(cnt.unchanged, 6);

	T_EQ_INT(ckpt_drop(info.id, err, sizeof(err)), 0);
	T_EQ_INT(ckpt_restore(info.id, &ri, &cnt, err, sizeof(err)), -ENOENT);
	ckpt_shutdown();
	free(tree);
	t_tmpdir_free(d);
}

static void
test_recent_change_seen(void)
{
	char *d = t_tmpdir(), *tree, err[CKPT_ERRLEN];
	struct ckpt_counts cnt;
	struct ckpt_info info, ri;
	FILE *f;

	tree = strdup(t_path(d, "tree"));
	T_EQ_INT(ckpt_init(store_of(d), err, sizeof(err)), 0);
	t_mkdir(d, "tree");
	t_mkfile(tree, "f", "aaaa");
	/* Written at once after the checkpoint: maybe in the same tick. */
	T_EQ_INT(ckpt_take(tree, &info, err, sizeof(err)), 0);
	f = fopen(t_path(tree, "f"), "r+");
	fputs("bb", f);
	fclose(f);
	T_EQ_INT(ckpt_restore(info.id, &ri, &cnt, err, sizeof(err)), 0);
	T_EQ_INT(cnt.written, 1);
	T_EQ_STR(slurp(t_path(tree, "f")), "aaaa");
	ckpt_shutdown();
	free(tree);
	t_tmpdir_free(d);
}

static void
test_errors_list_and_full_store(void)
{
	char *d = t_tmpdir(), *tree, err[CKPT_ERRLEN];
	char ids[CKPT_MAX][CKPT_ID_LEN + 1];
	struct ckpt_counts cnt;
	struct ckpt_info info, *list;
	size_t n, i;

	tree = strdup(t_path(d, "tree"));
	T_EQ_INT(ckpt_init(store_of(d), err, sizeof(err)), 0);
	t_mkdir(d, "tree");
	t_mkfile(tree, "f", "x");
	T_EQ_INT(symlink(tree, t_path(d, "link")), 0);
	T_EQ_INT(ckpt_take(t_path(d, "missing"), &info, err, sizeof(err)),
	    -ENOENT);
	T_EQ_INT(ckpt_take(t_path(tree, "f"), &info, err, sizeof(err)),
	    -ENOTDIR);
	T_EQ_INT(ckpt_take(t_path(d, "link"), &info, err, sizeof(err)),
	    -ENOTDIR);
	T_EQ_INT(ckpt_restore("0123456789abcdef", &info, &cnt, err,
	    sizeof(err)), -ENOENT);
	T_EQ_INT(ckpt_drop("0123456789abcdef", err, sizeof(err)), -ENOENT);
	for (i = 0; i < CKPT_MAX; i++) {
		T_EQ_INT(ckpt_take(tree, &info, err, sizeof(err)), 0);
		memcpy(ids[i], info.id, sizeof(ids[i]));
	}
	T_EQ_INT(ckpt_take(tree, &info, err, sizeof(err)), -ENOSPC);
	ckpt_list(&list, &n);
	T_EQ_INT(n, CKPT_MAX);
	T_EQ_STR(list[0].id, ids[0]);
	T_EQ_STR(list[CKPT_MAX - 1].id, ids[CKPT_MAX - 1]);
	free(list);
	T_EQ_INT(ckpt_drop(ids[3], err, sizeof(err)), 0);
	ckpt_list(&list, &n);
	T_EQ_INT(n, CKPT_MAX - 1);
	T_EQ_STR(list[3].id, ids[4]);
	free(list);
	T_EQ_INT(ckpt_take(tree, &info, err, sizeof(err)), 0);
	ckpt_shutdown();
	free(tree);
	t_tmpdir_free(d);
}

int
main(void)
{
	static const struct t_case cases[] = {
		{ "ckpt_take_and_restore", test_take_and_restore },
		{ "ckpt_recent_change_seen", test_recent_change_seen },
		{ "ckpt_errors_list_and_full_store",
		    test_errors_list_and_full_store },
	};

	return T_RUN(cases);
}
