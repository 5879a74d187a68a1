/*
 * t_kp_connfile.c -- unit tests for kp_connfile.c.
 *
 * Parsing is checked on a file exactly as jupyter_client 7.4's
 * write_connection_file writes it, on the defaults for optional keys, and
 * on every refusal with its message; a failed parse must leave the output
 * untouched.  kp_connfile_json is checked for its exact keys and a round
 * trip through text.  kp_connfile_write runs in a fresh temporary
 * directory (in $TMPDIR, else /tmp): the mode is 0600 whatever the umask,
 * the bytes are jupyter_client's, an existing file is replaced, and
 * failures (missing directory, a directory in the way, an invalid struct)
 * leave no temporary file behind.  Endpoints are checked for both
 * transports and for buffers one byte too small.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../kernelproto/kp_connfile.h"
#include "../t.h"
#include "../t_tmp.h"

/* What jupyter_client 7.4.9's write_connection_file wrote, byte for byte. */
static const char jupyter_file[] =
    "{\n"
    "  \"shell_port\": 53211,\n"
    "  \"iopub_port\": 53212,\n"
    "  \"stdin_port\": 53213,\n"
    "  \"control_port\": 53214,\n"
    "  \"hb_port\": 53215,\n"
    "  \"ip\": \"127.0.0.1\",\n"
    "  \"key\": \"a0436f6c-1916-498b-8eb9-e81ab9368e84\",\n"
    "  \"transport\": \"tcp\",\n"
    "  \"signature_scheme\": \"hmac-sha256\",\n"
    "  \"kernel_name\": \"python3\"\n"
    "}";

static int	 parse(const char *, struct kp_conn *, char *, size_t);
static void	 sample(struct kp_conn *);
static int	 count_entries(const char *);

/* kp_connfile_parse on a C string. */
static int
parse(const char *text, struct kp_conn *c, char *err, size_t errlen)
{
	return kp_connfile_parse(text, strlen(text), c, err, errlen);
}

/* The connection of jupyter_file. */
static void
sample(struct kp_conn *c)
{
	memset(c, 0, sizeof(*c));
	strcpy(c->transport, "tcp");
	strcpy(c->ip, "127.0.0.1");
	for (int i = 0; i < KP_NCHAN; i++)
		c->port[i] = 53211 + i;
	c->keylen = strlen("a0436f6c-1916-498b-8eb9-e81ab9368e84");
	memcpy(c->key, "a0436f6c-1916-498b-8eb9-e81ab9368e84", c->keylen);
	strcpy(c->kernel_name, "python3");
}

/* The number of entries in dir, "." and ".." aside; -1 if unreadable. */
static int
count_entries(const char *dir)
{
	struct dirent *de;
	DIR *d;
	int n = 0;

	if ((d = opendir(dir)) == NULL)
		return -1;
	while ((de = readdir(d)) != NULL)
		if (strcmp(de->d_name, ".") != 0 &&
		    strcmp(de->d_name, "..") != 0)
			n++;
	closedir(d);
	return n;
}

static void
test_chan_names(void)
{
	T_EQ_STR(kp_chan_name(KP_SHELL), "shell");
	T_EQ_STR(kp_chan_name(KP_IOPUB), "iopub");
	T_EQ_STR(kp_chan_name(KP_STDIN), "stdin");
	T_EQ_STR(kp_chan_name(KP_CONTROL), "control");
	T_EQ_STR(kp_chan_name(KP_HB), "hb");
}

static void
test_parse_jupyter_file(void)
{
	struct kp_conn c, want;
	char err[256] = "";

	T_EQ_INT(parse(jupyter_file, &c, err, sizeof(err)), 0);
	T_EQ_STR(err, "");
	sample(&want);
	T_EQ_STR(c.transport, "tcp");
	T_EQ_STR(c.ip, "127.0.0.1");
	T_EQ_INT(c.port[KP_SHELL], 53211);
	T_EQ_INT(c.port[KP_IOPUB], 53212);
	T_EQ_INT(c.port[KP_STDIN], 53213);
	T_EQ_INT(c.port[KP_CONTROL], 53214);
	T_EQ_INT(c.port[KP_HB], 53215);
	/* The key is the string's 36 bytes, not hex-decoded. */
	T_EQ_INT(c.keylen, 36);
	T_OK(memcmp(c.key, want.key, 36) == 0);
	T_EQ_STR(c.kernel_name, "python3");
}

