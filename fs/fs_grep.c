/*
 * fs_grep.c -- a bounded grep over a file or a tree.
 *
 * The pattern is compiled once by fs_regex (linear-time matching, no
 * backreferences); each file is then read in blocks into one read buffer,
 * and its lines are copied, at most FS_GREP_LINE_MAX bytes of each, into
 * one line buffer that the matcher sees NUL-terminated.  Before every line
 * and every FS_REGEX_CHECK bytes within one, the caller's cancel flag and
 * the time budget are looked at, so a search ends soon after either.  The two
 * buffers are allocated once per search, so memory does not depend on the
 * files.  Trees are walked by fs_walk(); files below the root are opened
 * with O_NOFOLLOW (a file swapped for a link mid-walk is skipped) and
 * O_NONBLOCK (one swapped for a FIFO cannot block the open), then checked
 * to be regular.
 *
 * Not for: context lines, counts, replacing, or deciding what a client may
 * read (the HTTP layer resolves the path).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "fs_grep.h"
#include "fs_regex.h"
#include "fs_walk.h"

/* One read(2); at least FS_GREP_BINARY so the binary test fits. */
#define READ_BUF	(64 * 1024)

struct grep {
	struct fs_regex	*re;
	const atomic_int *cancel;	/* NULL: none */
	uint64_t	 deadline;	/* monotonic ms; 0: none */
	unsigned	 budget_ms;
	char		*err;
	size_t		 errlen;
	fs_grep_cb	*cb;
	void		*arg;
	size_t		 max;		/* 0: no limit */
	size_t		 count;		/* matches reported */
	bool		 more;		/* a match past max was found */
	char		*rbuf;		/* READ_BUF bytes */
	char		*line;		/* FS_GREP_LINE_MAX + 1 bytes */
	size_t		 llen;
	bool		 cut;		/* longer than FS_GREP_LINE_MAX */
	unsigned long	 lineno;
	const char	*path;
};

static uint64_t	now_ms(void);
static int	check(void *);
static void	line_add(struct grep *, const char *, size_t);
static int	line_done(struct grep *);
static ssize_t	read_some(int, char *, size_t);
static int	grep_fd(struct grep *, int);
static int	grep_file(struct grep *, const char *, bool);
static int	visit(const char *, const char *, const struct stat *, int,
		    void *);

static uint64_t
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Whether to go on: -ECANCELED, -ETIMEDOUT (with a message) or 0. */
static int
check(void *arg)
{
	struct grep *g = arg;

	if (g->cancel != NULL && atomic_load(g->cancel) != 0) {
		snprintf(g->err, g->errlen, "the search was cancelled");
		return -ECANCELED;
	}
	if (g->deadline != 0 && now_ms() >= g->deadline) {
		snprintf(g->err, g->errlen, "the search took longer than its "
		    "budget of %u ms", g->budget_ms);
		return -ETIMEDOUT;
	}
	return 0;
}

/* Append what fits of a line's bytes. */
static void
line_add(struct grep *g, const char *p, size_t n)
{
	size_t room = FS_GREP_LINE_MAX - g->llen;

	if (n > room) {
		n = room;
		g->cut = true;
	}
	memcpy(g->line + g->llen, p, n);
	g->llen += n;
}

/*
 * The current line is complete: match it, maybe report it, start the
 * next.  0, 1 when a match past max was found (stop), or cb's error.
 */
static int
line_done(struct grep *g)
{
	size_t len = g->llen;
	int rc;

	if (!g->cut && len > 0 && g->line[len - 1] == '\r')
		len--;
	g->line[len] = '\0';
	if ((rc = check(g)) < 0 ||
	    (rc = fs_regex_match(g->re, g->line, len, check, g)) < 0)
		return rc;
	if (rc == 1) {
		if (g->max != 0 && g->count >= g->max) {
			g->more = true;
			return 1;
		}
		g->count++;
		if ((rc = g->cb(g->path, g->lineno, g->line, len, g->arg)) < 0)
			return rc;
	}
	g->lineno++;
	g->llen = 0;
	g->cut = false;
	return 0;
}

/* read(2) past EINTR: bytes read, 0 at the end, -1 on error. */
static ssize_t
read_some(int fd, char *buf, size_t len)
{
	ssize_t n;

	do
		n = read(fd, buf, len);
	while (n < 0 && errno == EINTR);
	return n;
}

/*
 * Grep the open regular file fd (g->path): 0 (done, skipped as binary, or
 * a read error ended it), 1 to stop (past max), or cb's error.  Steps:
 * 1. read at least FS_GREP_BINARY bytes and look for a NUL in them; 2. cut
 * each block into lines; 3. the last line may lack its newline.
 */
