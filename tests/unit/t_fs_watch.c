/*
 * t_fs_watch.c -- unit tests for fs_watch.c.
 *
 * Each test makes a fresh temporary directory (in $TMPDIR, else /tmp),
 * watches it, changes files with plain system calls, then collects the
 * events with poll() and fs_watch_read() until the descriptor stays quiet
 * for a moment (never longer than about a second per round).  Events are
 * written as "kind rel" (rel relative to the root, a trailing '/' for
 * directories) joined by ';' and compared with the exact expected string;
 * cookies are checked separately.  Covered: create, modify, attrib, move
 * and delete in the root; non-recursive watches ignoring subdirectories;
 * recursive watches on a subdirectory made after the start (before and
 * after its create is read, nested); a watched directory moved within the
 * tree, out of it and into it; the root deleted or moved away ("gone",
 * then silence); a file as the root; the kernel's queue and ours
 * overflowing; a callback stopping the read; the directory cap at the
 * start and later; bad paths.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../../fs/fs_watch.h"
#include "../t.h"
#include "../t_tmp.h"

/* Small caps, so that the tests reach them quickly. */
#define MAX_DIRS	64
#define MAX_QUEUE	256

/* What the callback records. */
struct rec {
	const char	*root;
	char		 log[8192];
	uint32_t	 cookies[64];
	size_t		 n;
	int		 overflows;
	enum fs_watch_kind last;
	int		 stop_after;	/* > 0: return -EINTR at that event */
};

static void	 put(const char *, const char *);
static long	 now_ms(void);
static int	 on_event(const struct fs_watch_event *, void *);
static int	 pump(struct fs_watch *, struct rec *);
static struct fs_watch *watch(const char *, bool, struct rec *);

/* Create (or append to) path with content s: create, modify. */
static void
put(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_APPEND, 0644);

	if (fd < 0 || write(fd, s, strlen(s)) != (ssize_t)strlen(s))
		perror(path);
	if (fd >= 0)
		close(fd);
}

/* Monotonic milliseconds. */
static long
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000L + ts.tv_nsec / 1000000;
}

/* Record "kind rel[/]" and the cookie. */
static int
on_event(const struct fs_watch_event *e, void *arg)
{
	struct rec *r = arg;
	size_t rl = strlen(r->root), l = strlen(r->log);
	const char *rel = e->path;

	if (strncmp(rel, r->root, rl) == 0 && rel[rl] == '/')
		rel += rl + 1;
	else if (strcmp(rel, r->root) == 0)
		rel = ".";
	snprintf(r->log + l, sizeof(r->log) - l, "%s%s %s%s",
	    l > 0 ? ";" : "", fs_watch_kind_name(e->kind), rel,
	    e->dir ? "/" : "");
	r->last = e->kind;
	if (e->kind == FS_W_OVERFLOW)
		r->overflows++;
	if (r->n < sizeof(r->cookies) / sizeof(r->cookies[0]))
		r->cookies[r->n] = e->cookie;
	r->n++;
	if (r->stop_after > 0 && (int)r->n == r->stop_after)
		return -EINTR;
	return 0;
}

/*
 * Read events until the descriptor has been quiet for 40 ms (at most
 * 1.5 s in all).  Returns fs_watch_read's last result.
 */
static int
pump(struct fs_watch *fw, struct rec *r)
{
	struct pollfd pfd = { fs_watch_fd(fw), POLLIN, 0 };
	long end = now_ms() + 1500;
	int rc = 0, n;

	while (now_ms() < end) {
		if ((n = poll(&pfd, 1, 40)) <= 0)
			break;
		if ((rc = fs_watch_read(fw, on_event, r)) < 0)
			break;
	}
	return rc;
}

/* fs_watch_new on dir, with r reset to record against it. */
static struct fs_watch *
watch(const char *dir, bool recursive, struct rec *r)
{
	char err[256] = "";
	struct fs_watch *fw;

	memset(r, 0, sizeof(*r));
	r->root = dir;
	if ((fw = fs_watch_new(dir, &(struct fs_watch_opts){ .recursive =
	    recursive, .max_dirs = MAX_DIRS, .max_queue = MAX_QUEUE }, err,
	    sizeof(err))) == NULL)
		fprintf(stderr, "  fs_watch_new %s: %s\n", dir, err);
	return fw;
}