static void
test_parse_defaults(void)
{
	struct kp_conn c;
	char err[256];

	/* No transport, signature_scheme or kernel_name; unknown keys. */
	T_EQ_INT(parse("{\"shell_port\":1,\"iopub_port\":2,\"stdin_port\":3,"
	    "\"control_port\":4,\"hb_port\":65535,\"ip\":\"::1\","
	    "\"key\":\"k\",\"extra\":[1,{}],\"session\":null}", &c, err,
	    sizeof(err)), 0);
	T_EQ_STR(c.transport, "tcp");
	T_EQ_STR(c.ip, "::1");
	T_EQ_INT(c.port[KP_HB], 65535);
	T_EQ_INT(c.keylen, 1);
	T_EQ_INT(c.key[0], 'k');
	T_EQ_STR(c.kernel_name, "");
}

static void
test_parse_ipc(void)
{
	struct kp_conn c;
	char err[256];

	T_EQ_INT(parse("{\"shell_port\":1,\"iopub_port\":2,\"stdin_port\":3,"
	    "\"control_port\":4,\"hb_port\":5,\"ip\":\"/run/k/kernel-1\","
	    "\"key\":\"\",\"transport\":\"ipc\",\"signature_scheme\":"
	    "\"hmac-sha256\",\"kernel_name\":\"\"}", &c, err, sizeof(err)), 0);
	T_EQ_STR(c.transport, "ipc");
	T_EQ_STR(c.ip, "/run/k/kernel-1");
	T_EQ_INT(c.keylen, 0);
}

static void
test_parse_key_bytes(void)
{
	struct kp_conn c;
	char text[512], key[KP_KEY_MAX + 1], err[256];

	/* Non-ASCII: the key is the UTF-8 bytes of the string. */
	T_EQ_INT(parse("{\"shell_port\":1,\"iopub_port\":2,\"stdin_port\":3,"
	    "\"control_port\":4,\"hb_port\":5,\"ip\":\"h\","
	    "\"key\":\"\\u00e9\"}", &c, err, sizeof(err)), 0);
	T_EQ_INT(c.keylen, 2);
	T_EQ_INT(c.key[0], 0xc3);
	T_EQ_INT(c.key[1], 0xa9);
	/* Exactly KP_KEY_MAX bytes fit. */
	memset(key, 'f', KP_KEY_MAX);
	key[KP_KEY_MAX] = '\0';
	snprintf(text, sizeof(text), "{\"shell_port\":1,\"iopub_port\":2,"
	    "\"stdin_port\":3,\"control_port\":4,\"hb_port\":5,\"ip\":\"h\","
	    "\"key\":\"%s\"}", key);
	T_EQ_INT(parse(text, &c, err, sizeof(err)), 0);
	T_EQ_INT(c.keylen, KP_KEY_MAX);
	/* Without a key nothing is signed, so any scheme will do. */
	T_EQ_INT(parse("{\"shell_port\":1,\"iopub_port\":2,\"stdin_port\":3,"
	    "\"control_port\":4,\"hb_port\":5,\"ip\":\"h\",\"key\":\"\","
	    "\"signature_scheme\":\"hmac-md5\"}", &c, err, sizeof(err)), 0);
	T_EQ_INT(c.keylen, 0);
}

#define PORTS	"\"shell_port\":1,\"iopub_port\":2,\"stdin_port\":3," \
		"\"control_port\":4,\"hb_port\":5,"

