/*
 * t_fs_grep.c -- unit tests for fs_grep.c.
 *
 * A small tree is made in a fresh temporary directory (in $TMPDIR, else
 * /tmp) and searched; each match is written as "rel:line:text" (text
 * replaced by "<N bytes>" when long, a NUL shown as "\0") and the whole
 * list compared with the exact expected string.  Covered: walk order
 * across files and subdirectories, hidden files, line numbers, a last line
 * without a newline, CRLF lines, case folding, anchors, binary files
 * skipped (and a NUL past the first 8 KiB not making a file binary),
 * lines past 64 KiB cut, symlinks to files and directories not followed, a
 * FIFO skipped, a single file as the path, max_matches with and without
 * truncation, a callback stopping the search, bad patterns and paths, and
 * (when not root) unreadable files and directories skipped.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../fs/fs_grep.h"
#include "../t.h"
#include "../t_tmp.h"

struct rec {
	const char	*root;
	char		 log[4096];
	int		 n;
	int		 stop_at;	/* > 0: return -EINTR at that match */
};

static char	*tree_new(void);
static int	 on_match(const char *, unsigned long, const char *, size_t,
		    void *);
static int	 grep(const char *, const char *, unsigned, size_t,
		    struct rec *, bool *);

/*
 * The tree searched by most tests:
 *   .hidden      "hello hidden\n"
 *   a.txt        "hello world\nfoo\nHello again\n"
 *   b/c.txt      "nothing\nhello there"          (no final newline)
 *   b/crlf.txt   "hello crlf\r\nbye\r\n"
 *   bin.dat      "hello\0binary\n"               (binary: skipped)
 *   dirlink  ->  b                               (not followed)
 *   fifo                                         (skipped)
 *   late.dat     9000 'a', "\nhello\0late\n"     (a NUL past 8 KiB)
 *   link     ->  a.txt                           (not followed)
 *   long.txt     "hello" + 70000 'x'; 70000 'x' + "hello"; "tail hello"
 *   zz/empty     ""
 */
static char *
tree_new(void)
{
	char *d = t_tmpdir(), *big;
	size_t n;

	t_spit(t_path(d, ".hidden"), "hello hidden\n", 13, 0644);
	t_spit(t_path(d, "a.txt"), "hello world\nfoo\nHello again\n", 28, 0644);
	mkdir(t_path(d, "b"), 0755);
	t_spit(t_path(d, "b/c.txt"), "nothing\nhello there", 19, 0644);
	t_spit(t_path(d, "b/crlf.txt"), "hello crlf\r\nbye\r\n", 17, 0644);
	t_spit(t_path(d, "bin.dat"), "hello\0binary\n", 13, 0644);
	if (symlink("b", t_path(d, "dirlink")) < 0 ||
	    symlink("a.txt", t_path(d, "link")) < 0)
		perror("symlink");
	if (mkfifo(t_path(d, "fifo"), 0644) < 0)
		perror("mkfifo");
	if ((big = malloc(200000)) == NULL)
		exit(1);
	memset(big, 'a', 9000);
	memcpy(big + 9000, "\nhello\0late\n", 12);
	t_spit(t_path(d, "late.dat"), big, 9012, 0644);
	memcpy(big, "hello", 5);
	memset(big + 5, 'x', 70000);
	n = 70005;
	big[n++] = '\n';
	memset(big + n, 'x', 70000);
	n += 70000;
	memcpy(big + n, "hello\ntail hello\n", 17);
	n += 17;
	t_spit(t_path(d, "long.txt"), big, n, 0644);
	free(big);
	mkdir(t_path(d, "zz"), 0755);
	t_spit(t_path(d, "zz/empty"), "", 0, 0644);
	return d;
}