/* Events on entries of the root, one of each kind. */
static void
test_root_events(void)
{
	char *d = t_tmpdir();
	struct fs_watch *fw;
	struct rec r;

	T_OK((fw = watch(d, false, &r)) != NULL);
	if (fw == NULL)
		goto out;
	T_OK(fs_watch_fd(fw) >= 0);
	T_OK(fcntl(fs_watch_fd(fw), F_GETFL) & O_NONBLOCK);
	T_OK(fcntl(fs_watch_fd(fw), F_GETFD) & FD_CLOEXEC);
	/* Nothing yet: a read returns at once. */
	T_EQ_INT(fs_watch_read(fw, on_event, &r), 0);
	T_EQ_INT(r.n, 0);
	put(t_path(d, "a"), "x");
	chmod(t_path(d, "a"), 0600);
	rename(t_path(d, "a"), t_path(d, "b"));
	unlink(t_path(d, "b"));
	mkdir(t_path(d, "s"), 0755);
	rmdir(t_path(d, "s"));
	chmod(d, 0750);
	T_EQ_INT(pump(fw, &r), 0);
	T_EQ_STR(r.log, "create a;modify a;attrib a;moved_from a;moved_to b;"
	    "delete b;create s/;delete s/;attrib ./");
	T_OK(r.cookies[3] != 0);
	T_EQ_INT(r.cookies[4], r.cookies[3]);
	T_EQ_INT(r.cookies[0], 0);
	T_EQ_INT(r.cookies[5], 0);
	fs_watch_free(fw);
out:
	t_tmpdir_free(d);
}

/* Without recursive, what happens inside a subdirectory is not seen. */
static void
test_not_recursive(void)
{
	char *d = t_tmpdir();
	struct fs_watch *fw;
	struct rec r;

	mkdir(t_path(d, "old"), 0755);
	T_OK((fw = watch(d, false, &r)) != NULL);
	if (fw == NULL)
		goto out;
	put(t_path(d, "old/f"), "1");
	mkdir(t_path(d, "new"), 0755);
	T_EQ_INT(pump(fw, &r), 0);
	put(t_path(d, "new/g"), "2");
	mkdir(t_path(d, "new/deeper"), 0755);
	T_EQ_INT(pump(fw, &r), 0);
	T_EQ_STR(r.log, "create new/");
	fs_watch_free(fw);
out:
	t_tmpdir_free(d);
}

/* Recursive: existing and later subdirectories, at any depth. */
static void
test_recursive(void)
{
	char *d = t_tmpdir();
	struct fs_watch *fw;
	struct rec r;

	mkdir(t_path(d, "old"), 0755);
	mkdir(t_path(d, "old/x"), 0755);
	T_OK((fw = watch(d, true, &r)) != NULL);
	if (fw == NULL)
		goto out;
	/* 1. Existing subdirectories are watched from the start. */
	put(t_path(d, "old/x/f"), "1");
	T_EQ_INT(pump(fw, &r), 0);
	T_EQ_STR(r.log, "create old/x/f;modify old/x/f");
	/* 2. A tree made before its create is read: found by the scan. */
	r.log[0] = '\0';
	mkdir(t_path(d, "sub"), 0755);
	put(t_path(d, "sub/f"), "1");
	mkdir(t_path(d, "sub/in"), 0755);
	put(t_path(d, "sub/in/g"), "1");
	T_EQ_INT(pump(fw, &r), 0);
	T_EQ_STR(r.log, "create sub/;create sub/f;create sub/in/;"
	    "create sub/in/g");
	/* 3. And it is watched from then on, at every level. */
	r.log[0] = '\0';
	put(t_path(d, "sub/f"), "2");
	put(t_path(d, "sub/in/g"), "2");
	rename(t_path(d, "sub/f"), t_path(d, "sub/in/f2"));
	unlink(t_path(d, "sub/in/g"));
	T_EQ_INT(pump(fw, &r), 0);
	T_EQ_STR(r.log, "modify sub/f;modify sub/in/g;moved_from sub/f;"
	    "moved_to sub/in/f2;delete sub/in/g");
	/* 4. A subdirectory whose create was read before it was filled. */
	r.log[0] = '\0';
	mkdir(t_path(d, "sub/in/late"), 0755);
	T_EQ_INT(pump(fw, &r), 0);
	put(t_path(d, "sub/in/late/h"), "3");
	chmod(t_path(d, "sub/in/late/h"), 0600);
	T_EQ_INT(pump(fw, &r), 0);
	T_EQ_STR(r.log, "create sub/in/late/;create sub/in/late/h;"
	    "modify sub/in/late/h;attrib sub/in/late/h");
	/* 5. Removing a subtree reports each entry once. */
	r.log[0] = '\0';
	unlink(t_path(d, "sub/in/late/h"));
	rmdir(t_path(d, "sub/in/late"));
	T_EQ_INT(pump(fw, &r), 0);
	T_EQ_STR(r.log, "delete sub/in/late/h;delete sub/in/late/");
	fs_watch_free(fw);
out:
	t_tmpdir_free(d);
}