static void
test_parse_errors(void)
{
	static const struct {
		const char	*text, *msg;
	} cases[] = {
		{ "", "line 1 column 0: '[' or '{' expected near end of "
		    "file" },
		{ "{\"shell_port\":1", "line 1 column 15: '}' expected near "
		    "end of file" },
		{ "{} x", "line 1 column 4: end of file expected" },
		{ "[1]", "not a JSON object" },
		{ "{\"iopub_port\":2}", "missing shell_port" },
		{ "{\"shell_port\":\"1\"}", "shell_port: not an integer" },
		{ "{\"shell_port\":1.0}", "shell_port: not an integer" },
		{ "{\"shell_port\":0}", "shell_port: 0 out of range "
		    "1..65535" },
		{ "{\"shell_port\":1,\"iopub_port\":65536}", "iopub_port: "
		    "65536 out of range 1..65535" },
		{ "{\"shell_port\":1,\"iopub_port\":2,\"stdin_port\":3,"
		    "\"control_port\":-4}", "control_port: -4 out of range "
		    "1..65535" },
		{ "{\"shell_port\":1,\"iopub_port\":2,\"stdin_port\":3,"
		    "\"control_port\":4}", "missing hb_port" },
		{ "{" PORTS "\"key\":\"\"}", "missing ip" },
		{ "{" PORTS "\"ip\":1,\"key\":\"\"}", "ip: not a string" },
		{ "{" PORTS "\"ip\":\"\",\"key\":\"\"}", "ip: empty" },
		{ "{" PORTS "\"ip\":\"a\\u0000b\",\"key\":\"\"}",
		    "line 1 column 90: \\u0000 is not allowed without "
		    "JSON_ALLOW_NUL" },
		/* jansson's "near" would quote the key: it is cut. */
		{ "{" PORTS "\"ip\":\"h\",\"key\":\"secret", "line 1 column "
		    "97: premature end of input" },
		{ "{" PORTS "\"ip\":\"h\"}", "missing key" },
		{ "{" PORTS "\"ip\":\"h\",\"key\":null}", "key: not a "
		    "string" },
		{ "{" PORTS "\"ip\":\"h\",\"key\":\"\",\"transport\":\"udp\"}",
		    "transport: \"udp\" is not tcp or ipc" },
		{ "{" PORTS "\"ip\":\"h\",\"key\":\"\",\"transport\":\"TCP\"}",
		    "transport: \"TCP\" is not tcp or ipc" },
		{ "{" PORTS "\"ip\":\"h\",\"key\":\"\",\"transport\":[]}",
		    "transport: not a string" },
		{ "{" PORTS "\"ip\":\"h\",\"key\":\"k\",\"signature_scheme\":"
		    "\"hmac-md5\"}", "signature_scheme: \"hmac-md5\" is not "
		    "hmac-sha256" },
		{ "{" PORTS "\"ip\":\"h\",\"key\":\"k\",\"signature_scheme\":"
		    "false}", "signature_scheme: not a string" },
		{ "{" PORTS "\"ip\":\"h\",\"key\":\"\",\"kernel_name\":3}",
		    "kernel_name: not a string" },
	};
	struct kp_conn c;
	char err[256];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		err[0] = '\0';
		T_EQ_INT(parse(cases[i].text, &c, err, sizeof(err)), -EINVAL);
		T_EQ_STR(err, cases[i].msg);
	}
}

static void
test_parse_too_long(void)
{
	struct kp_conn c;
	char text[1024], long_[300], err[256];

	memset(long_, 'a', sizeof(long_) - 1);
	long_[sizeof(long_) - 1] = '\0';
	/* ip: 255 bytes fit, 256 do not. */
	long_[255] = '\0';
	snprintf(text, sizeof(text), "{" PORTS "\"ip\":\"%s\",\"key\":\"\"}",
	    long_);
	T_EQ_INT(parse(text, &c, err, sizeof(err)), 0);
	T_EQ_INT(strlen(c.ip), 255);
	long_[255] = 'a';
	long_[256] = '\0';
	snprintf(text, sizeof(text), "{" PORTS "\"ip\":\"%s\",\"key\":\"\"}",
	    long_);
	T_EQ_INT(parse(text, &c, err, sizeof(err)), -EINVAL);
	T_EQ_STR(err, "ip: longer than 255 bytes");
	/* key: 129 bytes. */
	long_[KP_KEY_MAX + 1] = '\0';
	snprintf(text, sizeof(text), "{" PORTS "\"ip\":\"h\",\"key\":\"%s\"}",
	    long_);
	T_EQ_INT(parse(text, &c, err, sizeof(err)), -EINVAL);
	T_EQ_STR(err, "key: longer than 128 bytes");
	/* kernel_name: 127 bytes fit, 128 do not. */
	long_[127] = '\0';
	snprintf(text, sizeof(text), "{" PORTS "\"ip\":\"h\",\"key\":\"\","
	    "\"kernel_name\":\"%s\"}", long_);
	T_EQ_INT(parse(text, &c, err, sizeof(err)), 0);
	T_EQ_INT(strlen(c.kernel_name), 127);
	long_[127] = 'a';
	long_[128] = '\0';
	snprintf(text, sizeof(text), "{" PORTS "\"ip\":\"h\",\"key\":\"\","
	    "\"kernel_name\":\"%s\"}", long_);
	T_EQ_INT(parse(text, &c, err, sizeof(err)), -EINVAL);
	T_EQ_STR(err, "kernel_name: longer than 127 bytes");
	/* A message cut to the caller's buffer, and no buffer at all. */
	T_EQ_INT(parse("[]", &c, err, 4), -EINVAL);
	T_EQ_STR(err, "not");
	T_EQ_INT(parse("[]", &c, NULL, 0), -EINVAL);
}