/* Record "rel:line:text\n". */
static int
on_match(const char *path, unsigned long line, const char *text, size_t len,
    void *arg)
{
	struct rec *r = arg;
	size_t rl = strlen(r->root), l = strlen(r->log);
	const char *rel = path;

	if (strncmp(path, r->root, rl) == 0 && path[rl] == '/')
		rel += rl + 1;
	l += snprintf(r->log + l, sizeof(r->log) - l, "%s:%lu:", rel, line);
	if (text[len] != '\0')
		l += snprintf(r->log + l, sizeof(r->log) - l, "<unterminated>");
	if (len > 100)
		l += snprintf(r->log + l, sizeof(r->log) - l, "<%zu bytes>",
		    len);
	for (size_t i = 0; i < len && len <= 100 && l + 3 < sizeof(r->log);
	    i++) {
		if (text[i] == '\0') {
			r->log[l++] = '\\';
			r->log[l++] = '0';
		} else
			r->log[l++] = text[i];
	}
	if (l + 2 < sizeof(r->log)) {
		r->log[l++] = '\n';
		r->log[l] = '\0';
	}
	r->n++;
	if (r->stop_at > 0 && r->n == r->stop_at)
		return -EINTR;
	return 0;
}

/* fs_grep with r reset to record against root. */
static int
grep(const char *path, const char *pattern, unsigned flags, size_t max,
    struct rec *r, bool *truncated)
{
	char err[256] = "";
	int rc;

	rc = fs_grep(path, pattern, flags, max, NULL, on_match, r, truncated,
	    err, sizeof(err));
	if (rc < 0 && err[0] == '\0' && rc != -EINTR)
		fprintf(stderr, "  fs_grep: %d with no message\n", rc);
	return rc;
}

/* Every match in the tree, in walk order, with line numbers. */
static void
test_tree(void)
{
	char *d = tree_new();
	struct rec r = { d, "", 0, 0 };
	bool tr = true;

	T_EQ_INT(grep(d, "hello", 0, 0, &r, &tr), 0);
	T_EQ_INT(tr, false);
	T_EQ_STR(r.log,
	    ".hidden:1:hello hidden\n"
	    "a.txt:1:hello world\n"
	    "b/c.txt:2:hello there\n"
	    "b/crlf.txt:1:hello crlf\n"
	    "late.dat:2:hello\\0late\n"
	    "long.txt:1:<65536 bytes>\n"
	    "long.txt:3:tail hello\n");
	T_EQ_INT(r.n, 7);
	/* Nothing matches: 0, no calls. */
	memset(r.log, 0, sizeof(r.log));
	r.n = 0;
	tr = true;
	T_EQ_INT(grep(d, "no such words", 0, 0, &r, &tr), 0);
	T_EQ_INT(tr, false);
	T_EQ_INT(r.n, 0);
	t_tmpdir_free(d);
}

/* Case folding and anchors (a CR and a missing newline do not get in the
 * way of '$'). */
static void
test_icase_anchors(void)
{
	char *d = tree_new();
	struct rec r = { d, "", 0, 0 };
	bool tr;

	T_EQ_INT(grep(d, "HELLO (W|A)", FS_GREP_ICASE, 0, &r, &tr), 0);
	T_EQ_STR(r.log, "a.txt:1:hello world\na.txt:3:Hello again\n");
	memset(r.log, 0, sizeof(r.log));
	T_EQ_INT(grep(d, "HELLO (W|A)", 0, 0, &r, &tr), 0);
	T_EQ_STR(r.log, "");
	T_EQ_INT(grep(d, "^foo$", 0, 0, &r, &tr), 0);
	T_EQ_STR(r.log, "a.txt:2:foo\n");
	memset(r.log, 0, sizeof(r.log));
	T_EQ_INT(grep(d, "(crlf|bye|there)$", 0, 0, &r, &tr), 0);
	T_EQ_STR(r.log, "b/c.txt:2:hello there\nb/crlf.txt:1:hello crlf\n"
	    "b/crlf.txt:2:bye\n");
	memset(r.log, 0, sizeof(r.log));
	/* '^' is the start of each line, never in the middle; a NUL ends
	 * what is matched of a line. */
	T_EQ_INT(grep(d, "^hello$", 0, 0, &r, &tr), 0);
	T_EQ_STR(r.log, "late.dat:2:hello\\0late\n");
	memset(r.log, 0, sizeof(r.log));
	T_EQ_INT(grep(d, "^[a-z]+ (w|t)", 0, 0, &r, &tr), 0);
	T_EQ_STR(r.log, "a.txt:1:hello world\nb/c.txt:2:hello there\n");
	t_tmpdir_free(d);
}

