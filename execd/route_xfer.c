/*
 * route_xfer.c -- file transfers: multipart uploads written as they
 * arrive, downloads served from the file descriptor (whole, one byte
 * range, or a window of lines), and directories streamed as tar.
 *
 * Memory stays flat whatever the size: an upload goes through the
 * streaming multipart parser into a temporary file beside each target
 * (fs_atomic), and every target is renamed into place only when the whole
 * body has arrived and checked out, so an upload cut off midway leaves the
 * old files as they were and no debris.  Downloads use MHD's file
 * responses (sendfile) or a content reader.  The final sync-and-rename of
 * an upload and the listing of an archive's tree run on a worker thread
 * (http_req_work).  Loop thread only, but for those jobs' fns.
 *
 * Files of kernel (pseudo) file systems -- procfs, sysfs, debugfs and the
 * like, told apart by one fstatfs at open -- are read on the loop too, but
 * never in a way that waits: their size says nothing (0, or a fake 4096),
 * and a read may wait for the kernel forever (/proc/kmsg waits for the
 * next log message).  They keep the O_NONBLOCK they were opened with; a
 * read that finds nothing puts the response to sleep (HTTP_READ_WAIT) and
 * watches the fd on the loop, whose poll wakes it when there is more.  The
 * body is bounded: it ends at EOF, after PSEUDO_CAP bytes, when the file
 * gives nothing more for PSEUDO_IDLE_MS, or when the waits add up to
 * PSEUDO_WAIT_MS, so that a file that never ends (kmsg, trace_pipe) gives
 * a snapshot, not a stream.  Reading on the loop and not on a worker keeps
 * shutdown and a client leaving immediate (a worker blocked in read()
 * cannot be called back).  What O_NONBLOCK cannot help -- a read that
 * sleeps in the kernel regardless (a /proc/<pid> file waiting for another
 * process's memory lock, a hung FUSE mount) -- still stalls the loop.
 * Regular files of other file systems take the fast path unchanged.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>

#include <linux/magic.h>

#include "../fs/fs_atomic.h"
#include "../fs/fs_ops.h"
#include "../fs/fs_path.h"
#include "../fs/fs_tar.h"
#include "../sse/sse_fmt.h"
#include "body.h"
#include "http.h"
#include "log.h"
#include "loop.h"
#include "multipart.h"
#include "range.h"
#include "reqpath.h"
#include "route.h"
#include "xmalloc.h"

#define E_FILE		"INVALID_FILE"
#define E_META		"INVALID_FILE_METADATA"
#define E_CONTENT	"INVALID_FILE_CONTENT"
#define META_MAX	65536	/* bytes of one metadata part */
#define PAIRS_MAX	4096	/* metadata/file pairs in one request */
#define ERRLEN		(PATH_MAX + 256)
#define PSEUDO_CAP	(16u << 20)	/* bytes of a pseudo file's body */
#define PSEUDO_IDLE_MS	2000	/* no new byte for this long: the end */
#define PSEUDO_WAIT_MS	30000	/* all the waits of one body, at most */
#define PSEUDO_RETRY_MS	50	/* poll said ready, read said EAGAIN */

static const struct body_field meta_fields[] = {
	{ "path", BODY_STRING, 0 },
	{ "mode", BODY_INT, 0 },
	{ "owner", BODY_STRING, 0 },
	{ "group", BODY_STRING, 0 },
	BODY_END
};

/* One metadata part, checked: where its file goes and how. */
struct target {
	char		path[PATH_MAX];
	mode_t		mode;		/* 0: keep or default */
	uid_t		uid;
	gid_t		gid;
};

enum part { P_SKIP, P_META, P_FILE };

struct upload {
	struct mp		*mp;
	enum part		 part;
	struct buf		 meta;		/* the metadata part so far */
	struct target		*targets;	/* one per metadata part */
	size_t			 ntargets, cap;
	struct fs_atomic	*files;		/* one per file part */
	size_t			 nfiles;
	mode_t			 newmode;	/* for files created */
	/* The first failure, answered by the sink. */
	int			 rc;
	unsigned		 status;	/* 0: from rc */
	const char		*code;
	char			 msg[ERRLEN];
};

/*
 * A file of a pseudo file system being sent, read without ever waiting;
 * see the top of the file.
 */
