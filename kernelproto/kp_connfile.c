/*
 * kp_connfile.c -- connection files: parse, build, write, endpoints.
 *
 * A connection file tells a kernel which ports to bind and which key to
 * sign with.  This file reads and writes exactly the format of
 * jupyter_client's write_connection_file (connect.py), so that a kernel
 * started by execd and one started by Jupyter see the same thing.  It does
 * not choose ports or make keys (the caller does), bind or connect sockets
 * (kp_chan.c) or sign messages (kp_sign.c).  The key is kept as the
 * string's bytes, never hex-decoded: jupyter_client and ipykernel sign
 * with key.encode().
 *
 * Required keys are the five ports, "ip" and "key" (an empty key means no
 * signing).  "transport" and "signature_scheme" default to "tcp" and
 * "hmac-sha256", as in jupyter_client, and "kernel_name" to "".
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../util/must.h"
#include "../util/utf8.h"
#include "kp_connfile.h"

static const char *const chan_names[KP_NCHAN] = {
	[KP_SHELL] = "shell", [KP_IOPUB] = "iopub", [KP_STDIN] = "stdin",
	[KP_CONTROL] = "control", [KP_HB] = "hb",
};

/* The file's keys for the ports, in jupyter_client's order. */
static const char *const port_keys[KP_NCHAN] = {
	[KP_SHELL] = "shell_port", [KP_IOPUB] = "iopub_port",
	[KP_STDIN] = "stdin_port", [KP_CONTROL] = "control_port",
	[KP_HB] = "hb_port",
};

static void	 seterr(char *, size_t, const char *, ...)
		    __attribute__((format(printf, 3, 4)));
static bool	 utf8_ok(const unsigned char *, size_t);
static int	 get_str(json_t *, const char *, bool, const char **,
		    size_t *, char *, size_t);
static int	 check_conn(const struct kp_conn *, char *, size_t);
static int	 write_all(int, const char *, size_t);

