/*
 * cmdlog.c -- a command's events in files, and readers replaying them (see
 * cmdlog.h).
 *
 * The writer appends whole events with one write(2) per batch, on the loop
 * thread, so a reader (same thread) never sees half an event.  Readers
 * keep their own descriptor on the file they are in: a file removed by the
 * rotation can still be read to its end by whoever has it open, and a
 * reader that comes to a file already gone jumps to the oldest one kept
 * after it.
 * Which events a reader still has to drop, and whether some are missing,
 * it learns from the "seq" that ends every event.
 * Most commands say little, and creating a file costs more than running
 * `true`; so the first file is kept in memory until it passes CMDLOG_MEM
 * bytes (or a file's size), or all such memory passes CMDLOG_MEM_TOTAL,
 * and only then
 * written out (readers find the same bytes at the same offsets either
 * way).  This file does not know
 * about HTTP or streams; feed.c does.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../core/log.h"
#include "../core/loop.h"
#include "../core/xmalloc.h"
#include "cmdlog.h"

#define CMDLOG_MEM	(64 << 10)	/* file 0 in memory up to this */
#define CMDLOG_MEM_TOTAL (16 << 20)	/* ... while all of them fit here */

struct cmdlog {
	char			*prefix;
	struct buf		 mem;		/* file 0, while in_mem */
	bool			 in_mem;
	size_t			 cap;
	size_t			 filecap;
	uint64_t		 maxfiles;	/* kept after 0, at most */
	uint64_t		 first, cur;	/* oldest kept after 0, current */
	uint64_t		 seq0;		/* the first seq of file 0 */
	uint64_t		*seqs;		/* of files first..cur */
	size_t			 nseqs;		/* room in seqs */
	int			 fd;		/* current file; -1: ended */
	size_t			 len;		/* of the current file */
	bool			 ended;
	bool			 warned;
	struct cmdlog_reader	*readers;
	size_t			 nreaders;
};

struct cmdlog_reader {
	struct cmdlog		*log;		/* NULL once freed */
	uint64_t		 file;		/* the file being read */
	int			 fd;		/* open on it, or -1 */
	off_t			 off;
	uint64_t		 last;		/* seq of the last given */
	bool			 filter;	/* drop events up to last */
	char			*buf;
	size_t			 bufcap;
	cmdlog_notify_cb	*notify;
	void			*arg;
	struct cmdlog_reader	*prev, *next;
};

static char	*file_path(const struct cmdlog *, uint64_t);
static uint64_t	*seq_of(struct cmdlog *, uint64_t);
static bool	 kept(const struct cmdlog *, uint64_t);
static void	 trim(struct cmdlog *);
static int	 open_file(struct cmdlog *, uint64_t);
static int	 write_all(struct cmdlog *, const char *, size_t);
static int	 spill(struct cmdlog *);

static size_t	 mem_total;	/* bytes of every log's file 0 in memory */
static void	 rotate(struct cmdlog *);
static void	 notify_all(struct cmdlog *);
static uint64_t	 seq_at_end(const char *, size_t);
static void	 gap(struct cmdlog_reader *, struct buf *, uint64_t);
static size_t	 take(struct cmdlog_reader *, struct buf *, size_t);

/* <prefix>.<n>.events */
static char *
file_path(const struct cmdlog *l, uint64_t n)
{
	return xasprintf("%s.%llu.events", l->prefix, (unsigned long long)n);
}

/* Where the number of the first event of file n is kept. */
static uint64_t *
seq_of(struct cmdlog *l, uint64_t n)
{
	if (n == 0)
		return &l->seq0;
	if (n < l->first || n - l->first >= l->nseqs)
		fatalx("file %llu of %s is not kept", (unsigned long long)n,
		    l->prefix);
	return &l->seqs[n - l->first];
}

/* Whether file n is (still) there: the first one, first..cur. */
static bool
kept(const struct cmdlog *l, uint64_t n)
{
	return n == 0 || (n >= l->first && n <= l->cur);
}

/* Create file n and make it the one written.  0 or -errno. */
static int
open_file(struct cmdlog *l, uint64_t n)
{
	char *path = file_path(l, n);
	int fd, e;

	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC,
	    0600);
	e = errno;
	free(path);
	if (fd < 0)
		return -e;
	if (l->fd >= 0)
		close(l->fd);
	l->fd = fd;
	l->len = 0;
	return 0;
}