struct pseudo {
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

/* A window of lines of a file, produced as the client reads. */
struct window {
	int		 fd;
	struct pseudo	*ps;		/* the fd's reader, for a pseudo file */
	uint64_t	 first, count;	/* count 0: to the end */
	uint64_t	 cur;		/* line number being read, from 1 */
	uint64_t	 begun;		/* lines of the window begun */
	uint64_t	 crs;		/* '\r' held back: trailing ones go */
	bool		 in_line, done;
	size_t		 pos, len;
	char		 buf[65536];
};

static int	 up_part(const struct mp_part *, void *);
static int	 up_data(const char *, size_t, void *);
static int	 up_end_part(void *);
static int	 up_feed(struct http_req *, const char *, size_t, void *);
static void	 up_end(struct http_req *, void *);
static void	 up_abort(void *);
static void	 up_free(struct upload *);
static void	 up_commit(void *);
static void	 up_committed(struct http_req *, void *);
static int	 up_fail(struct upload *, unsigned, const char *,
		    const char *, ...) __attribute__((format(printf, 4, 5)));
static int	 up_fail_errno(struct upload *, int, const char *,
		    const char *, const char *);
static void	 up_reply(struct http_req *, struct upload *);
static void	 range_refuse(struct http_req *, const char *, int, uint64_t);
static bool	 size_unknown(int);
static struct pseudo *pseudo_new(struct loop *, int);
static ssize_t	 pseudo_read(struct pseudo *, char *, size_t);
static void	 pseudo_unwait(struct pseudo *);
static void	 pseudo_ready(struct loop *, int, void *, int, void *);
static void	 pseudo_timer(struct loop *, uint64_t, void *);
static void	 pseudo_free(struct pseudo *);
static ssize_t	 whole_read(void *, char *, size_t);
static void	 whole_done(void *);
static ssize_t	 window_read(void *, char *, size_t);
static void	 window_done(void *);
static void	 archive_list(void *);
static void	 archive_listed(struct http_req *, void *);
static ssize_t	 tar_read(void *, char *, size_t);
static void	 tar_done(void *);

static const struct mp_cbs up_cbs = { up_part, up_data, up_end_part };

/* Record the first failure (status 0: map rc); returns rc. */
static int
up_fail(struct upload *up, unsigned status, const char *code,
    const char *fmt, ...)
{
	va_list ap;

	if (up->rc < 0)
		return up->rc;
	up->status = status;
	up->code = code;
	up->rc = -EINVAL;
	va_start(ap, fmt);
	vsnprintf(up->msg, sizeof(up->msg), fmt, ap);
	va_end(ap);
	return up->rc;
}

/* Record a failed system call (the status comes from rc). */
static int
up_fail_errno(struct upload *up, int rc, const char *what, const char *path,
    const char *err)
{
	if (up->rc < 0)
		return up->rc;
	up->rc = rc;
	up->status = 0;
	snprintf(up->msg, sizeof(up->msg), "%s %s. %s", what, path,
	    err != NULL && err[0] != '\0' ? err : strerror(-rc));
	return rc;
}

/*
 * POST /files/upload: multipart pairs of a "metadata" part (JSON: path,
 * mode, owner, group) and a "file" part, paired by order.  200 only once
 * every file is in place.
 */
void
route_files_upload(struct http_req *req)
{
	const char *ct = http_req_header(req, "Content-Type");
	char boundary[128];
	struct upload *up;
	mode_t um;

	if (ct == NULL || mp_boundary(ct, boundary, sizeof(boundary)) < 0) {
		http_reply_error(req, 400, E_FILE, "multipart form is empty: "
		    "the body must be multipart/form-data with a boundary, "
		    "not %s", ct != NULL ? ct : "(no Content-Type)");
		return;
	}
	up = xcalloc(1, sizeof(*up));
	buf_init(&up->meta);
	um = umask(0);
	umask(um);
	up->newmode = 0777 & ~um;	/* upstream: 0755 under umask 022 */
	up->mp = mp_new(boundary, &up_cbs, up);
	http_req_sink(req, up_feed, up_end, up_abort, up);
}

/* A part's headers: decide what it is. */
static int
up_part(const struct mp_part *p, void *arg)
{
	struct upload *up = arg;
	struct target *t;
	char err[ERRLEN];
	int rc;

	if (strcmp(p->name, "metadata") == 0) {
		up->part = P_META;
		buf_reset(&up->meta);
		return 0;
	}
	if (strcmp(p->name, "file") != 0) {
		up->part = P_SKIP;	/* other form fields are ignored */
		return 0;
	}
	if (up->nfiles >= up->ntargets)
		return up_fail(up, 400, E_META, "metadata file is missing: "
		    "file part %zu has no metadata part before it",
		    up->nfiles + 1);
	t = &up->targets[up->nfiles];
	up->files = xreallocarray(up->files, up->nfiles + 1,
	    sizeof(*up->files));
	err[0] = '\0';
	if ((rc = fs_atomic_open(&up->files[up->nfiles], t->path, up->newmode,
	    err, sizeof(err))) < 0)
		return up_fail_errno(up, rc, "error opening destination file",
		    t->path, err);
	up->nfiles++;
	up->part = P_FILE;
	return 0;
}

/* Bytes of the current part. */
static int
up_data(const char *p, size_t n, void *arg)
{
	struct upload *up = arg;
	struct fs_atomic *fa;
	int rc;

	switch (up->part) {
	case P_META:
		if (up->meta.len + n > META_MAX)
			return up_fail(up, 400, E_META, "invalid metadata "
			    "format. a metadata part is larger than %d bytes",
			    META_MAX);
		buf_add(&up->meta, p, n);
		return 0;
	case P_FILE:
		fa = &up->files[up->nfiles - 1];
		if ((rc = fs_atomic_write(fa, p, n)) < 0)
			return up_fail_errno(up, rc, "error copying file",
			    fa->path, NULL);
		return 0;
	case P_SKIP:
		return 0;
	}
	return 0;
}

/* The end of a part: a metadata part is checked here, all of it. */
static int
up_end_part(void *arg)
{
	struct upload *up = arg;
	struct target t;
	json_t *v;
	json_error_t je;
	char err[ERRLEN];
	const char *path;

	if (up->part != P_META)
		return 0;
	up->part = P_SKIP;
	v = json_loadb(up->meta.p != NULL ? up->meta.p : "", up->meta.len, 0,
	    &je);
	if (v == NULL)
		return up_fail(up, 400, E_META, "invalid metadata format. %s",
		    je.text);
	if (body_check_table(v, "metadata", meta_fields, err,
	    sizeof(err)) < 0) {
		json_decref(v);
		return up_fail(up, 400, E_META, "invalid metadata format. %s",
		    err);
	}
	path = body_str(v, "path", "");
	memset(&t, 0, sizeof(t));
	if (path[0] == '\0') {
		json_decref(v);
		return up_fail(up, 400, E_META, "metadata path is empty");
	}
	if (fs_path_resolve(path, json_string_length(json_object_get(v,
	    "path")), NULL, t.path, sizeof(t.path)) < 0) {
		up_fail(up, 400, E_META, "invalid metadata path '%s': paths "
		    "must be absolute or start with ~", path);
		json_decref(v);
		return up->rc;
	}
	if (fs_mode_parse(body_int(v, "mode", 0), &t.mode) < 0) {
		up_fail(up, 400, E_META, "invalid metadata mode %lld: octal "
		    "digits such as 644 are expected", body_int(v, "mode", 0));
		json_decref(v);
		return up->rc;
	}
	if (fs_owner_lookup(body_str(v, "owner", NULL), body_str(v, "group",
	    NULL), &t.uid, &t.gid, err, sizeof(err)) < 0) {
		json_decref(v);
		return up_fail(up, 400, E_META, "invalid metadata. %s", err);
	}
	json_decref(v);
	if (up->ntargets == PAIRS_MAX)
		return up_fail(up, 400, E_FILE, "more than %d files in one "
		    "upload", PAIRS_MAX);
	if (up->ntargets == up->cap) {
		up->cap = up->cap ? up->cap * 2 : 4;
		up->targets = xreallocarray(up->targets, up->cap,
		    sizeof(*up->targets));
	}
	up->targets[up->ntargets++] = t;
	return 0;
}

/* Answer the recorded failure. */
static void
up_reply(struct http_req *req, struct upload *up)
{
	if (up->status != 0)
		http_reply_error(req, up->status, up->code, "%s", up->msg);
	else
		http_reply_errno(req, up->rc, "%s", up->msg);
}

/* Body bytes as they arrive. */
static int
up_feed(struct http_req *req, const char *p, size_t n, void *arg)
{
	struct upload *up = arg;
	int rc;

	if ((rc = mp_feed(up->mp, p, n)) < 0) {
		if (up->rc == 0)
			up_fail(up, 400, E_FILE,
			    "malformed multipart body: %s", mp_error(up->mp));
		up_reply(req, up);
		return -1;
	}
	return 0;
}

/* The whole body is in: check the pairs, then put every file in place. */
static void
up_end(struct http_req *req, void *arg)
{
	struct upload *up = arg;

	if (mp_finish(up->mp) < 0)
		up_fail(up, 400, E_FILE, "malformed multipart body: %s",
		    mp_error(up->mp));
	else if (up->ntargets == 0 && up->nfiles == 0)
		up_fail(up, 400, E_FILE, "multipart form is empty");
	else if (up->ntargets == 0)
		up_fail(up, 400, E_META, "metadata file is missing");
	else if (up->nfiles == 0)
		up_fail(up, 400, E_CONTENT, "file is missing");
	else if (up->nfiles != up->ntargets)
		up_fail(up, 400, E_FILE, "metadata and file count mismatch: "
		    "%zu vs %zu", up->ntargets, up->nfiles);
	if (up->rc < 0) {
		up_reply(req, up);
		up_free(up);
		return;
	}
	/* Syncing and renaming may take a while: on a worker. */
	http_req_work(req, 0, NULL, up_commit, up_committed, up);
}

/* On a worker: sync, own and rename every file, in order. */
static void
up_commit(void *arg)
{
	struct upload *up = arg;
	struct target *t;
	char err[ERRLEN];
	int rc;

	for (size_t i = 0; i < up->nfiles; i++) {
		t = &up->targets[i];
		err[0] = '\0';
		if ((rc = fs_atomic_commit(&up->files[i], t->mode, t->uid,
		    t->gid, err, sizeof(err))) < 0) {
			up_fail_errno(up, rc, "error writing file", t->path,
			    err);
			return;
		}
	}
}

/* Back on the loop thread: answer, if the request is still there. */
static void
up_committed(struct http_req *req, void *arg)
{
	struct upload *up = arg;

	if (req != NULL) {
		if (up->rc < 0)
			up_reply(req, up);
		else
			http_reply_empty(req);
	}
	up_free(up);
}

/* The request died before its end: nothing is put in place. */
static void
up_abort(void *arg)
{
	up_free(arg);
}

/* Free everything; temporaries not committed are removed. */
static void
up_free(struct upload *up)
{
	for (size_t i = 0; i < up->nfiles; i++)
		fs_atomic_abort(&up->files[i]);
	free(up->files);
	free(up->targets);
	buf_reset(&up->meta);
	mp_free(up->mp);
	free(up);
}

/*
 * Content-Disposition for a download.  An ASCII name goes quoted as it
 * is (quotes and backslashes escaped); any other name, or one with
 * control characters, also goes percent-encoded in filename* (RFC 6266).
 */
static void
disposition(struct buf *b, const char *name)
{
	static const char keep[] = "!#$&+-.^_`|~";
	const unsigned char *p;
	bool plain = true;

	for (p = (const unsigned char *)name; *p != '\0'; p++)
		if (*p < 0x20 || *p >= 0x7f)
			plain = false;
	if (plain) {
		buf_adds(b, "attachment; filename=\"");
		for (p = (const unsigned char *)name; *p != '\0'; p++) {
			if (*p == '"' || *p == '\\')
				buf_add(b, "\\", 1);
			buf_add(b, p, 1);
		}
		buf_adds(b, "\"");
		return;
	}
	for (int pass = 0; pass < 2; pass++) {
		buf_adds(b, pass == 0 ? "attachment; filename=\"" :
		    "\"; filename*=UTF-8''");
		for (p = (const unsigned char *)name; *p != '\0'; p++) {
			if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' &&
			    *p <= 'Z') || (*p >= '0' && *p <= '9') ||
			    (*p != 0 && strchr(keep, *p) != NULL))
				buf_add(b, p, 1);
			else
				buf_addf(b, "%%%02X", *p);
		}
	}
}

