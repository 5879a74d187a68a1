/*
 * resource.c -- files as MCP resources: one template, file:///{path},
 * and resources/read of a file:// URI, its MIME type guessed from the
 * name (text, else what its bytes are), read on a worker.
 *
 * The files of a sandbox are too many to list, so resources/list names
 * none and a client reads what the template (or a tool's answer) points
 * it to.  A resource is sent as text when its type is textual and its
 * bytes are UTF-8, else as a base64 blob.  Errors are JSON-RPC's: -32602
 * for a URI that is not an absolute file:// one, -32002 (the
 * specification's "resource not found") for a missing file, -32603 for
 * one that cannot be read.  Subscriptions are not offered.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "../../../fs/fs_path.h"
#include "../../../util/buf.h"
#include "../../../util/utf8.h"
#include "../../core/xmalloc.h"
#include "mcp.h"

#define RES_MAX		(8 << 20)	/* bytes one resource may have */
#define RES_NOT_FOUND	(-32002)

struct resjob {
	char		*uri;
	char		 path[PATH_MAX];
	int		 code;		/* 0, or the JSON-RPC error */
	char		 err[PATH_MAX + 128];
	char		*data;
	size_t		 n;
};

static const struct {
	const char	*ext;
	const char	*type;
} types[] = {
	{ "txt", "text/plain" }, { "log", "text/plain" },
	{ "md", "text/markdown" }, { "py", "text/x-python" },
	{ "js", "text/javascript" }, { "mjs", "text/javascript" },
	{ "ts", "text/x-typescript" }, { "json", "application/json" },
	{ "ipynb", "application/x-ipynb+json" }, { "html", "text/html" },
	{ "htm", "text/html" }, { "css", "text/css" }, { "csv", "text/csv" },
	{ "tsv", "text/tab-separated-values" }, { "xml", "application/xml" },
	{ "yaml", "application/yaml" }, { "yml", "application/yaml" },
	{ "toml", "application/toml" }, { "sh", "application/x-sh" },
	{ "c", "text/x-c" }, { "h", "text/x-c" }, { "cpp", "text/x-c++" },
	{ "rs", "text/x-rust" }, { "go", "text/x-go" },
	{ "java", "text/x-java" }, { "r", "text/x-r" },
	{ "svg", "image/svg+xml" }, { "png", "image/png" },
	{ "jpg", "image/jpeg" }, { "jpeg", "image/jpeg" },
	{ "gif", "image/gif" }, { "webp", "image/webp" },
	{ "pdf", "application/pdf" }, { "zip", "application/zip" },
	{ "gz", "application/gzip" }, { "tar", "application/x-tar" },
};

static const char	*guess(const char *, const char *, size_t);
static bool		 textual(const char *);
static int		 uri_path(const char *, char *, size_t);
static void		 res_read(void *);
static void		 res_done(struct mcp_call *, void *);

/* The resources/templates/list result. */
json_t *
mcp_resource_templates(void)
{
	return json_pack("{s:[{s:s, s:s, s:s, s:s}]}", "resourceTemplates",
	    "uriTemplate", "file:///{path}", "name", "file",
	    "title", "A file in the sandbox",
	    "description", "Any file by its absolute path, e.g. "
	    "file:///home/user/notes.md; its MIME type is guessed from the "
	    "name.");
}

/* The MIME type of name, else text/plain for UTF-8 bytes without NULs. */
static const char *
guess(const char *name, const char *p, size_t n)
{
	const char *base = strrchr(name, '/'), *dot;

	base = base != NULL ? base + 1 : name;
	if ((dot = strrchr(base, '.')) != NULL && dot != base)
		for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++)
			if (strcasecmp(dot + 1, types[i].ext) == 0)
				return types[i].type;
	for (size_t i = 0, k; i < n; i += k)
		if (p[i] == '\0' || (k = utf8_len((const unsigned char *)p + i,
		    n - i)) == 0)
			return "application/octet-stream";
	return "text/plain";
}

static bool
textual(const char *type)
{
	return strncmp(type, "text/", 5) == 0 || strstr(type, "json") != NULL ||
	    strstr(type, "xml") != NULL || strcmp(type, "application/yaml") ==
	    0 || strcmp(type, "application/toml") == 0 ||
	    strcmp(type, "application/x-sh") == 0;
}

static int
hexval(char c)
{
	return c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10;
}

/*
 * The file path of a file:// URI (empty or "localhost" authority),
 * percent-decoded, into out: 0, or -EINVAL.
 */
