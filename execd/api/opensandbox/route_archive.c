/*
 * route_archive.c -- GET /files/archive: a directory streamed as tar.
 *
 * The list of the tree's entries is made on a worker thread
 * (http_req_work), since walking a tree may take a while; the bytes are
 * then read from fs_tar as the client takes them, so memory stays flat
 * whatever the size.  Not for single files (route_download.c).  Loop
 * thread only, but for the listing job's fn.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../../fs/fs_tar.h"
#include "../../../util/buf.h"
#include "../../core/xmalloc.h"
#include "../../transport/http.h"
#include "../../transport/xferhdr.h"
#include "../reqpath.h"
#include "route.h"

#define ERRLEN		(PATH_MAX + 256)

/* An archive being prepared: the tree is listed on a worker. */
struct archive {
	char		 path[PATH_MAX];
	struct fs_tar	*tar;
	int		 rc;
	char		 err[ERRLEN];
};

static void	 archive_list(void *);
static void	 archive_listed(struct http_req *, void *);
static ssize_t	 tar_read(void *, char *, size_t);
static void	 tar_done(void *);

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
		xferhdr_disposition(&b, name);
		http_resp_header(hr, "Content-Disposition", b.p);
		buf_reset(&b);
		http_reply_resp(req, 200, hr);
	}
	free(a);
}

/* The next bytes of the tar stream (arg is the fs_tar). */
static ssize_t
tar_read(void *arg, char *buf, size_t max)
{
	ssize_t n = fs_tar_read(arg, buf, max);

	return n < 0 ? -1 : n;
}

/* The response is over: free the fs_tar. */
static void
tar_done(void *arg)
{
	fs_tar_free(arg);
}