/* A watched directory moved within the tree, out of it, and into it. */
static void
test_moves(void)
{
	char *d = t_tmpdir(), *o = t_tmpdir();
	struct fs_watch *fw;
	struct rec r;

	mkdir(t_path(d, "a"), 0755);
	mkdir(t_path(d, "a/b"), 0755);
	mkdir(t_path(d, "dst"), 0755);
	mkdir(t_path(o, "in"), 0755);
	mkdir(t_path(o, "in/deep"), 0755);
	T_OK((fw = watch(d, true, &r)) != NULL);
	if (fw == NULL)
		goto out;
	T_EQ_INT(fs_watch_count(fw), 4);
	/* 1. Within the tree: the paths below follow the move. */
	rename(t_path(d, "a"), t_path(d, "dst/c"));
	put(t_path(d, "dst/c/b/f"), "1");
	T_EQ_INT(pump(fw, &r), 0);
	T_EQ_STR(r.log, "moved_from a/;moved_to dst/c/;create dst/c/b/f;"
	    "modify dst/c/b/f");
	T_OK(r.cookies[0] != 0);
	T_EQ_INT(r.cookies[1], r.cookies[0]);
	/* 2. Read in between: the pair may straddle two reads. */
	r.log[0] = '\0';
	rename(t_path(d, "dst/c"), t_path(d, "e"));
	T_EQ_INT(pump(fw, &r), 0);
	put(t_path(d, "e/b/g"), "1");
	T_EQ_INT(pump(fw, &r), 0);
	T_EQ_STR(r.log, "moved_from dst/c/;moved_to e/;create e/b/g;"
	    "modify e/b/g");
	/* 3. Out of the tree: a lone moved_from, then nothing. */
	r.log[0] = '\0';
	r.n = 0;
	rename(t_path(d, "e"), t_path(o, "e"));
	T_EQ_INT(pump(fw, &r), 0);
	T_EQ_INT(fs_watch_count(fw), 2);	/* the root and dst */
	put(t_path(o, "e/b/h"), "1");
	put(t_path(o, "e/z"), "1");
	T_EQ_INT(pump(fw, &r), 0);
	T_EQ_STR(r.log, "moved_from e/");
	T_OK(r.cookies[0] != 0);
	/* 4. Into the tree: a lone moved_to; its subdirectories watched. */
	r.log[0] = '\0';
	r.n = 0;
	rename(t_path(o, "in"), t_path(d, "in"));
	T_EQ_INT(pump(fw, &r), 0);
	put(t_path(d, "in/deep/k"), "1");
	T_EQ_INT(pump(fw, &r), 0);
	T_EQ_STR(r.log, "moved_to in/;create in/deep/k;modify in/deep/k");
	T_EQ_INT(fs_watch_count(fw), 4);
	T_OK(r.cookies[0] != 0);
	fs_watch_free(fw);
out:
	t_tmpdir_free(d);
	t_tmpdir_free(o);
}

/* The root deleted, or moved away: "gone" once, then nothing. */
static void
test_gone(void)
{
	char *d = t_tmpdir(), *o = t_tmpdir(), *moved = NULL;
	struct fs_watch *fw;
	struct rec r;

	mkdir(t_path(d, "s"), 0755);
	put(t_path(d, "s/f"), "1");
	T_OK((fw = watch(d, true, &r)) != NULL);
	if (fw == NULL)
		goto out;
	unlink(t_path(d, "s/f"));
	rmdir(t_path(d, "s"));
	rmdir(d);
	T_EQ_INT(pump(fw, &r), 0);
	T_EQ_STR(r.log, "delete s/f;delete s/;gone ./");
	/* Re-creating the directory reports nothing any more. */
	mkdir(d, 0755);
	put(t_path(d, "again"), "1");
	T_EQ_INT(pump(fw, &r), 0);
	T_EQ_INT(fs_watch_read(fw, on_event, &r), 0);
	T_EQ_STR(r.log, "delete s/f;delete s/;gone ./");
	fs_watch_free(fw);

	/* Moved away: gone; changes at its new place are not seen. */
	T_OK((fw = watch(d, true, &r)) != NULL);
	if (fw == NULL)
		goto out;
	moved = strdup(t_path(o, "moved"));
	rename(d, moved);
	put(t_path(moved, "x"), "1");
	T_EQ_INT(pump(fw, &r), 0);
	T_EQ_STR(r.log, "gone ./");
	fs_watch_free(fw);
out:
	if (moved != NULL)
		rename(moved, d);
	free(moved);
	t_tmpdir_free(d);
	t_tmpdir_free(o);
}