static void
test_parse_failure_leaves_out(void)
{
	struct kp_conn c, before;
	char err[256];

	memset(&c, 0xa5, sizeof(c));
	before = c;
	/* Fails late: everything but the scheme has been read. */
	T_EQ_INT(parse("{" PORTS "\"ip\":\"h\",\"key\":\"k\","
	    "\"signature_scheme\":\"x\"}", &c, err, sizeof(err)), -EINVAL);
	T_OK(memcmp(&c, &before, sizeof(c)) == 0);
}

static void
test_json_keys(void)
{
	static const char *const keys[] = { "shell_port", "iopub_port",
	    "stdin_port", "control_port", "hb_port", "ip", "key", "transport",
	    "signature_scheme", "kernel_name" };
	struct kp_conn c;
	const char *k;
	json_t *o, *v;
	size_t i = 0;

	sample(&c);
	T_OK((o = kp_connfile_json(&c)) != NULL);
	if (o == NULL)
		return;
	T_EQ_INT(json_object_size(o), 10);
	json_object_foreach(o, k, v) {
		T_OK(i < 10);
		if (i < 10)
			T_EQ_STR(k, keys[i]);
		i++;
	}
	T_EQ_INT(json_integer_value(json_object_get(o, "shell_port")), 53211);
	T_EQ_INT(json_integer_value(json_object_get(o, "hb_port")), 53215);
	T_EQ_STR(json_string_value(json_object_get(o, "ip")), "127.0.0.1");
	T_EQ_STR(json_string_value(json_object_get(o, "key")),
	    "a0436f6c-1916-498b-8eb9-e81ab9368e84");
	T_EQ_STR(json_string_value(json_object_get(o, "transport")), "tcp");
	T_EQ_STR(json_string_value(json_object_get(o, "signature_scheme")),
	    "hmac-sha256");
	T_EQ_STR(json_string_value(json_object_get(o, "kernel_name")),
	    "python3");
	json_decref(o);
}

static void
test_json_roundtrip(void)
{
	struct kp_conn c, back;
	char *text, err[256];
	json_t *o;

	sample(&c);
	strcpy(c.transport, "ipc");
	strcpy(c.ip, "/tmp/k \"q\" \xc3\xa9");
	c.keylen = 3;
	memcpy(c.key, "\x01\x7f" "a", 3);
	c.kernel_name[0] = '\0';
	T_OK((o = kp_connfile_json(&c)) != NULL);
	if (o == NULL)
		return;
	text = json_dumps(o, 0);
	json_decref(o);
	T_EQ_INT(parse(text, &back, err, sizeof(err)), 0);
	T_EQ_STR(back.transport, "ipc");
	T_EQ_STR(back.ip, c.ip);
	for (int i = 0; i < KP_NCHAN; i++)
		T_EQ_INT(back.port[i], c.port[i]);
	T_EQ_INT(back.keylen, 3);
	T_OK(memcmp(back.key, c.key, 3) == 0);
	T_EQ_STR(back.kernel_name, "");
	free(text);
}