static int
grep_fd(struct grep *g, int fd)
{
	size_t have = 0, seg;
	const char *p, *end, *nl;
	ssize_t n;
	int rc;

	/* 1. */
	while (have < FS_GREP_BINARY) {
		if ((n = read_some(fd, g->rbuf + have, READ_BUF - have)) < 0)
			return 0;
		if (n == 0)
			break;
		have += (size_t)n;
	}
	if (memchr(g->rbuf, '\0', have < FS_GREP_BINARY ? have :
	    FS_GREP_BINARY) != NULL)
		return 0;
	g->llen = 0;
	g->cut = false;
	g->lineno = 1;
	/* 2. */
	while (have > 0) {
		for (p = g->rbuf, end = g->rbuf + have; p < end; p += seg) {
			nl = memchr(p, '\n', (size_t)(end - p));
			seg = (size_t)((nl != NULL ? nl : end) - p);
			line_add(g, p, seg);
			if (nl == NULL)
				continue;
			seg++;
			if ((rc = line_done(g)) != 0)
				return rc;
		}
		/* A read error ends the file as if it were its end. */
		if ((n = read_some(fd, g->rbuf, READ_BUF)) <= 0)
			break;
		have = (size_t)n;
	}
	/* 3. */
	if (g->llen > 0 || g->cut)
		return line_done(g);
	return 0;
}

/*
 * Grep the file at path, skipping it silently if it cannot be opened or
 * is not a regular file.  nofollow: refuse a link.  As grep_fd().
 */
static int
grep_file(struct grep *g, const char *path, bool nofollow)
{
	struct stat st;
	int fd, rc;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY |
	    (nofollow ? O_NOFOLLOW : 0));
	if (fd < 0)
		return 0;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return 0;
	}
	g->path = path;
	rc = grep_fd(g, fd);
	close(fd);
	return rc;
}

/*
 * Walker callback: grep regular files; skip directories that cannot be
 * opened (so the walk does not fail on them) and everything else.
 * -ECANCELED stops the walk once a match past max was found.
 */
static int
visit(const char *path, const char *rel, const struct stat *st, int depth,
    void *arg)
{
	struct grep *g = arg;
	int fd, rc;

	if (S_ISDIR(st->st_mode)) {
		fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
		    O_CLOEXEC);
		if (fd < 0)
			return 1;
		close(fd);
		return 0;
	}
	if (!S_ISREG(st->st_mode))
		return 0;
	if ((rc = check(g)) < 0)
		return rc;
	/* Past max: stop the walk (fs_grep sees g->more). */
	if ((rc = grep_file(g, path, true)) == 1)
		return -ECANCELED;
	return rc;
}

/* Search a file or a tree; see fs_grep.h. */
int
fs_grep(const char *path, const char *pattern, unsigned flags,
    size_t max_matches, const struct fs_grep_limits *lim, fs_grep_cb *cb,
    void *arg, bool *truncated, char *err, size_t errlen)
{
	struct grep g;
	struct stat st;
	int rc;

	if (path == NULL || pattern == NULL || path[0] == '\0') {
		snprintf(err, errlen, "empty path or pattern");
		return -EINVAL;
	}
	memset(&g, 0, sizeof(g));
	if ((rc = fs_regex_compile(pattern, flags & FS_GREP_ICASE ?
	    FS_REGEX_ICASE : 0, &g.re, err, errlen)) < 0)
		return rc;
	g.err = err;
	g.errlen = errlen;
	if (lim != NULL) {
		g.cancel = lim->cancel;
		g.budget_ms = lim->budget_ms;
		if (lim->budget_ms != 0)
			g.deadline = now_ms() + lim->budget_ms;
	}
	g.cb = cb;
	g.arg = arg;
	g.max = max_matches;
	if (stat(path, &st) < 0) {
		rc = -errno;
		snprintf(err, errlen, "%s: %s", path, strerror(-rc));
		goto out;
	}
	if ((g.rbuf = malloc(READ_BUF)) == NULL ||
	    (g.line = malloc(FS_GREP_LINE_MAX + 1)) == NULL) {
		rc = -ENOMEM;
		snprintf(err, errlen, "out of memory");
		goto out;
	}
	if (S_ISREG(st.st_mode))
		rc = grep_file(&g, path, false);
	else if (S_ISDIR(st.st_mode))
		rc = fs_walk(path, FS_WALK_ALL, visit, &g, err, errlen);
	else {
		rc = -EINVAL;
		snprintf(err, errlen, "%s: not a file or a directory", path);
	}
	/* Stopped by a match past max: that is success. */
	if (g.more)
		rc = 0;
	if (rc == 0)
		*truncated = g.more;
out:
	free(g.line);
	free(g.rbuf);
	fs_regex_free(g.re);
	return rc;
}
