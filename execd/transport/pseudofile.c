/*
 * pseudofile.c -- files of kernel (pseudo) file systems read without
 * waiting (see pseudofile.h).
 *
 * Such files are told apart by one fstatfs at open.  They are read on the
 * loop, never in a way that waits: a read that finds nothing puts the
 * response to sleep (HTTP_READ_WAIT) and watches the fd on the loop, whose
 * poll wakes it when there is more.  The body is bounded: it ends at EOF,
 * after PSEUDO_CAP bytes, when the file gives nothing more for
 * PSEUDO_IDLE_MS, or when the waits add up to PSEUDO_WAIT_MS, so that a
 * file that never ends (kmsg, trace_pipe) gives a snapshot, not a stream.
 * Reading on the loop and not on a worker keeps shutdown and a client
 * leaving immediate (a worker blocked in read() cannot be called back).
 * What O_NONBLOCK cannot help -- a read that sleeps in the kernel
 * regardless (a /proc/<pid> file waiting for another process's memory
 * lock, a hung FUSE mount) -- still stalls the loop.  This file is not
 * for regular files of other file systems, which take the fast path of
 * the download route unchanged.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <linux/magic.h>

#include "../core/log.h"
#include "../core/loop.h"
#include "../core/xmalloc.h"
#include "http.h"
#include "pseudofile.h"

#define PSEUDO_CAP	(16u << 20)	/* bytes of a pseudo file's body */
#define PSEUDO_IDLE_MS	2000	/* no new byte for this long: the end */
#define PSEUDO_WAIT_MS	30000	/* all the waits of one body, at most */
#define PSEUDO_RETRY_MS	50	/* poll said ready, read said EAGAIN */

/* A file of a pseudo file system being sent; see the top of the file. */
struct pseudofile {
	int			 fd;		/* O_NONBLOCK */
	struct loop		*loop;
	struct http_reader	*rd;
	uint64_t		 sent;		/* bytes read so far */
	uint64_t		 since;		/* when this wait began; 0: none */
	uint64_t		 waited;	/* ms of the waits before it */
	uint64_t		 timer;		/* 0: none */
	bool			 watching;	/* fd on the loop */
	bool			 woke;		/* by the fd, and read found none */
	bool			 over;		/* a bound was reached */
};

static void	 pseudo_ready(struct loop *, int, void *, int, void *);
static void	 pseudo_timer(struct loop *, uint64_t, void *);

/*
 * True for a file of a kernel filesystem (procfs, sysfs and the like),
 * whose size says nothing of what a read gives: 0 for most of /proc,
 * 4096 for every file of /sys.
 */
bool
pseudofile_is(int fd)
{
	struct statfs sf;

	if (fstatfs(fd, &sf) < 0)
		return false;
	switch (sf.f_type) {
	case PROC_SUPER_MAGIC:
	case SYSFS_MAGIC:
	case DEBUGFS_MAGIC:
	case TRACEFS_MAGIC:
	case SECURITYFS_MAGIC:
	case CGROUP_SUPER_MAGIC:
	case CGROUP2_SUPER_MAGIC:
	case BPF_FS_MAGIC:
		return true;
	default:
		return false;
	}
}

/* The reader of a pseudo file's fd (O_NONBLOCK), for a response. */
struct pseudofile *
pseudofile_new(struct loop *loop, int fd)
{
	struct pseudofile *ps = xcalloc(1, sizeof(*ps));

	ps->fd = fd;
	ps->loop = loop;
	return ps;
}

/* The response reader that a wait wakes. */
void
pseudofile_set_reader(struct pseudofile *ps, struct http_reader *rd)
{
	ps->rd = rd;
}

/*
 * Up to max bytes of the file (> 0), 0 at its end or once a bound is
 * reached, -1 on an error, or HTTP_READ_WAIT with the fd and a timer
 * watched on the loop, which wake the response (ps->rd) again.
 */
ssize_t
pseudofile_read(struct pseudofile *ps, char *out, size_t max)
{
	uint64_t now, limit, left;
	ssize_t n;

	pseudofile_unwait(ps);
	if (ps->over)
		return 0;
	if (ps->sent >= PSEUDO_CAP) {
		log_debug("a pseudo file's download ends at the cap, %u bytes",
		    PSEUDO_CAP);
		ps->over = true;
		return 0;
	}
	if (max > PSEUDO_CAP - ps->sent)
		max = PSEUDO_CAP - ps->sent;
	do
		n = read(ps->fd, out, max);
	while (n < 0 && errno == EINTR);
	now = loop_now_ms();
	if (n >= 0 || errno != EAGAIN) {
		if (ps->since != 0)
			ps->waited += now - ps->since;
		ps->since = 0;
		ps->woke = false;
		if (n > 0)
			ps->sent += (uint64_t)n;
		return n;
	}
	/* Nothing yet: wait, within both bounds of time. */
	if (ps->since == 0)
		ps->since = now;
	limit = ps->waited < PSEUDO_WAIT_MS ? PSEUDO_WAIT_MS - ps->waited : 0;
	if (limit > PSEUDO_IDLE_MS)
		limit = PSEUDO_IDLE_MS;
	if (now - ps->since >= limit) {
		log_debug("a pseudo file's download ends after %llu bytes: "
		    "nothing more for %llu ms", (unsigned long long)ps->sent,
		    (unsigned long long)(now - ps->since));
		ps->over = true;
		return 0;
	}
	left = limit - (now - ps->since);
	/* poll said ready and there was none: poll by time instead. */
	if (ps->woke && left > PSEUDO_RETRY_MS)
		left = PSEUDO_RETRY_MS;
	else if (!ps->woke) {
		loop_add_fd(ps->loop, ps->fd, LOOP_READ, pseudo_ready, ps);
		ps->watching = true;
	}
	ps->timer = loop_timer_add(ps->loop, left, pseudo_timer, ps);
	return HTTP_READ_WAIT;
}

/* Stop waiting: the fd off the loop, the timer cancelled. */
void
pseudofile_unwait(struct pseudofile *ps)
{
	if (ps->watching)
		loop_del(ps->loop, ps->fd, NULL);
	ps->watching = false;
	if (ps->timer != 0)
		loop_timer_cancel(ps->loop, ps->timer);
	ps->timer = 0;
}

/* The fd is readable (or in error): read again. */
static void
pseudo_ready(struct loop *l, int fd, void *zsock, int revents, void *arg)
{
	struct pseudofile *ps = arg;

	pseudofile_unwait(ps);
	ps->woke = true;
	http_reader_wake(ps->rd);
}

/* A bound or a retry is due: read again, which ends the body if due. */
static void
pseudo_timer(struct loop *l, uint64_t id, void *arg)
{
	struct pseudofile *ps = arg;

	ps->timer = 0;
	pseudofile_unwait(ps);
	http_reader_wake(ps->rd);
}

/* Stop waiting and close the file; NULL ok. */
void
pseudofile_free(struct pseudofile *ps)
{
	if (ps == NULL)
		return;
	pseudofile_unwait(ps);
	close(ps->fd);
	free(ps);
}