/* An HTTP date, as Last-Modified carries it. */
static void
http_date(time_t t, char *buf, size_t len)
{
	struct tm tm;

	gmtime_r(&t, &tm);
	strftime(buf, len, "%a, %d %b %Y %H:%M:%S GMT", &tm);
}

/* Whether If-Modified-Since says the client's copy is current. */
static bool
not_modified(struct http_req *req, time_t mtime)
{
	const char *ims = http_req_header(req, "If-Modified-Since");
	struct tm tm;
	const char *end;

	if (ims == NULL)
		return false;
	memset(&tm, 0, sizeof(tm));
	end = strptime(ims, "%a, %d %b %Y %H:%M:%S GMT", &tm);
	return end != NULL && *end == '\0' && mtime <= timegm(&tm);
}

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

/* Parse a line-window parameter (1 or more); 0 absent, -1 malformed. */
static long long
window_arg(const char *s)
{
	uint64_t v;

	if (s == NULL)
		return 0;
	if (http_parse_uint(s, INT64_MAX, &v) < 0 || v < 1)
		return -1;
	return (long long)v;
}

/*
 * GET /files/download?path=P: the file's bytes; a Range header gives 206
 * with the first range; offset/limit give a window of lines as text.
 */
void
route_files_download(struct http_req *req)
{
	const char *os = http_req_query(req, "offset"),
	    *ls = http_req_query(req, "limit"),
	    *range = http_req_header(req, "Range"), *base;
	char path[PATH_MAX], hdr[128];
	long long off, lim;
	struct http_resp *hr;
	struct buf b;
	struct window *ln;
	struct pseudo *ps = NULL;
	struct stat st;
	uint64_t start, len;
	int fd, rc;

	if (reqpath_query(req, path, sizeof(path)) < 0)
		return;
	if ((os != NULL || ls != NULL) && range != NULL) {
		http_reply_error(req, 400, HTTP_E_BODY, "line-based reading "
		    "(offset/limit) and byte range (Range header) are "
		    "mutually exclusive");
		return;
	}
	if ((off = window_arg(os)) < 0 || (lim = window_arg(ls)) < 0) {
		http_reply_error(req, 400, HTTP_E_BODY, "invalid query "
		    "parameter '%s': %s", off < 0 ? "offset" : "limit",
		    off < 0 ? os : ls);
		return;
	}
	/* O_NONBLOCK: a FIFO must not stall the loop; it is refused below. */
	if ((fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)) < 0) {
		http_reply_errno(req, -errno, "file not found. open %s: %s",
		    path, strerror(errno));
		return;
	}
	if (fstat(fd, &st) < 0) {
		rc = -errno;
		close(fd);
		http_reply_errno(req, rc, "error accessing file: %s",
		    strerror(-rc));
		return;
	}
	if (!S_ISREG(st.st_mode)) {
		close(fd);
		http_reply_error(req, 400, HTTP_E_BODY, S_ISDIR(st.st_mode) ?
		    "path is a directory: %s (GET /files/archive sends a "
		    "directory)" : "not a regular file: %s", path);
		return;
	}
	/* A pseudo file keeps O_NONBLOCK: a read of it may wait forever. */
	if (size_unknown(fd))
		ps = pseudo_new(http_req_loop(req), fd);
	else
		fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
	if (os == NULL && ls == NULL && ps != NULL) {
		/* Whole and chunked: no length to promise, no range of it. */
		hr = http_resp_reader(whole_read, whole_done, ps);
		ps->rd = http_resp_reader_of(hr);
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
			ps->rd = http_resp_reader_of(hr);
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
		if (not_modified(req, st.st_mtime)) {
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
	disposition(&b, base != NULL ? base + 1 : path);
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
	http_date(st.st_mtime, hdr, sizeof(hdr));
	http_resp_header(hr, "Last-Modified", hdr);
	http_reply_resp(req, 200, hr);
}

/*
 * True for a file of a kernel filesystem (procfs, sysfs and the like),
 * whose size says nothing of what a read gives: 0 for most of /proc,
 * 4096 for every file of /sys.
 */
static bool
size_unknown(int fd)
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
static struct pseudo *
pseudo_new(struct loop *loop, int fd)
{
	struct pseudo *ps = xcalloc(1, sizeof(*ps));

	ps->fd = fd;
	ps->loop = loop;
	return ps;
}

/*
 * Up to max bytes of the file (> 0), 0 at its end or once a bound is
 * reached, -1 on an error, or HTTP_READ_WAIT with the fd and a timer
 * watched on the loop, which wake the response (ps->rd) again.
 */
static ssize_t
pseudo_read(struct pseudo *ps, char *out, size_t max)
{
	uint64_t now, limit, left;
	ssize_t n;

	pseudo_unwait(ps);
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
static void
pseudo_unwait(struct pseudo *ps)
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
	struct pseudo *ps = arg;

	pseudo_unwait(ps);
	ps->woke = true;
	http_reader_wake(ps->rd);
}

/* A bound or a retry is due: read again, which ends the body if due. */
static void
pseudo_timer(struct loop *l, uint64_t id, void *arg)
{
	struct pseudo *ps = arg;

	ps->timer = 0;
	pseudo_unwait(ps);
	http_reader_wake(ps->rd);
}

/* Stop waiting and close the file; NULL ok. */
static void
pseudo_free(struct pseudo *ps)
{
	if (ps == NULL)
		return;
	pseudo_unwait(ps);
	close(ps->fd);
	free(ps);
}

/* A pseudo file, whole, to its end or a bound (arg is the pseudo). */
static ssize_t
whole_read(void *arg, char *out, size_t max)
{
	return pseudo_read(arg, out, max);
}

static void
whole_done(void *arg)
{
	pseudo_free(arg);
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
				got = pseudo_read(ln->ps, ln->buf,
				    sizeof(ln->buf));
				if (got == HTTP_READ_WAIT && n > 0) {
					/* Send these first: no wait yet. */
					pseudo_unwait(ln->ps);
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

static void
window_done(void *arg)
{
	struct window *ln = arg;

	if (ln->ps != NULL)
		pseudo_free(ln->ps);	/* which closes the fd */
	else
		close(ln->fd);
	free(ln);
}

/* An archive being prepared: the tree is listed on a worker. */
struct archive {
	char		 path[PATH_MAX];
	struct fs_tar	*tar;
	int		 rc;
	char		 err[ERRLEN];
};

/*
 * GET /files/archive?path=D: D as a tar stream (names start with D's base
 * name; symlinks are stored as links and never followed).  The list of
 * entries is made on a worker; the bytes are read as the client takes
 * them.
 */
void
route_files_archive(struct http_req *req)
{
	struct archive *a = xcalloc(1, sizeof(*a));

	if (reqpath_query(req, a->path, sizeof(a->path)) < 0) {
		free(a);
		return;
	}
	http_req_work(req, 0, NULL, archive_list, archive_listed, a);
}

/* On a worker: walk the tree. */
static void
archive_list(void *arg)
{
	struct archive *a = arg;

	if ((a->tar = fs_tar_new(a->path, a->err, sizeof(a->err))) == NULL)
		a->rc = -errno;
}

/* Back on the loop thread: start sending, or say why not. */
static void
archive_listed(struct http_req *req, void *arg)
{
	struct archive *a = arg;
	struct http_resp *hr;
	struct buf b;
	const char *base;
	char name[NAME_MAX + 8];

	if (req == NULL) {
		fs_tar_free(a->tar);
	} else if (a->tar == NULL) {
		http_reply_errno(req, a->rc, "cannot archive %s: %s",
		    a->path, a->err[0] ? a->err : strerror(-a->rc));
	} else {
		hr = http_resp_reader(tar_read, tar_done, a->tar);
		http_resp_header(hr, "Content-Type", "application/x-tar");
		base = strrchr(a->path, '/');
		base = base != NULL && base[1] != '\0' ? base + 1 : "root";
		snprintf(name, sizeof(name), "%s.tar", base);
		buf_init(&b);
		disposition(&b, name);
		http_resp_header(hr, "Content-Disposition", b.p);
		buf_reset(&b);
		http_reply_resp(req, 200, hr);
	}
	free(a);
}

static ssize_t
tar_read(void *arg, char *buf, size_t max)
{
	ssize_t n = fs_tar_read(arg, buf, max);

	return n < 0 ? -1 : n;
}

static void
tar_done(void *arg)
{
	fs_tar_free(arg);
}
