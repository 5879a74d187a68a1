/*
 * fuzz_fs_watch.c -- fuzz target for the inotify event decoder
 * (fs/fs_watch.c), through fs_watch.h only.
 *
 * A real watch is made on a scratch tree (root, root/sub), recursive when
 * byte 0 bit 0 says so; its descriptor is then replaced by a pipe holding
 * the rest of the input, so fs_watch_read() decodes fuzzed bytes as
 * kernel events (the root's watch is 1, sub's 2).  With byte 0 bit 1 the
 * input is put at the very end of one full read (64 KiB), after a filler
 * event for an unknown watch, so a field that points past the data read
 * points past the buffer too.  Invariants, any break aborts: every event
 * has a known kind and a path that is the root or under it, with no NUL
 * and no longer than the root plus the bytes given; only moves carry a
 * cookie; nothing follows "gone"; a callback error stops the read and the
 * next read goes on; fs_watch_read() never loops forever.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../fs/fs_watch.h"
#include "fz.h"

#define FULL_READ	(64 * 1024)

static char	 root[256];
static size_t	 rootlen;

struct seen {
	size_t	 n;
	bool	 gone;
	size_t	 maxlen;
	int	 stop_at;	/* the callback fails at this event, once */
};

static int
on_event(const struct fs_watch_event *e, void *arg)
{
	struct seen *s = arg;
	size_t len;

	CHECK(!s->gone);
	CHECK(e->kind >= FS_W_CREATE && e->kind <= FS_W_GONE);
	CHECK(strcmp(fs_watch_kind_name(e->kind), "unknown") != 0);
	CHECK(e->path != NULL);
	len = strlen(e->path);
	CHECK(len <= s->maxlen);
	CHECK(strncmp(e->path, root, rootlen) == 0 &&
	    (e->path[rootlen] == '\0' || e->path[rootlen] == '/'));
	if (e->kind != FS_W_MOVED_FROM && e->kind != FS_W_MOVED_TO)
		CHECK(e->cookie == 0);
	if (e->kind == FS_W_GONE || e->kind == FS_W_OVERFLOW)
		CHECK(strcmp(e->path, root) == 0);
	if (e->kind == FS_W_GONE)
		s->gone = true;
	if ((int)s->n++ == s->stop_at)
		return -EINTR;
	return 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fs_watch_opts o = { 0 };
	struct inotify_event fill = { .wd = -1 };
	struct fs_watch *fw;
	struct seen s = { 0 };
	char err[256], sub[300], *buf;
	size_t n, pad = 0;
	int p[2], rc, i;

	if (size < 2 || size - 1 > FULL_READ)
		return 0;
	if (root[0] == '\0') {
		snprintf(root, sizeof(root), "%s/fuzz_fs_watch.XXXXXX",
		    P_tmpdir);
		if (mkdtemp(root) == NULL)
			abort();
		snprintf(sub, sizeof(sub), "%s/sub", root);
		if (mkdir(sub, 0700) < 0)
			abort();
		rootlen = strlen(root);
	}
	o.recursive = data[0] & 1;
	o.max_queue = data[0] & 4 ? 3 : 0;
	s.stop_at = data[0] & 8 ? (data[0] >> 4) : -1;
	n = size - 1;
	if (data[0] & 2) {
		pad = FULL_READ - n;
		if (pad > 0 && pad < sizeof(fill))
			return 0;
	}
	if ((fw = fs_watch_new(root, &o, err, sizeof(err))) == NULL)
		abort();
	CHECK(fs_watch_count(fw) == (o.recursive ? 2u : 1u));
	/* The decoder now reads our bytes instead of the kernel's. */
	if (pipe2(p, O_NONBLOCK | O_CLOEXEC) < 0 ||
	    dup3(p[0], fs_watch_fd(fw), O_CLOEXEC) < 0)
		abort();
	close(p[0]);
	if ((buf = calloc(1, pad + n)) == NULL)
		abort();
	if (pad > 0) {
		fill.len = (uint32_t)(pad - sizeof(fill));
		memcpy(buf, &fill, sizeof(fill));
	}
	memcpy(buf + pad, data + 1, n);
	if (write(p[1], buf, pad + n) != (ssize_t)(pad + n))
		abort();
	free(buf);
	close(p[1]);
	/* Names come from the bytes given, each at most once per event. */
	s.maxlen = rootlen + 1 + n + 1 + rootlen + n;
	for (i = 0; i < 1000; i++) {
		rc = fs_watch_read(fw, on_event, &s);
		if (rc != -EINTR)
			break;
		s.stop_at = -1;
	}
	CHECK(i < 1000);
	CHECK(rc == 0 || rc == -ENOMEM);
	/* All read: the pipe is at its end, and another read gives nothing. */
	n = s.n;
	CHECK(fs_watch_read(fw, on_event, &s) == 0);
	CHECK(s.n == n);
	fs_watch_free(fw);
	return 0;
}