/* A new history; see cmdlog.h. */
int
cmdlog_new(const char *prefix, size_t cap, size_t lag, struct cmdlog **out)
{
	struct cmdlog *l = xcalloc(1, sizeof(*l));

	l->prefix = xstrdup(prefix);
	l->cap = cap;
	l->filecap = cap / 3 > 0 ? cap / 3 : 1;
	l->maxfiles = lag / l->filecap > 2 ? lag / l->filecap : 2;
	l->first = 1;
	l->fd = -1;
	buf_init(&l->mem);
	l->in_mem = true;
	*out = l;
	return 0;
}

/* Write file 0 out of memory; from now on the log is all files. */
static int
spill(struct cmdlog *l)
{
	int rc;

	if ((rc = open_file(l, 0)) < 0)
		return rc;
	l->in_mem = false;
	mem_total -= l->mem.len;
	if (l->mem.len > 0 && (rc = write_all(l, l->mem.p, l->mem.len)) < 0)
		return rc;
	l->len = l->mem.len;
	buf_reset(&l->mem);
	return 0;
}

/*
 * Write p[0..n) at the end of the current file, whole or not at all.
 * 0 or -errno (logged once).
 */
static int
write_all(struct cmdlog *l, const char *p, size_t n)
{
	size_t done = 0;
	ssize_t w;
	int e;

	while (done < n) {
		w = write(l->fd, p + done, n - done);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			e = w < 0 ? errno : ENOSPC;
			/* No half event may stay for a reader to find. */
			if (ftruncate(l->fd, (off_t)l->len) < 0)
				e = errno;
			if (!l->warned)
				log_warnx("%s: events not kept: %s", l->prefix,
				    strerror(e));
			l->warned = true;
			return -e;
		}
		done += (size_t)w;
	}
	return 0;
}

/*
 * The sequence number of the event that ends p[0..n) (which ends with
 * "\n\n"), or 0 if it has none.  The number is the event's last field.
 */
static uint64_t
seq_at_end(const char *p, size_t n)
{
	static const char key[] = "\"seq\":";
	size_t i, j;
	uint64_t v = 0;

	if (n < 3 || p[n - 1] != '\n' || p[n - 2] != '\n' || p[n - 3] != '}')
		return 0;
	i = n - 3;
	for (j = i; j > 0 && p[j - 1] >= '0' && p[j - 1] <= '9'; j--)
		;
	if (j == i || i - j > 19 || j < sizeof(key) - 1 ||
	    memcmp(p + j - (sizeof(key) - 1), key, sizeof(key) - 1) != 0)
		return 0;
	for (; j < i; j++)
		v = v * 10 + (uint64_t)(p[j] - '0');
	return v;
}

/* Start a new file. */
static void
rotate(struct cmdlog *l)
{
	uint64_t n = l->cur + 1;
	int rc;

	if ((rc = open_file(l, n)) < 0) {
		/* Keep writing where we are; the history just grows. */
		if (!l->warned)
			log_warnx("%s: cannot start a new file: %s",
			    l->prefix, strerror(-rc));
		l->warned = true;
		return;
	}
	if (n - l->first >= l->nseqs) {
		l->nseqs = l->nseqs * 2 + 4;
		l->seqs = xrealloc(l->seqs, l->nseqs * sizeof(*l->seqs));
	}
	l->cur = n;
	*seq_of(l, n) = 0;
	trim(l);
}

/*
 * Remove the files nobody needs.  File 0 stays, the head of the history,
 * and so do the last two.  A file before them goes once every reader is
 * past it (one that has it open can read it to its end), or when more
 * than maxfiles are kept: a reader that far behind loses some.
 */
static void
trim(struct cmdlog *l)
{
	uint64_t need = l->cur, n;
	char *path;

	for (struct cmdlog_reader *r = l->readers; r != NULL; r = r->next) {
		n = r->fd >= 0 ? r->file + 1 : r->file;
		if (n < need)
			need = n;
	}
	while (l->first + 2 <= l->cur && (l->first < need ||
	    l->cur - l->first + 1 > l->maxfiles)) {
		path = file_path(l, l->first);
		unlink(path);
		free(path);
		memmove(l->seqs, l->seqs + 1, (l->cur - l->first) *
		    sizeof(*l->seqs));
		l->first++;
	}
}