/* A single file as the path; a link given as the path is followed. */
static void
test_file(void)
{
	char *d = tree_new();
	struct rec r = { d, "", 0, 0 };
	bool tr;

	T_EQ_INT(grep(t_path(d, "a.txt"), "o", 0, 0, &r, &tr), 0);
	T_EQ_STR(r.log, "a.txt:1:hello world\na.txt:2:foo\n"
	    "a.txt:3:Hello again\n");
	memset(r.log, 0, sizeof(r.log));
	T_EQ_INT(grep(t_path(d, "link"), "foo", 0, 0, &r, &tr), 0);
	T_EQ_STR(r.log, "link:2:foo\n");
	memset(r.log, 0, sizeof(r.log));
	T_EQ_INT(grep(t_path(d, "dirlink"), "hello", 0, 0, &r, &tr), 0);
	T_EQ_STR(r.log, "dirlink/c.txt:2:hello there\n"
	    "dirlink/crlf.txt:1:hello crlf\n");
	memset(r.log, 0, sizeof(r.log));
	/* Binary and empty files given directly: nothing. */
	T_EQ_INT(grep(t_path(d, "bin.dat"), "hello", 0, 0, &r, &tr), 0);
	T_EQ_INT(grep(t_path(d, "zz/empty"), "", 0, 0, &r, &tr), 0);
	T_EQ_STR(r.log, "");
	/* An empty pattern matches every line, the last one unterminated. */
	T_EQ_INT(grep(t_path(d, "b/c.txt"), "", 0, 0, &r, &tr), 0);
	T_EQ_STR(r.log, "b/c.txt:1:nothing\nb/c.txt:2:hello there\n");
	t_tmpdir_free(d);
}

/* max_matches: exactly reached is not truncated; one more is. */
static void
test_max(void)
{
	char *d = tree_new();
	struct rec r = { d, "", 0, 0 };
	bool tr = true;

	T_EQ_INT(grep(d, "hello", 0, 7, &r, &tr), 0);
	T_EQ_INT(tr, false);
	T_EQ_INT(r.n, 7);
	memset(r.log, 0, sizeof(r.log));
	r.n = 0;
	T_EQ_INT(grep(d, "hello", 0, 6, &r, &tr), 0);
	T_EQ_INT(tr, true);
	T_EQ_INT(r.n, 6);
	memset(r.log, 0, sizeof(r.log));
	r.n = 0;
	tr = false;
	T_EQ_INT(grep(d, "hello", 0, 2, &r, &tr), 0);
	T_EQ_INT(tr, true);
	T_EQ_STR(r.log, ".hidden:1:hello hidden\na.txt:1:hello world\n");
	/* Within one file. */
	memset(r.log, 0, sizeof(r.log));
	tr = false;
	T_EQ_INT(grep(t_path(d, "a.txt"), "o", 0, 1, &r, &tr), 0);
	T_EQ_INT(tr, true);
	T_EQ_STR(r.log, "a.txt:1:hello world\n");
	t_tmpdir_free(d);
}

/* The callback's error stops the search; *truncated is left alone. */
static void
test_stop(void)
{
	char *d = tree_new();
	struct rec r = { d, "", 0, 2 };
	bool tr = true;

	T_EQ_INT(grep(d, "hello", 0, 0, &r, &tr), -EINTR);
	T_EQ_INT(r.n, 2);
	T_EQ_INT(tr, true);
	t_tmpdir_free(d);
}

