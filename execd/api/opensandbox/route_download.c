/*
 * route_download.c -- GET /files/download: a file's bytes, whole, one
 * byte range, or a window of lines.
 *
 * Regular files are served from their file descriptor: whole or one
 * range through MHD's file responses (sendfile), a window of lines
 * through a content reader, so memory stays flat whatever the size.
 * Files of kernel (pseudo) file systems, whose size says nothing and
 * whose reads may wait forever, are read without waiting by pseudofile.c,
 * whole (chunked, bounded) or as a window of lines.  The file is opened
 * on a worker (http_req_work): an open on a hung network or FUSE mount
 * waits for ever, and must cost this request (a 504 after --fs-timeout),
 * not the loop.  Not for directories (route_archive.c) nor uploads
 * (route_upload.c).  Loop thread only, but for the opening job's fn.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../../sse/sse_fmt.h"
#include "../../../util/buf.h"
#include "../../core/xmalloc.h"
#include "../../transport/http.h"
#include "../../transport/pseudofile.h"
#include "../../transport/range.h"
#include "../../transport/xferhdr.h"
#include "../reqpath.h"
#include "route.h"

/* A window of lines of a file, produced as the client reads. */
struct window {
	int		 fd;
	struct pseudofile *ps;	/* the fd's reader, for a pseudo file */
	uint64_t	 first, count;	/* count 0: to the end */
	uint64_t	 cur;		/* line number being read, from 1 */
	uint64_t	 begun;		/* lines of the window begun */
	uint64_t	 crs;		/* '\r' held back: trailing ones go */
	bool		 in_line, done;
	size_t		 pos, len;
	char		 buf[65536];
};

/* A download being opened: on a worker, then answered on the loop. */
struct dl {
	char		 path[PATH_MAX];
	const char	*os, *ls, *range;	/* the request's, while it waits */
	long long	 off, lim;
	int		 fd;
	int		 rc;		/* 0, or the open's or fstat's -errno */
	bool		 pseudo;
	struct stat	 st;
};

static void	 dl_open(void *);
static void	 dl_opened(struct http_req *, void *);
static void	 dl_answer(struct http_req *, const struct dl *);
static void	 range_refuse(struct http_req *, const char *, int, uint64_t);
static ssize_t	 whole_read(void *, char *, size_t);
static void	 whole_done(void *);
static ssize_t	 window_read(void *, char *, size_t);
static void	 window_done(void *);

/* 416 with a JSON body saying why, and the size in Content-Range. */
static void
range_refuse(struct http_req *req, const char *range, int rc, uint64_t size)
{
	char hdr[64], msg[256];
	struct buf b;
	json_t *v;

	snprintf(hdr, sizeof(hdr), "bytes */%llu", (unsigned long long)size);
	if (rc == -ERANGE)
		snprintf(msg, sizeof(msg), "range not satisfiable: %.64s "
		    "does not overlap the file's %llu bytes", range,
		    (unsigned long long)size);
	else
		snprintf(msg, sizeof(msg), "invalid Range header: %.64s",
		    range);
	v = json_pack("{s:s, s:s}", "code", "INVALID_RANGE", "message", msg);
	buf_init(&b);
	if (v == NULL || sse_fmt_json(&b, v) < 0)	/* not UTF-8 */
		buf_adds(&b, "{\"code\":\"INVALID_RANGE\",\"message\":"
		    "\"invalid Range header\"}");
	json_decref(v);
	http_reply_text(req, 416, "application/json; charset=utf-8", b.p,
	    b.len, "Content-Range", hdr);
	buf_reset(&b);
}

/*
 * GET /files/download?path=P: the file's bytes; a Range header gives 206
 * with the first range; offset/limit give a window of lines as text.
 */