/* What the log keeps: file 0 (in memory or not) and first..cur. */
uint64_t
cmdlog_size(const struct cmdlog *l)
{
	uint64_t total = l->in_mem ? l->mem.len : 0;
	struct stat st;
	char *path;

	for (uint64_t n = l->in_mem ? l->first : 0; n <= l->cur; n++) {
		if (n != 0 && n < l->first)
			n = l->first;
		path = file_path(l, n);
		if (stat(path, &st) == 0)
			total += (uint64_t)st.st_size;
		free(path);
	}
	return total;
}

/* Append whole events and tell the readers. */
int
cmdlog_append(struct cmdlog *l, const char *p, size_t n)
{
	const char *end;
	int rc;

	if (l->ended)
		return -EPIPE;
	if (n == 0)
		return 0;
	if (l->in_mem && l->mem.len + n <= CMDLOG_MEM &&
	    l->mem.len + n <= l->filecap &&
	    mem_total + n <= CMDLOG_MEM_TOTAL) {
		if (l->len == 0 && (end = memmem(p, n, "\n\n", 2)) != NULL)
			l->seq0 = seq_at_end(p, (size_t)(end - p) + 2);
		buf_add(&l->mem, p, n);
		mem_total += n;
		l->len += n;
		notify_all(l);
		return 0;
	}
	if (l->in_mem && (rc = spill(l)) < 0)
		return rc;
	if (l->len >= l->filecap)
		rotate(l);
	if (l->len == 0 && (end = memmem(p, n, "\n\n", 2)) != NULL)
		*seq_of(l, l->cur) = seq_at_end(p, (size_t)(end - p) + 2);
	if ((rc = write_all(l, p, n)) < 0)
		return rc;
	l->len += n;
	notify_all(l);
	return 0;
}

/* The last event is in. */
void
cmdlog_end(struct cmdlog *l)
{
	if (l->ended)
		return;
	l->ended = true;
	if (l->fd >= 0)
		close(l->fd);
	l->fd = -1;
	notify_all(l);
}

/* Readers open on the log. */
size_t
cmdlog_readers(const struct cmdlog *l)
{
	return l->nreaders;
}

/* Tell every reader there is something new. */
static void
notify_all(struct cmdlog *l)
{
	struct cmdlog_reader *r, *next;

	for (r = l->readers; r != NULL; r = next) {
		next = r->next;
		if (r->notify != NULL)
			r->notify(r, r->arg);
	}
}

/* Remove the files; readers still open end at their next pull. */
void
cmdlog_free(struct cmdlog *l)
{
	struct cmdlog_reader *r, *next;
	char *path;

	if (l == NULL)
		return;
	if (l->fd >= 0)
		close(l->fd);
	if (l->in_mem)
		mem_total -= l->mem.len;
	buf_reset(&l->mem);
	for (uint64_t n = l->in_mem ? 1 : 0; n <= l->cur; n++) {
		if (!kept(l, n))
			continue;
		path = file_path(l, n);
		unlink(path);
		free(path);
	}
	for (r = l->readers; r != NULL; r = next) {
		next = r->next;
		r->log = NULL;
		r->prev = r->next = NULL;
		if (r->notify != NULL)
			r->notify(r, r->arg);
	}
	free(l->seqs);
	free(l->prefix);
	free(l);
}

/* A reader starting in the newest file whose first event it needs. */
struct cmdlog_reader *
cmdlog_reader_new(struct cmdlog *l, uint64_t after, cmdlog_notify_cb *notify,
    void *arg)
{
	struct cmdlog_reader *r = xcalloc(1, sizeof(*r));
	uint64_t s;

	r->log = l;
	r->file = 0;
	for (uint64_t n = 0; n <= l->cur; n++) {
		if (!kept(l, n))
			continue;
		s = *seq_of(l, n);
		if (s != 0 && (after == UINT64_MAX || s <= after + 1))
			r->file = n;
	}
	r->fd = -1;
	r->last = after;
	r->filter = true;
	r->notify = notify;
	r->arg = arg;
	r->next = l->readers;
	if (l->readers != NULL)
		l->readers->prev = r;
	l->readers = r;
	l->nreaders++;
	return r;
}

/* The number of the last event pulled. */
uint64_t
cmdlog_reader_last(const struct cmdlog_reader *r)
{
	return r->last;
}