/* Bad patterns and paths. */
static void
test_errors(void)
{
	char *d = tree_new(), err[256] = "";
	struct rec r = { d, "", 0, 0 };
	bool tr = true;

	T_EQ_INT(fs_grep(d, "a(", 0, 0, NULL, on_match, &r, &tr, err,
	    sizeof(err)), -EINVAL);
	T_OK(err[0] != '\0');
	err[0] = '\0';
	T_EQ_INT(fs_grep(d, "[z-a]", 0, 0, NULL, on_match, &r, &tr, err,
	    sizeof(err)), -EINVAL);
	T_OK(err[0] != '\0');
	T_EQ_INT(tr, true);
	err[0] = '\0';
	T_EQ_INT(fs_grep(t_path(d, "missing"), "x", 0, 0, NULL, on_match, &r,
	    &tr, err, sizeof(err)), -ENOENT);
	T_OK(strstr(err, "missing") != NULL);
	T_EQ_INT(fs_grep(t_path(d, "fifo"), "x", 0, 0, NULL, on_match, &r, &tr,
	    err, sizeof(err)), -EINVAL);
	T_EQ_INT(fs_grep("", "x", 0, 0, NULL, on_match, &r, &tr, err,
	    sizeof(err)), -EINVAL);
	/* A backreference is refused, with a message that says so. */
	err[0] = '\0';
	T_EQ_INT(fs_grep(d, "(.*)(.*)(.*)(.*)(.*)\\5\\4\\3\\2\\1x", 0, 0,
	    NULL, on_match, &r, &tr, err, sizeof(err)), -EINVAL);
	T_OK(strstr(err, "backreference") != NULL);
	T_EQ_INT(r.n, 0);
	t_tmpdir_free(d);
}

/*
 * The limits: a set cancel flag stops the search before the first line;
 * a budget stops a long one (64 KiB lines that cost the most per byte),
 * with a message, after the matches found so far.
 */
static void
test_limits(void)
{
	char *d = t_tmpdir(), err[256] = "", line[65537];
	struct rec r = { d, "", 0, 0 };
	atomic_int stop = 1;
	struct fs_grep_limits lim = { &stop, 0 };
	bool tr = false;
	FILE *f;

	memset(line, 'a', sizeof(line) - 1);
	line[sizeof(line) - 1] = '\n';
	f = fopen(t_path(d, "big"), "w");
	T_OK(f != NULL);
	fputs("ab\n", f);
	for (int i = 0; i < 64; i++)
		fwrite(line, 1, sizeof(line), f);
	fclose(f);
	T_EQ_INT(fs_grep(d, "b", 0, 0, &lim, on_match, &r, &tr, err,
	    sizeof(err)), -ECANCELED);
	T_OK(strstr(err, "cancel") != NULL);
	T_EQ_INT(r.n, 0);
	stop = 0;
	lim.budget_ms = 50;
	err[0] = '\0';
	T_EQ_INT(fs_grep(d, "[a-z]{1,255}[a-z]{1,255}[a-z]{1,255}[a-z]{1,255}"
	    "[a-z]{1,255}[a-z]{1,255}[a-z]{1,255}0", 0, 0, &lim, on_match, &r,
	    &tr, err, sizeof(err)), -ETIMEDOUT);
	T_OK(strstr(err, "50 ms") != NULL);
	T_EQ_INT(r.n, 0);
	lim.budget_ms = 60000;
	T_EQ_INT(fs_grep(d, "b", 0, 0, &lim, on_match, &r, &tr, err,
	    sizeof(err)), 0);
	T_EQ_STR(r.log, "big:1:ab\n");
	t_tmpdir_free(d);
}

/* Unreadable files and directories are skipped (root reads anything). */
static void
test_unreadable(void)
{
	char *d = tree_new();
	struct rec r = { d, "", 0, 0 };
	bool tr;

	if (geteuid() == 0) {
		t_tmpdir_free(d);
		return;
	}
	chmod(t_path(d, "a.txt"), 0);
	chmod(t_path(d, "b"), 0);
	T_EQ_INT(grep(d, "hello", 0, 0, &r, &tr), 0);
	T_EQ_STR(r.log,
	    ".hidden:1:hello hidden\n"
	    "late.dat:2:hello\\0late\n"
	    "long.txt:1:<65536 bytes>\n"
	    "long.txt:3:tail hello\n");
	chmod(t_path(d, "b"), 0755);
	t_tmpdir_free(d);
}

int
main(void)
{
	static const struct t_case cases[] = {
		{ "tree", test_tree },
		{ "icase_anchors", test_icase_anchors },
		{ "file", test_file },
		{ "max", test_max },
		{ "stop", test_stop },
		{ "errors", test_errors },
		{ "limits", test_limits },
		{ "unreadable", test_unreadable },
	};

	umask(022);
	return T_RUN(cases);
}