void
route_files_download(struct http_req *req)
{
	struct dl *d = xcalloc(1, sizeof(*d));

	d->fd = -1;
	d->os = http_req_query(req, "offset");
	d->ls = http_req_query(req, "limit");
	d->range = http_req_header(req, "Range");
	if (reqpath_query(req, d->path, sizeof(d->path)) < 0)
		goto out;
	if ((d->os != NULL || d->ls != NULL) && d->range != NULL) {
		http_reply_error(req, 400, HTTP_E_BODY, "line-based reading "
		    "(offset/limit) and byte range (Range header) are "
		    "mutually exclusive");
		goto out;
	}
	if ((d->off = xferhdr_window_arg(d->os)) < 0 ||
	    (d->lim = xferhdr_window_arg(d->ls)) < 0) {
		http_reply_error(req, 400, HTTP_E_BODY, "invalid query "
		    "parameter '%s': %s", d->off < 0 ? "offset" : "limit",
		    d->off < 0 ? d->os : d->ls);
		goto out;
	}
	http_req_work(req, 0, NULL, dl_open, dl_opened, d);
	return;
out:
	free(d);
}

/*
 * On a worker: open and describe the file.  O_NONBLOCK, so that a FIFO
 * does not wait for a writer (it is refused); a regular file of a disk
 * loses it again, a pseudo file keeps it: a read of it may wait forever.
 */
static void
dl_open(void *arg)
{
	struct dl *d = arg;

	if ((d->fd = open(d->path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)) < 0) {
		d->rc = -errno;
		return;
	}
	if (fstat(d->fd, &d->st) < 0) {
		d->rc = -errno;
		return;
	}
	if (!S_ISREG(d->st.st_mode))
		return;
	if ((d->pseudo = pseudofile_is(d->fd)) == false)
		fcntl(d->fd, F_SETFL, fcntl(d->fd, F_GETFL) & ~O_NONBLOCK);
}

/* On the loop: answer with the file opened (req NULL: only free). */
static void
dl_opened(struct http_req *req, void *arg)
{
	struct dl *d = arg;

	if (req == NULL || d->rc < 0) {
		if (d->fd >= 0)
			close(d->fd);
		if (req != NULL && d->fd < 0)
			http_reply_errno(req, d->rc, "file not found. open %s: "
			    "%s", d->path, strerror(-d->rc));
		else if (req != NULL)
			http_reply_errno(req, d->rc, "error accessing file: "
			    "%s", strerror(-d->rc));
	} else {
		dl_answer(req, d);	/* the fd goes with the answer */
	}
	free(d);
}

/* The answer, whatever its shape, from the file d opened. */
static void
dl_answer(struct http_req *req, const struct dl *d)
{
	const char *os = d->os, *ls = d->ls, *range = d->range, *base;
	const char *path = d->path;
	char hdr[128];
	long long off = d->off, lim = d->lim;
	struct http_resp *hr;
	struct buf b;
	struct window *ln;
	struct pseudofile *ps = NULL;
	struct stat st = d->st;
	uint64_t start, len;
	int fd = d->fd, rc;

	if (!S_ISREG(st.st_mode)) {
		close(fd);
		http_reply_error(req, 400, HTTP_E_BODY, S_ISDIR(st.st_mode) ?
		    "path is a directory: %s (GET /files/archive sends a "
		    "directory)" : "not a regular file: %s", path);
		return;
	}
	if (d->pseudo)
		ps = pseudofile_new(http_req_loop(req), fd);
	if (os == NULL && ls == NULL && ps != NULL) {
		/* Whole and chunked: no length to promise, no range of it. */
		hr = http_resp_reader(whole_read, whole_done, ps);
		pseudofile_set_reader(ps, http_resp_reader_of(hr));
		http_resp_header(hr, "Content-Type",
		    "application/octet-stream");
		http_reply_resp(req, 200, hr);
		return;
	}
	if (os != NULL || ls != NULL) {
		ln = xcalloc(1, sizeof(*ln));
		ln->fd = fd;
		ln->ps = ps;
		ln->first = off > 0 ? (uint64_t)off : 1;
		ln->count = (uint64_t)lim;
		ln->cur = 1;
		hr = http_resp_reader(window_read, window_done, ln);
		if (ps != NULL)
			pseudofile_set_reader(ps,
			    http_resp_reader_of(hr));
		http_resp_header(hr, "Content-Type",
		    "text/plain; charset=utf-8");
		http_reply_resp(req, 200, hr);
		return;
	}
	if (range != NULL) {
		rc = range_parse(range, (uint64_t)st.st_size, &start, &len);
		if (rc < 0) {
			close(fd);
			range_refuse(req, range, rc, (uint64_t)st.st_size);
			return;
		}
	} else {
		start = 0;
		len = (uint64_t)st.st_size;
		if (xferhdr_not_modified(http_req_header(req,
		    "If-Modified-Since"), st.st_mtime)) {
			close(fd);
			http_reply_text(req, 304, "application/octet-stream",
			    "", 0, NULL, NULL);
			return;
		}
	}
	hr = http_resp_fd(fd, start, len);
	http_resp_header(hr, "Content-Type", "application/octet-stream");
	base = strrchr(path, '/');
	buf_init(&b);
	xferhdr_disposition(&b, base != NULL ? base + 1 : path);
	http_resp_header(hr, "Content-Disposition", b.p);
	buf_reset(&b);
	if (range != NULL) {
		snprintf(hdr, sizeof(hdr), "bytes %llu-%llu/%llu",
		    (unsigned long long)start,
		    (unsigned long long)(start + len - 1),
		    (unsigned long long)st.st_size);
		http_resp_header(hr, "Content-Range", hdr);
		http_reply_resp(req, 206, hr);
		return;
	}
	http_resp_header(hr, "Accept-Ranges", "bytes");
	xferhdr_date(st.st_mtime, hdr, sizeof(hdr));
	http_resp_header(hr, "Last-Modified", hdr);
	http_reply_resp(req, 200, hr);
}