/* The event that says events first..before-1 were not kept. */
static void
gap(struct cmdlog_reader *r, struct buf *out, uint64_t before)
{
	char text[256];
	struct sse_event ev = { .type = "history_gap", .text = text,
	    .timestamp = loop_wall_ms() };

	snprintf(text, sizeof(text), "events %llu to %llu were not kept: a "
	    "command keeps about %zu bytes of its events, the first and the "
	    "latest",
	    (unsigned long long)r->last + 1, (unsigned long long)before - 1,
	    r->log != NULL ? r->log->cap : (size_t)0);
	sse_fmt_event(out, &ev);
}

/*
 * Whole events of buf[0..n) to out: the ones already given are dropped
 * while filtering, and a jump in the numbers is announced.  Returns the
 * bytes used (all of them up to the last complete event).
 */
static size_t
take(struct cmdlog_reader *r, struct buf *out, size_t n)
{
	const char *p = r->buf, *e;
	size_t end = 0, m;
	uint64_t seq;

	for (size_t i = n; i >= 2; i--) {
		if (p[i - 1] == '\n' && p[i - 2] == '\n') {
			end = i;
			break;
		}
	}
	n = end;
	while (r->filter && n > 0) {
		/* Only a stray newline can hold no event end ("\n\n\n"). */
		if ((e = memmem(p, n, "\n\n", 2)) == NULL) {
			n = 0;
			break;
		}
		m = (size_t)(e - p) + 2;
		seq = seq_at_end(p, m);
		if (seq != 0 && seq <= r->last) {
			p += m;
			n -= m;
			continue;
		}
		if (seq > r->last + 1)
			gap(r, out, seq);
		r->filter = false;
	}
	if (n > 0) {
		buf_add(out, p, n);
		if ((seq = seq_at_end(p, n)) != 0)
			r->last = seq;
	}
	return end;
}

/* The next events; see cmdlog.h. */
int
cmdlog_reader_pull(struct cmdlog_reader *r, struct buf *out,
    size_t chunk)
{
	struct cmdlog *l = r->log;
	char *path;
	ssize_t got;
	size_t used;

	for (;;) {
		if (l == NULL)
			return CMDLOG_END;
		if (r->file == 0 && l->in_mem) {
			/* File 0 is still in memory: read it there. */
			if (r->bufcap < chunk) {
				free(r->buf);
				r->bufcap = chunk;
				r->buf = xmalloc(r->bufcap);
			}
			got = (ssize_t)(l->mem.len - (size_t)r->off);
			if ((size_t)got > r->bufcap)
				got = (ssize_t)r->bufcap;
			if (got > 0)
				memcpy(r->buf, l->mem.p + r->off, (size_t)got);
			goto have;
		}
		if (r->fd < 0) {
			if (!kept(l, r->file)) {
				r->file = l->first;	/* removed: jump */
				r->off = 0;
				r->filter = true;
			}
			path = file_path(l, r->file);
			r->fd = open(path, O_RDONLY | O_CLOEXEC);
			free(path);
			if (r->fd < 0)
				return CMDLOG_END;
		}
		if (r->bufcap < chunk) {
			free(r->buf);
			r->bufcap = chunk;
			r->buf = xmalloc(r->bufcap);
		}
		got = pread(r->fd, r->buf, r->bufcap, r->off);
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0)
			return CMDLOG_END;
have:
		used = take(r, out, (size_t)got);
		if (used == 0 && (size_t)got == r->bufcap) {
			/* One event larger than the buffer: read it whole. */
			r->bufcap *= 2;
			r->buf = xrealloc(r->buf, r->bufcap);
			continue;
		}
		if (r->bufcap > 4 * chunk) {
			free(r->buf);
			r->buf = NULL;
			r->bufcap = 0;
		}
		if (used > 0) {
			r->off += (off_t)used;
			return CMDLOG_MORE;
		}
		/* At the end of this file. */
		if (r->file < l->cur) {
			close(r->fd);
			r->fd = -1;
			r->file++;
			r->off = 0;
			r->filter = true;
			trim(l);	/* it may have been the last to need it */
			continue;
		}
		return l->ended ? CMDLOG_END : CMDLOG_WAIT;
	}
}

/* Stop reading. */
void
cmdlog_reader_free(struct cmdlog_reader *r)
{
	if (r == NULL)
		return;
	if (r->log != NULL) {
		if (r->prev != NULL)
			r->prev->next = r->next;
		else
			r->log->readers = r->next;
		if (r->next != NULL)
			r->next->prev = r->prev;
		r->log->nreaders--;
		trim(r->log);
	}
	if (r->fd >= 0)
		close(r->fd);
	free(r->buf);
	free(r);
}