static void
test_json_rejects_invalid(void)
{
	struct kp_conn c;

	sample(&c);
	strcpy(c.transport, "udp");
	errno = 0;
	T_OK(kp_connfile_json(&c) == NULL);
	T_EQ_INT(errno, EINVAL);
	sample(&c);
	c.port[KP_HB] = 0;
	T_OK(kp_connfile_json(&c) == NULL);
	sample(&c);
	c.port[KP_SHELL] = 65536;
	T_OK(kp_connfile_json(&c) == NULL);
	sample(&c);
	c.ip[0] = '\0';
	T_OK(kp_connfile_json(&c) == NULL);
	sample(&c);
	memset(c.ip, 'a', sizeof(c.ip));	/* unterminated */
	T_OK(kp_connfile_json(&c) == NULL);
	sample(&c);
	c.key[1] = 0xff;			/* not UTF-8 */
	T_OK(kp_connfile_json(&c) == NULL);
	sample(&c);
	c.key[1] = '\0';			/* would not parse back */
	T_OK(kp_connfile_json(&c) == NULL);
	sample(&c);
	c.keylen = KP_KEY_MAX + 1;
	T_OK(kp_connfile_json(&c) == NULL);
	sample(&c);
	strcpy(c.kernel_name, "\xed\xa0\x80");	/* a surrogate */
	T_OK(kp_connfile_json(&c) == NULL);
}

static void
test_write(void)
{
	struct kp_conn c, back;
	char *dir = t_tmpdir(), *path, *text, err[256] = "";
	struct stat st;
	size_t len;

	sample(&c);
	if (asprintf(&path, "%s/kernel-1.json", dir) < 0)
		return;
	T_EQ_INT(kp_connfile_write(path, &c, err, sizeof(err)), 0);
	T_EQ_STR(err, "");
	T_EQ_INT(stat(path, &st), 0);
	T_OK(S_ISREG(st.st_mode));
	T_EQ_INT(st.st_mode & 07777, 0600);
	T_EQ_INT(count_entries(dir), 1);	/* no temporary debris */
	/* The very bytes jupyter_client writes. */
	T_OK((text = t_slurp(path, &len)) != NULL);
	if (text != NULL) {
		T_EQ_STR(text, jupyter_file);
		T_EQ_INT(kp_connfile_parse(text, len, &back, err,
		    sizeof(err)), 0);
		T_EQ_INT(back.port[KP_CONTROL], 53214);
		T_EQ_INT(back.keylen, c.keylen);
	}
	free(text);
	free(path);
	t_tmpdir_free(dir);
}

static void
test_write_replaces(void)
{
	struct kp_conn c, back;
	char *dir = t_tmpdir(), *path, *text, err[256];
	struct stat st;
	size_t len;
	mode_t old;
	int fd;

	if (asprintf(&path, "%s/kernel-2.json", dir) < 0)
		return;
	/* A world-readable file in the way, and a umask that would narrow. */
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	T_OK(fd >= 0 && write(fd, "old", 3) == 3);
	close(fd);
	chmod(path, 0644);
	sample(&c);
	c.port[KP_HB] = 9;
	old = umask(0277);
	T_EQ_INT(kp_connfile_write(path, &c, err, sizeof(err)), 0);
	umask(old);
	T_EQ_INT(stat(path, &st), 0);
	T_EQ_INT(st.st_mode & 07777, 0600);
	T_EQ_INT(count_entries(dir), 1);
	T_OK((text = t_slurp(path, &len)) != NULL);
	if (text != NULL) {
		T_EQ_INT(kp_connfile_parse(text, len, &back, err,
		    sizeof(err)), 0);
		T_EQ_INT(back.port[KP_HB], 9);
	}
	/* And with no umask at all. */
	old = umask(0);
	T_EQ_INT(kp_connfile_write(path, &c, err, sizeof(err)), 0);
	umask(old);
	T_EQ_INT(stat(path, &st), 0);
	T_EQ_INT(st.st_mode & 07777, 0600);
	free(text);
	free(path);
	t_tmpdir_free(dir);
}

static void
test_write_missing_dir(void)
{
	struct kp_conn c;
	char *dir = t_tmpdir(), *path, err[256] = "";

	sample(&c);
	if (asprintf(&path, "%s/nope/kernel.json", dir) < 0)
		return;
	T_EQ_INT(kp_connfile_write(path, &c, err, sizeof(err)), -ENOENT);
	T_OK(strncmp(err, "create ", 7) == 0);
	T_OK(strstr(err, "No such file or directory") != NULL);
	T_EQ_INT(count_entries(dir), 0);
	free(path);
	t_tmpdir_free(dir);
}