/* A pseudo file, whole, to its end or a bound (arg is the pseudo). */
static ssize_t
whole_read(void *arg, char *out, size_t max)
{
	return pseudofile_read(arg, out, max);
}

/* The response is over: close the pseudo file. */
static void
whole_done(void *arg)
{
	pseudofile_free(arg);
}

/*
 * Lines first..first+count-1 joined by '\n', no newline after the last,
 * each without its trailing '\r's: upstream's line window.
 */
static ssize_t
window_read(void *arg, char *out, size_t max)
{
	struct window *ln = arg;
	size_t n = 0;
	ssize_t got;
	bool win;
	char c;

	while (n < max && !ln->done) {
		if (ln->pos == ln->len) {
			if (ln->ps != NULL) {
				got = pseudofile_read(ln->ps, ln->buf,
				    sizeof(ln->buf));
				if (got == HTTP_READ_WAIT && n > 0) {
					/* Send these first: no wait yet. */
					pseudofile_unwait(ln->ps);
					return (ssize_t)n;
				}
				if (got == HTTP_READ_WAIT)
					return got;
			} else
				got = read(ln->fd, ln->buf, sizeof(ln->buf));
			if (got < 0 && errno == EINTR)
				continue;
			if (got < 0)
				return -1;
			if (got == 0) {
				ln->done = true;
				break;
			}
			ln->pos = 0;
			ln->len = (size_t)got;
		}
		if (ln->count > 0 && ln->cur >= ln->first + ln->count) {
			ln->done = true;
			break;
		}
		win = ln->cur >= ln->first;
		if (!ln->in_line) {
			/* A line begins: the separator goes before it. */
			if (win && ln->begun > 0)
				out[n++] = '\n';
			ln->in_line = true;
			ln->begun += win;
			continue;
		}
		c = ln->buf[ln->pos];
		if (c == '\n') {
			ln->crs = 0;
			ln->in_line = false;
			ln->cur++;
			ln->pos++;
			continue;
		}
		if (!win) {
			ln->pos++;
			continue;
		}
		if (c == '\r') {
			ln->crs++;
			ln->pos++;
			continue;
		}
		while (ln->crs > 0 && n < max) {
			out[n++] = '\r';
			ln->crs--;
		}
		if (n == max)
			break;
		out[n++] = c;
		ln->pos++;
	}
	return (ssize_t)n;
}

/* The response is over: close the file, free the window. */
static void
window_done(void *arg)
{
	struct window *ln = arg;

	if (ln->ps != NULL)
		pseudofile_free(ln->ps);	/* which closes the fd */
	else
		close(ln->fd);
	free(ln);
}
