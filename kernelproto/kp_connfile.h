/*
 * kp_connfile.h -- a kernel's connection info and its JSON file, as
 * jupyter_client writes and reads it.
 *
 * {"shell_port":..,"iopub_port":..,"stdin_port":..,"control_port":..,
 *  "hb_port":..,"ip":"127.0.0.1","key":"<hex>","transport":"tcp"|"ipc",
 *  "signature_scheme":"hmac-sha256","kernel_name":".."}
 * With transport "ipc", ip is a path prefix and channel N listens on
 * "ipc://<ip>-<port>".  Pure apart from kp_connfile_write; any thread.
 */
#ifndef KP_CONNFILE_H
#define KP_CONNFILE_H

#include <stddef.h>

#include <jansson.h>

enum kp_chan_id {
	KP_SHELL, KP_IOPUB, KP_STDIN, KP_CONTROL, KP_HB, KP_NCHAN
};

#define KP_KEY_MAX	128

struct kp_conn {
	char		 transport[4];		/* "tcp" or "ipc" */
	char		 ip[256];		/* address, ipc path prefix */
	int		 port[KP_NCHAN];
	unsigned char	 key[KP_KEY_MAX];	/* the key's bytes as written */
	size_t		 keylen;		/* 0: no signing */
	char		 kernel_name[128];
};

/* "shell", "iopub", "stdin", "control", "hb". */
const char	*kp_chan_name(enum kp_chan_id);

/*
 * Parse a connection file's text.  Unknown keys are ignored; a missing or
 * ill-typed required key, a port outside 1..65535, a transport other than
 * tcp/ipc, or a signature_scheme other than hmac-sha256 (when a key is
 * set) is -EINVAL with a message in err.
 */
int	 kp_connfile_parse(const char *text, size_t n, struct kp_conn *out,
	    char *err, size_t errlen);
/* The connection info as a JSON object (the caller's reference). */
json_t	*kp_connfile_json(const struct kp_conn *);
/*
 * Write the file with mode 0600 (temporary file, fsync, rename).  0 or
 * -errno with a message in err.
 */
int	 kp_connfile_write(const char *path, const struct kp_conn *,
	    char *err, size_t errlen);
/* "tcp://ip:port" or "ipc://ip-port" for channel c.  0 or -ENAMETOOLONG. */
int	 kp_conn_endpoint(const struct kp_conn *, enum kp_chan_id c,
	    char *out, size_t outlen);

#endif