/* A file as the root: its own changes, then gone when deleted. */
static void
test_file(void)
{
	char *d = t_tmpdir(), *f;
	struct fs_watch *fw;
	struct rec r;

	f = strdup(t_path(d, "f"));
	put(f, "1");
	put(t_path(d, "other"), "1");
	T_OK((fw = watch(f, true, &r)) != NULL);
	if (fw == NULL)
		goto out;
	put(f, "2");
	put(t_path(d, "other"), "2");
	chmod(f, 0600);
	T_EQ_INT(pump(fw, &r), 0);
	T_EQ_STR(r.log, "modify .;attrib .");
	r.log[0] = '\0';
	unlink(f);
	T_EQ_INT(pump(fw, &r), 0);
	/* unlink changes the link count (attrib), then the inode goes. */
	T_EQ_STR(r.log, "attrib .;gone .");
	fs_watch_free(fw);
out:
	free(f);
	t_tmpdir_free(d);
}

/* The kernel's queue overflowing is reported as "overflow", last. */
static void
test_overflow_kernel(void)
{
	char *d = t_tmpdir();
	struct fs_watch *fw;
	struct rec r;

	put(t_path(d, "a"), "");
	put(t_path(d, "b"), "");
	T_OK((fw = watch(d, false, &r)) != NULL);
	if (fw == NULL)
		goto out;
	/* Alternate between two files so the kernel cannot merge events;
	 * the default max_queued_events is 16384. */
	for (int i = 0; i < 40000; i++)
		chmod(t_path(d, i % 2 ? "a" : "b"), i % 4 < 2 ? 0600 : 0644);
	T_EQ_INT(pump(fw, &r), 0);
	T_OK(r.overflows >= 1);
	T_EQ_INT(r.last, FS_W_OVERFLOW);
	T_OK(r.n > 1000);
	fs_watch_free(fw);
out:
	t_tmpdir_free(d);
}

/* Past MAX_QUEUE waiting events: one "overflow", then normal. */
static void
test_overflow_queue(void)
{
	char *d = t_tmpdir(), name[32];
	struct fs_watch *fw;
	struct rec r;

	T_OK((fw = watch(d, true, &r)) != NULL);
	if (fw == NULL)
		goto out;
	/* The scan of a new directory queues a create for each entry. */
	mkdir(t_path(d, "s"), 0755);
	for (int i = 0; i < MAX_QUEUE + 50; i++) {
		snprintf(name, sizeof(name), "s/f%03d", i);
		put(t_path(d, name), "");
	}
	T_EQ_INT(pump(fw, &r), 0);
	T_EQ_INT(r.n, MAX_QUEUE + 1);
	T_EQ_INT(r.overflows, 1);
	T_EQ_INT(r.last, FS_W_OVERFLOW);
	T_OK(strncmp(r.log, "create s/;create s/f000;create s/f001;", 38) ==
	    0);
	r.log[0] = '\0';
	put(t_path(d, "s/z"), "1");
	T_EQ_INT(pump(fw, &r), 0);
	T_EQ_STR(r.log, "create s/z;modify s/z");
	fs_watch_free(fw);
out:
	t_tmpdir_free(d);
}

/* A callback that stops the read gets the rest on the next call. */
static void
test_stop(void)
{
	char *d = t_tmpdir();
	struct fs_watch *fw;
	struct rec r;

	T_OK((fw = watch(d, false, &r)) != NULL);
	if (fw == NULL)
		goto out;
	put(t_path(d, "a"), "1");
	unlink(t_path(d, "a"));
	r.stop_after = 2;
	T_EQ_INT(fs_watch_read(fw, on_event, &r), -EINTR);
	T_EQ_STR(r.log, "create a;modify a");
	r.stop_after = 0;
	T_EQ_INT(fs_watch_read(fw, on_event, &r), 0);
	T_EQ_STR(r.log, "create a;modify a;delete a");
	fs_watch_free(fw);
out:
	t_tmpdir_free(d);
}