static void
test_write_onto_dir(void)
{
	struct kp_conn c;
	char *dir = t_tmpdir(), *path, err[256] = "";

	/* The temporary file is made and written; the rename fails. */
	sample(&c);
	if (asprintf(&path, "%s/kernel.json", dir) < 0)
		return;
	T_EQ_INT(mkdir(path, 0700), 0);
	T_EQ_INT(kp_connfile_write(path, &c, err, sizeof(err)), -EISDIR);
	T_OK(strncmp(err, "rename ", 7) == 0);
	T_OK(strstr(err, "Is a directory") != NULL);
	T_EQ_INT(count_entries(dir), 1);	/* the directory alone */
	T_EQ_INT(count_entries(path), 0);
	free(path);
	t_tmpdir_free(dir);
}

static void
test_write_invalid(void)
{
	struct kp_conn c;
	char *dir = t_tmpdir(), *path, err[256] = "";

	sample(&c);
	c.port[KP_IOPUB] = 0;
	if (asprintf(&path, "%s/kernel.json", dir) < 0)
		return;
	T_EQ_INT(kp_connfile_write(path, &c, err, sizeof(err)), -EINVAL);
	T_EQ_STR(err, "iopub_port 0 out of range 1..65535");
	T_EQ_INT(count_entries(dir), 0);
	free(path);
	t_tmpdir_free(dir);
}

static void
test_endpoint_tcp(void)
{
	struct kp_conn c;
	char ep[64];

	sample(&c);
	T_EQ_INT(kp_conn_endpoint(&c, KP_SHELL, ep, sizeof(ep)), 0);
	T_EQ_STR(ep, "tcp://127.0.0.1:53211");
	T_EQ_INT(kp_conn_endpoint(&c, KP_HB, ep, sizeof(ep)), 0);
	T_EQ_STR(ep, "tcp://127.0.0.1:53215");
}

static void
test_endpoint_ipc(void)
{
	struct kp_conn c;
	char ep[64];

	sample(&c);
	strcpy(c.transport, "ipc");
	strcpy(c.ip, "/run/execd/kernel-7");
	for (int i = 0; i < KP_NCHAN; i++)
		c.port[i] = i + 1;
	T_EQ_INT(kp_conn_endpoint(&c, KP_SHELL, ep, sizeof(ep)), 0);
	T_EQ_STR(ep, "ipc:///run/execd/kernel-7-1");
	T_EQ_INT(kp_conn_endpoint(&c, KP_CONTROL, ep, sizeof(ep)), 0);
	T_EQ_STR(ep, "ipc:///run/execd/kernel-7-4");
}

static void
test_endpoint_small(void)
{
	struct kp_conn c;
	char ep[32];
	size_t need = strlen("tcp://127.0.0.1:53212") + 1;

	sample(&c);
	memset(ep, 'x', sizeof(ep));
	T_EQ_INT(kp_conn_endpoint(&c, KP_IOPUB, ep, need - 1), -ENAMETOOLONG);
	T_EQ_INT(ep[0], 'x');			/* untouched */
	T_EQ_INT(kp_conn_endpoint(&c, KP_IOPUB, ep, 0), -ENAMETOOLONG);
	T_EQ_INT(kp_conn_endpoint(&c, KP_IOPUB, ep, need), 0);
	T_EQ_STR(ep, "tcp://127.0.0.1:53212");
}

int
main(void)
{
	static const struct t_case cases[] = {
		{ "kp_chan_name", test_chan_names },
		{ "parse jupyter_client's file", test_parse_jupyter_file },
		{ "parse defaults, unknown keys", test_parse_defaults },
		{ "parse ipc", test_parse_ipc },
		{ "parse key bytes", test_parse_key_bytes },
		{ "parse errors and messages", test_parse_errors },
		{ "parse length limits", test_parse_too_long },
		{ "parse failure leaves out alone",
		    test_parse_failure_leaves_out },
		{ "json exact keys", test_json_keys },
		{ "json round trip", test_json_roundtrip },
		{ "json refuses invalid conn", test_json_rejects_invalid },
		{ "write 0600, jupyter's bytes", test_write },
		{ "write replaces, any umask", test_write_replaces },
		{ "write into missing dir", test_write_missing_dir },
		{ "write onto a directory", test_write_onto_dir },
		{ "write invalid conn", test_write_invalid },
		{ "endpoint tcp", test_endpoint_tcp },
		{ "endpoint ipc", test_endpoint_ipc },
		{ "endpoint buffer too small", test_endpoint_small },
	};

	return T_RUN(cases);
}