/* Format a message into err, if the caller gave one. */
static void
seterr(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (err == NULL || errlen == 0)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

/*
 * Whether p[0..n) is UTF-8 that jansson accepts as a string: no overlong
 * forms, surrogates or code points past U+10FFFF; NUL is refused too.
 */
static bool
utf8_ok(const unsigned char *p, size_t n)
{
	size_t len;

	for (size_t i = 0; i < n; i += len)
		if (p[i] == 0 || (len = utf8_len(p + i, n - i)) == 0)
			return false;
	return true;
}

/*
 * The string member k of o in *sp, its length in *lenp; *sp is NULL if k is
 * absent and optional.  0, or -EINVAL with a message.
 */
static int
get_str(json_t *o, const char *k, bool optional, const char **sp,
    size_t *lenp, char *err, size_t errlen)
{
	json_t *v = json_object_get(o, k);

	if (v == NULL && optional) {
		*sp = NULL;
		*lenp = 0;
		return 0;
	}
	if (v == NULL) {
		seterr(err, errlen, "missing %s", k);
		return -EINVAL;
	}
	if (!json_is_string(v)) {
		seterr(err, errlen, "%s: not a string", k);
		return -EINVAL;
	}
	/* jansson refuses \u0000 unless asked to, so no NUL is inside. */
	*sp = json_string_value(v);
	*lenp = json_string_length(v);
	return 0;
}

/* See kp_connfile.h. */
const char *
kp_chan_name(enum kp_chan_id c)
{
	if ((unsigned)c >= KP_NCHAN)
		abort();	/* not a channel: a caller's bug */
	return chan_names[c];
}

/* See kp_connfile.h. */
int
kp_connfile_parse(const char *text, size_t n, struct kp_conn *out,
    char *err, size_t errlen)
{
	struct kp_conn c;
	json_error_t jerr;
	json_t *root, *v;
	json_int_t port;
	const char *s, *near;
	size_t len;
	int rc = -EINVAL;

	memset(&c, 0, sizeof(c));
	if ((root = json_loadb(text, n, 0, &jerr)) == NULL) {
		/* Cut jansson's "near '<text>'": the text may be the key. */
		near = strstr(jerr.text, " near '");
		seterr(err, errlen, "line %d column %d: %.*s", jerr.line,
		    jerr.column, near != NULL ? (int)(near - jerr.text) :
		    (int)strlen(jerr.text), jerr.text);
		return -EINVAL;
	}
	if (!json_is_object(root)) {
		seterr(err, errlen, "not a JSON object");
		goto out;
	}
	/* 1. The five ports. */
	for (int i = 0; i < KP_NCHAN; i++) {
		if ((v = json_object_get(root, port_keys[i])) == NULL) {
			seterr(err, errlen, "missing %s", port_keys[i]);
			goto out;
		}
		if (!json_is_integer(v)) {
			seterr(err, errlen, "%s: not an integer", port_keys[i]);
			goto out;
		}
		port = json_integer_value(v);
		if (port < 1 || port > 65535) {
			seterr(err, errlen, "%s: %lld out of range 1..65535",
			    port_keys[i], (long long)port);
			goto out;
		}
		c.port[i] = (int)port;
	}
	/* 2. Where: the address (or ipc path prefix) and the transport. */
	if (get_str(root, "ip", false, &s, &len, err, errlen) < 0)
		goto out;
	if (len == 0) {
		seterr(err, errlen, "ip: empty");
		goto out;
	}
	if (len >= sizeof(c.ip)) {
		seterr(err, errlen, "ip: longer than %zu bytes",
		    sizeof(c.ip) - 1);
		goto out;
	}
	memcpy(c.ip, s, len);
	if (get_str(root, "transport", true, &s, &len, err, errlen) < 0)
		goto out;
	if (s == NULL)
		s = "tcp";
	if (strcmp(s, "tcp") != 0 && strcmp(s, "ipc") != 0) {
		seterr(err, errlen, "transport: \"%.32s\" is not tcp or ipc",
		    s);
		goto out;
	}
	memcpy(c.transport, s, 4);
	/* 3. Signing: the key's bytes as written, and the scheme. */
	if (get_str(root, "key", false, &s, &len, err, errlen) < 0)
		goto out;
	if (len > KP_KEY_MAX) {
		seterr(err, errlen, "key: longer than %d bytes", KP_KEY_MAX);
		goto out;
	}
	memcpy(c.key, s, len);
	c.keylen = len;
	if (get_str(root, "signature_scheme", true, &s, &len, err,
	    errlen) < 0)
		goto out;
	if (c.keylen > 0 && s != NULL && strcmp(s, "hmac-sha256") != 0) {
		seterr(err, errlen, "signature_scheme: \"%.32s\" is not "
		    "hmac-sha256", s);
		goto out;
	}
	/* 4. Informational only. */
	if (get_str(root, "kernel_name", true, &s, &len, err, errlen) < 0)
		goto out;
	if (len >= sizeof(c.kernel_name)) {
		seterr(err, errlen, "kernel_name: longer than %zu bytes",
		    sizeof(c.kernel_name) - 1);
		goto out;
	}
	if (s != NULL)
		memcpy(c.kernel_name, s, len);
	*out = c;
	rc = 0;
out:
	json_decref(root);
	explicit_bzero(&c, sizeof(c));
	return rc;
}

/*
 * Whether c can be written as a file that kp_connfile_parse reads back
 * unchanged: 0, or -EINVAL with a message.
 */
static int
check_conn(const struct kp_conn *c, char *err, size_t errlen)
{
	size_t len;

	if (strcmp(c->transport, "tcp") != 0 &&
	    strcmp(c->transport, "ipc") != 0) {
		seterr(err, errlen, "transport is not tcp or ipc");
		return -EINVAL;
	}
	for (int i = 0; i < KP_NCHAN; i++)
		if (c->port[i] < 1 || c->port[i] > 65535) {
			seterr(err, errlen, "%s %d out of range 1..65535",
			    port_keys[i], c->port[i]);
			return -EINVAL;
		}
	len = strnlen(c->ip, sizeof(c->ip));
	if (len == 0 || len == sizeof(c->ip) ||
	    !utf8_ok((const unsigned char *)c->ip, len)) {
		seterr(err, errlen, "ip is empty, unterminated or not UTF-8");
		return -EINVAL;
	}
	if (c->keylen > KP_KEY_MAX || !utf8_ok(c->key, c->keylen)) {
		seterr(err, errlen, "key is too long or not UTF-8 (or has "
		    "NUL)");
		return -EINVAL;
	}
	len = strnlen(c->kernel_name, sizeof(c->kernel_name));
	if (len == sizeof(c->kernel_name) ||
	    !utf8_ok((const unsigned char *)c->kernel_name, len)) {
		seterr(err, errlen, "kernel_name is unterminated or not "
		    "UTF-8");
		return -EINVAL;
	}
	return 0;
}

/* See kp_connfile.h.  NULL with errno EINVAL if c would not parse back. */
json_t *
kp_connfile_json(const struct kp_conn *c)
{
	json_t *o;

	if (check_conn(c, NULL, 0) < 0) {
		errno = EINVAL;
		return NULL;
	}
	/* Keys in jupyter_client's order; jansson keeps insertion order. */
	o = must(json_object());
	for (int i = 0; i < KP_NCHAN; i++)
		if (json_object_set_new(o, port_keys[i],
		    must(json_integer(c->port[i]))) < 0)
			abort();
	/* The strings were checked above, so NULL here can only be OOM. */
	if (json_object_set_new(o, "ip", must(json_string(c->ip))) < 0 ||
	    json_object_set_new(o, "key", must(json_stringn((const char *)
	    c->key, c->keylen))) < 0 ||
	    json_object_set_new(o, "transport",
	    must(json_string(c->transport))) < 0 ||
	    json_object_set_new(o, "signature_scheme",
	    must(json_string("hmac-sha256"))) < 0 ||
	    json_object_set_new(o, "kernel_name",
	    must(json_string(c->kernel_name))) < 0)
		abort();
	return o;
}

/* Write all of p[0..n) to fd: 0 or -errno. */
static int
write_all(int fd, const char *p, size_t n)
{
	ssize_t w;

	while (n > 0) {
		if ((w = write(fd, p, n)) < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* See kp_connfile.h. */
int
kp_connfile_write(const char *path, const struct kp_conn *c, char *err,
    size_t errlen)
{
	json_t *o = NULL;
	char *text = NULL, *tmp = NULL;
	const char *step;
	size_t len = 0;
	int fd = -1, rc;

	if ((rc = check_conn(c, err, errlen)) < 0)
		return rc;
	/* 1. The text, as jupyter_client writes it (json.dumps indent=2). */
	o = must(kp_connfile_json(c));
	text = must(json_dumps(o, JSON_INDENT(2) | JSON_ENSURE_ASCII));
	len = strlen(text);
	/*
	 * 2. A temporary file beside the target: mkostemp opens it with
	 * O_CREAT|O_EXCL and mode 0600, and the fchmod makes that exact
	 * whatever the umask.  Its name does not end in ".json", so nothing
	 * looking for connection files picks it up half-written.
	 */
	if (asprintf(&tmp, "%s.XXXXXX", path) < 0)
		abort();
	step = "create";
	if ((fd = mkostemp(tmp, O_CLOEXEC)) < 0) {
		rc = -errno;
		free(tmp);
		tmp = NULL;	/* nothing to remove */
		goto out;
	}
	/* 3. Contents on disk, then the name: readers see all or nothing. */
	step = "chmod";
	if (fchmod(fd, 0600) < 0) {
		rc = -errno;
		goto out;
	}
	step = "write";
	if ((rc = write_all(fd, text, len)) < 0)
		goto out;
	step = "fsync";
	if (fsync(fd) < 0) {
		rc = -errno;
		goto out;
	}
	step = "close";
	rc = close(fd) < 0 ? -errno : 0;
	fd = -1;
	if (rc < 0)
		goto out;
	step = "rename";
	if (rename(tmp, path) < 0) {
		rc = -errno;
		goto out;
	}
	free(tmp);
	tmp = NULL;
	rc = 0;
out:
	if (rc < 0)
		seterr(err, errlen, "%s %s: %s", step, tmp != NULL ? tmp :
		    path, strerror(-rc));
	if (fd >= 0)
		close(fd);
	if (tmp != NULL) {
		unlink(tmp);
		free(tmp);
	}
	explicit_bzero(text, len);	/* it holds the key */
	free(text);
	json_decref(o);
	return rc;
}

/* See kp_connfile.h.  out is written only on success. */
int
kp_conn_endpoint(const struct kp_conn *conn, enum kp_chan_id c, char *out,
    size_t outlen)
{
	bool ipc = strcmp(conn->transport, "ipc") == 0;
	int iplen, n;

	if ((unsigned)c >= KP_NCHAN)
		abort();	/* not a channel: a caller's bug */
	/* jupyter_client's _make_url: "tcp://ip:port", "ipc://ip-port". */
	iplen = (int)strnlen(conn->ip, sizeof(conn->ip));
	n = snprintf(NULL, 0, "%s://%.*s%c%d", ipc ? "ipc" : "tcp", iplen,
	    conn->ip, ipc ? '-' : ':', conn->port[c]);
	if (n < 0 || (size_t)n >= outlen)
		return -ENAMETOOLONG;
	snprintf(out, outlen, "%s://%.*s%c%d", ipc ? "ipc" : "tcp", iplen,
	    conn->ip, ipc ? '-' : ':', conn->port[c]);
	return 0;
}