/* MAX_DIRS directories: -ENOSPC at the start, silence later. */
static void
test_cap(void)
{
	char *d = t_tmpdir(), name[32], err[256] = "";
	struct fs_watch *fw;
	struct rec r;

	for (int i = 0; i < MAX_DIRS - 1; i++) {
		snprintf(name, sizeof(name), "d%d", i);
		mkdir(t_path(d, name), 0755);
	}
	/* 1. The root and MAX_DIRS - 1 subdirectories: the cap. */
	T_OK((fw = watch(d, true, &r)) != NULL);
	if (fw == NULL)
		goto out;
	T_EQ_INT(fs_watch_count(fw), MAX_DIRS);
	/* 2. A later directory is reported but not watched. */
	mkdir(t_path(d, "late"), 0755);
	T_EQ_INT(pump(fw, &r), 0);
	put(t_path(d, "late/f"), "1");
	T_EQ_INT(pump(fw, &r), 0);
	T_EQ_STR(r.log, "create late/");
	/* 3. A deleted directory frees its slot for the next one. */
	r.log[0] = '\0';
	rmdir(t_path(d, "d0"));
	T_EQ_INT(pump(fw, &r), 0);
	mkdir(t_path(d, "late2"), 0755);
	T_EQ_INT(pump(fw, &r), 0);
	put(t_path(d, "late2/g"), "1");
	T_EQ_INT(pump(fw, &r), 0);
	T_EQ_STR(r.log, "delete d0/;create late2/;create late2/g;"
	    "modify late2/g");
	T_EQ_INT(fs_watch_count(fw), MAX_DIRS);
	fs_watch_free(fw);
	/* 4. One directory too many at the start. */
	errno = 0;
	fw = fs_watch_new(d, &(struct fs_watch_opts){ .recursive = true,
	    .max_dirs = MAX_DIRS }, err, sizeof(err));
	T_OK(fw == NULL);
	T_EQ_INT(errno, ENOSPC);
	T_OK(err[0] != '\0');
	fs_watch_free(fw);
	/* 5. Not recursive: one watch. */
	T_OK((fw = watch(d, false, &r)) != NULL);
	fs_watch_free(fw);
out:
	t_tmpdir_free(d);
}

/* Bad paths; kind names. */
static void
test_errors(void)
{
	char err[256] = "";
	struct fs_watch *fw;

	errno = 0;
	fw = fs_watch_new("/nonexistent-t_fs_watch/x", NULL, err,
	    sizeof(err));
	T_OK(fw == NULL);
	T_EQ_INT(errno, ENOENT);
	T_OK(strstr(err, "nonexistent-t_fs_watch") != NULL);
	errno = 0;
	T_OK(fs_watch_new("", NULL, err, sizeof(err)) == NULL);
	T_EQ_INT(errno, EINVAL);
	fs_watch_free(NULL);
	T_EQ_STR(fs_watch_kind_name(FS_W_CREATE), "create");
	T_EQ_STR(fs_watch_kind_name(FS_W_MODIFY), "modify");
	T_EQ_STR(fs_watch_kind_name(FS_W_DELETE), "delete");
	T_EQ_STR(fs_watch_kind_name(FS_W_MOVED_FROM), "moved_from");
	T_EQ_STR(fs_watch_kind_name(FS_W_MOVED_TO), "moved_to");
	T_EQ_STR(fs_watch_kind_name(FS_W_ATTRIB), "attrib");
	T_EQ_STR(fs_watch_kind_name(FS_W_OVERFLOW), "overflow");
	T_EQ_STR(fs_watch_kind_name(FS_W_GONE), "gone");
	T_EQ_STR(fs_watch_kind_name((enum fs_watch_kind)99), "unknown");
}

int
main(void)
{
	static const struct t_case cases[] = {
		{ "root_events", test_root_events },
		{ "not_recursive", test_not_recursive },
		{ "recursive", test_recursive },
		{ "moves", test_moves },
		{ "gone", test_gone },
		{ "file", test_file },
		{ "overflow_kernel", test_overflow_kernel },
		{ "overflow_queue", test_overflow_queue },
		{ "stop", test_stop },
		{ "cap", test_cap },
		{ "errors", test_errors },
	};

	umask(022);
	return T_RUN(cases);
}