static int
uri_path(const char *uri, char *out, size_t outlen)
{
	const char *p;
	char *raw, *w;
	int rc;

	if (strncmp(uri, "file://", 7) != 0)
		return -EINVAL;
	p = uri + 7;
	if (strncasecmp(p, "localhost/", 10) == 0)
		p += 9;
	if (*p != '/' || strpbrk(p, "?#") != NULL)
		return -EINVAL;
	raw = w = xstrdup(p);
	for (const char *r = p; *r != '\0'; r++) {
		if (*r == '%' && isxdigit((unsigned char)r[1]) &&
		    isxdigit((unsigned char)r[2])) {
			*w = (char)(hexval(r[1]) << 4 | hexval(r[2]));
			if (*w++ == '\0') {
				free(raw);
				return -EINVAL;
			}
			r += 2;
		} else
			*w++ = *r;
	}
	*w = '\0';
	rc = fs_path_resolve(raw, strlen(raw), NULL, out, outlen);
	free(raw);
	return rc < 0 ? -EINVAL : 0;
}

int
mcp_resource_path(const char *uri, char *out, size_t outlen)
{
	return uri_path(uri, out, outlen);
}

/* resources/read: params.uri, read on a worker. */
void
mcp_resources_read(struct mcp_call *call, const json_t *params)
{
	const json_t *u = json_object_get(params, "uri");
	struct resjob *j;

	if (!json_is_string(u) || strlen(json_string_value(u)) !=
	    json_string_length(u)) {
		mcp_call_rpc_error(call, JSONRPC_INVALID_PARAMS, "resources/"
		    "read needs params.uri, a string");
		return;
	}
	j = xcalloc(1, sizeof(*j));
	j->uri = xstrdup(json_string_value(u));
	if (uri_path(j->uri, j->path, sizeof(j->path)) < 0) {
		mcp_call_rpc_error(call, JSONRPC_INVALID_PARAMS, "not a "
		    "file:// URI with an absolute path");
		free(j->uri);
		free(j);
		return;
	}
	mcp_call_work(call, res_read, res_done, j);
}

static void
res_read(void *arg)
{
	struct resjob *j = arg;
	struct stat st;
	ssize_t r;
	int fd;

	if ((fd = open(j->path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)) < 0 ||
	    fstat(fd, &st) < 0) {
		j->code = errno == ENOENT || errno == ENOTDIR ? RES_NOT_FOUND :
		    JSONRPC_INTERNAL;
		snprintf(j->err, sizeof(j->err), "%s: %s", j->uri,
		    strerror(errno));
		if (fd >= 0)
			close(fd);
		return;
	}
	if (!S_ISREG(st.st_mode) || st.st_size > RES_MAX) {
		j->code = JSONRPC_INTERNAL;
		snprintf(j->err, sizeof(j->err), "%s: %s", j->uri,
		    !S_ISREG(st.st_mode) ? "not a regular file" : "larger "
		    "than 8 MiB: read it in parts with the read_file tool");
		close(fd);
		return;
	}
	j->data = xmalloc((size_t)st.st_size + 1);
	while (j->n < (size_t)st.st_size && (r = read(fd, j->data + j->n,
	    (size_t)st.st_size - j->n)) != 0) {
		if (r < 0) {
			j->code = JSONRPC_INTERNAL;
			snprintf(j->err, sizeof(j->err), "%s: %s", j->uri,
			    strerror(errno));
			break;
		}
		j->n += (size_t)r;
	}
	close(fd);
}

/* The contents, as text or a blob, or the error. */
static void
res_done(struct mcp_call *call, void *arg)
{
	struct resjob *j = arg;
	const char *type;
	json_t *c;
	char *b64;

	if (j->code != 0)
		mcp_call_rpc_error(call, j->code, j->err);
	else {
		type = guess(j->path, j->data, j->n);
		c = json_pack("{s:s, s:s}", "uri", j->uri, "mimeType", type);
		if (textual(type) && strcmp(guess("", j->data, j->n),
		    "text/plain") == 0)
			json_object_set_new(c, "text",
			    json_stringn(j->data, j->n));
		else {
			b64 = xmalloc(4 * ((j->n + 2) / 3) + 1);
			EVP_EncodeBlock((unsigned char *)b64,
			    (const unsigned char *)j->data, (int)j->n);
			json_object_set_new(c, "blob", json_string(b64));
			free(b64);
		}
		mcp_call_result(call, json_pack("{s:[o]}", "contents", c));
	}
	free(j->data);
	free(j->uri);
	free(j);
}
