/*
 * kernel.c -- kernel processes on the loop (jupyter_client's KernelManager
 * and the routing half of its client, in one place).
 *
 * Life of a kernel: write a connection file (0600) with a fresh key, spawn
 * the kernelspec's argv in its own process group, connect the channels,
 * send kernel_info_request until a reply has come on shell and something
 * has come on iopub (so the subscription is known to be live), then READY.
 * A process silent for a third of the ready timeout is started again, once
 * per start: a kernel can lose its receive loop to a request that came
 * while it was binding (tslab's zeromq.js does), and no retry reaches it.
 * The heartbeat and the reaper both watch for death.
 *
 * Consumers.  Every iopub message goes first to every subscriber
 * (kernel_subscribe), whoever it is for, and moves the execution state
 * (busy, idle) that clients see.  Then it is routed by its
 * parent_header.msg_id: to execd's own executions (a pending list keyed
 * by msg_id, kernel_execute), or to nobody.  A consumer's own requests
 * (kernel_send) are kept in a second list, keyed the same way, until
 * their reply comes on shell or control; an input_request on stdin goes
 * to the request it is for, if that request takes input.  Messages for a
 * client execd does not know (a Jupyter console attached by connection
 * file) are seen by subscribers only.
 *
 * Every execution ends, whatever the kernel loses.  An interrupt is kept
 * with the execution it is for: sent when the kernel shows that execution
 * busy (at once if it already has: ipykernel ignores SIGINT until it runs
 * the cell, so an early one is lost, and two close together can end it),
 * and again every INT_RESEND_MS while the execution goes on (after an
 * error, INT_ERROR_MS: IPython may report an interrupt that hit its own
 * bookkeeping and run the cell anyway); after INT_TRIES the kernel is
 * restarted, as jupyter_client does.  Idle without a reply
 * (ipykernel, interrupted just as it starts a cell, never replies) ends
 * the execution after a grace with a KeyboardInterrupt reply of our own;
 * a reply without idle (a PUB socket drops what a slow subscriber does
 * not take, silently) ends it once iopub has been quiet for a while, with
 * a note on stderr that output may be missing.  A late reply or idle
 * finds no execution and is ignored.
 *
 * This file decides nothing about contexts, languages or HTTP.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <netinet/in.h>
#include <unistd.h>

#include <openssl/rand.h>
#include <zmq.h>

#include "../../kernelproto/kp_chan.h"
#include "../../kernelproto/kp_connfile.h"
#include "../../util/id.h"
#include "../core/log.h"
#include "../core/loop.h"
#include "../core/xmalloc.h"
#include "../process/cgroup.h"
#include "../process/child.h"
#include "../process/limits.h"
#include "../process/spawn.h"
#include "forksrv.h"
#include "kernel.h"
#include "metrics.h"

#define TAIL_MAX	4096	/* stderr kept for error reports */
#define NUDGE_MS	100	/* kernel_info retry, reply in, no iopub yet */
#define ASK_AGAIN_MS	1000	/* kernel_info retry, no reply yet */
#define INT_RESEND_MS	250	/* interrupt again while it runs on */
#define INT_ERROR_MS	1000	/* ... once it has shown an error */
#define INT_TRIES	8	/* interrupts sent before a restart */
#define IDLE_GRACE_MS	500	/* idle, no reply, interrupted */
#define IDLE_WAIT_MS	5000	/* idle, no reply, not interrupted */
#define QUIET_MS	1000	/* reply, no idle: iopub quiet this long */
#define QUIET_ROUNDS	10	/* ... waited for at most this many times */

enum kstate { K_STARTING, K_READY, K_STOPPING, K_GONE };

/* Why execd itself killed the process, for the report. */
enum kcause {
	C_NONE, C_SILENT, C_READY_TIMEOUT, C_HEARTBEAT, C_INTERRUPT
};

struct pending {
	struct kernel		*k;
	char			 id[33];
	const struct kernel_exec_cb *cb;
	void			*arg;
	struct kp_msg		*reply;
	bool			 idle;
	bool			 busy;		/* the kernel runs it */
	bool			 int_want;	/* interrupted by the caller */
	bool			 int_seen;	/* it ended, or was said to */
	unsigned		 int_sent;
	uint64_t		 t_grace;	/* half in, other half due */
	unsigned		 quiet_rounds;
	unsigned long		 n_iopub;	/* messages of it, so far */
	unsigned long		 n_iopub_then;	/* ... at the last look */
	struct pending		*next;
};

/* A consumer's request awaiting its reply. */
struct request {
	char				*id;	/* the client's, any length */
	const struct kernel_req_cb	*cb;
	void				*arg;
	struct request			*next;
};

struct kernel_sub {
	const struct kernel_sub_cb	*cb;
	void				*arg;
	bool				 gone;	/* unsubscribed mid-delivery */
	struct kernel_sub		*next;
};

struct kernel {
	struct loop			*loop;
	const struct kernel_conf	*conf;
	const struct kp_kernelspec	*spec;
	char				*cwd;
	struct limits			 limits;
	kernel_event_cb			*ev;
	void				*arg;
	char				 id[ID_UUID_LEN + 1];	/* Jupyter's form */
	char				 session[33];
	char				*connfile;
	char				*sockdir;	/* the user's ipc sockets */
	struct kp_conn			 conn;
	struct kp_chan			*ch;
	pid_t				 pid;
	int				 errfd;
	char				 tail[TAIL_MAX];
	size_t				 tail_len;
	enum kstate			 state;
	bool				 restart_after_exit;
	bool				 silent_once;	/* started again for it */
	bool				 tcp;
	bool				 forked;	/* by a fork server */
	struct forksrv_req		*freq;	/* its fork asked for */
	bool				 no_fork;	/* launch it this time */
	bool				 untimed;	/* adopted, not begun */
	unsigned			 restarts;
	json_t				*info;
	bool				 info_reply;
	bool				 iopub_seen;
	char				 info_id[33];
	uint64_t			 t_ready, t_nudge, t_hb, t_stop;
	unsigned			 hb_missed;
	unsigned			 stop_step;
	enum kcause			 cause;
	bool				 have_oom;
	uint64_t			 oom_kills;	/* at launch */
	bool				 draining;
	struct pending			*pending;
	uint64_t			 t_int;	/* the interrupt's resend */
	char				 int_id[33];	/* ... for this one */
	unsigned			 int_sent;	/* before a restart */
	struct request			*requests;
	unsigned			 nrequests;	/* conf's max_requests */
	struct kernel_sub		*subs;
	unsigned			 nsubs;
	unsigned			 delivering;	/* to subs, nested */
	enum kernel_state		 xstate;
	int64_t				 last_activity;
};

static int	 launch(struct kernel *, char *, size_t);
static int	 new_conn(struct kernel *, char *, size_t);

/* A kernel object, no process yet. */
static struct kernel *
new_kernel(struct loop *loop, const struct kernel_conf *conf,
    const struct limits *lim, const struct kp_kernelspec *spec,
    const char *cwd, kernel_event_cb *ev, void *arg)
{
	struct kernel *k = xcalloc(1, sizeof(*k));

	k->loop = loop;
	k->xstate = KERNEL_S_STARTING;
	k->last_activity = loop_wall_ms();
	k->conf = conf;
	k->spec = spec;
	k->cwd = cwd != NULL ? xstrdup(cwd) : NULL;
	if (lim != NULL)
		k->limits = *lim;
	k->ev = ev;
	k->arg = arg;
	k->errfd = -1;
	return k;
}

static int	 connect_kernel(struct kernel *, char *, size_t);
static void	 on_forked(pid_t, int, const char *, void *);
static void	 reaped(pid_t, int, void *);
static void	 on_sock(struct loop *, int, void *, int, void *);
static void	 on_stderr(struct loop *, int, void *, int, void *);
static void	 on_ready_timeout(struct loop *, uint64_t, void *);
static void	 on_nudge(struct loop *, uint64_t, void *);
static void	 on_hb(struct loop *, uint64_t, void *);
static void	 on_stop_step(struct loop *, uint64_t, void *);
static void	 on_int_resend(struct loop *, uint64_t, void *);
static void	 on_grace(struct loop *, uint64_t, void *);
static void	 free_pending(struct kernel *, struct pending *);
static int	 send_interrupt(struct kernel *, struct pending *);
static void	 arm_resend(struct kernel *, struct pending *);
static void	 handle(struct kernel *, enum kp_chan_id, struct kp_msg *);
static void	 fail_pending(struct kernel *, const char *);
static void	 set_state(struct kernel *, enum kernel_state);
static void	 to_subs(struct kernel *, const struct kp_msg *);
static bool	 to_request(struct kernel *, enum kp_chan_id,
		    const struct kp_msg *);
static struct request *find_request(struct kernel *, const char *);
static void	 sweep_subs(struct kernel *);
static void	 teardown(struct kernel *);
static void	 free_kernel(struct kernel *);
static int	 send_info_request(struct kernel *);
static void	 describe_exit(int, char *, size_t);
static bool	 oom_killed(struct kernel *, int);
static void	 stderr_tail(struct kernel *, char *, size_t);

static const enum kp_chan_id polled[] = {
	KP_SHELL, KP_IOPUB, KP_STDIN, KP_CONTROL
};

/*
 * Whether this kernel listens on tcp.  ipc (no port to race for) is used
 * for ipykernel, which is known to speak it; many other kernels (tslab,
 * IRkernel) build "transport://ip:port" addresses whatever the transport,
 * which only tcp fits.  A socket path too long for sun_path means tcp.
 */
static bool
use_tcp(const struct kernel *k)
{
	bool ipykernel = false;

	if (k->conf->transport == KERNEL_TCP)
		return true;
	if (strlen(k->conf->runtime_dir) + (k->conf->as_user ?
	    sizeof("/kernel-.d/s-5") : sizeof("/kernel--5")) + 32 > 100)
		return true;
	if (k->conf->transport == KERNEL_IPC)
		return false;
	for (size_t i = 0; i < k->spec->argc; i++)
		if (strstr(k->spec->argv[i], "ipykernel") != NULL)
			ipykernel = true;
	return !ipykernel;
}

/* Free ports on 127.0.0.1 (bound, read, closed), for tcp transport. */
static int
pick_ports(int *ports, int n)
{
	struct sockaddr_in sin;
	socklen_t len;
	int fds[KP_NCHAN], rc = 0;

	for (int i = 0; i < n; i++)
		fds[i] = -1;
	for (int i = 0; i < n && rc == 0; i++) {
		memset(&sin, 0, sizeof(sin));
		sin.sin_family = AF_INET;
		sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		len = sizeof(sin);
		/* Kept open until all are chosen, so no port repeats. */
		if ((fds[i] = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC,
		    0)) < 0 || bind(fds[i], (struct sockaddr *)&sin,
		    sizeof(sin)) < 0 || getsockname(fds[i],
		    (struct sockaddr *)&sin, &len) < 0)
			rc = -errno;
		else
			ports[i] = ntohs(sin.sin_port);
	}
	for (int i = 0; i < n; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	return rc;
}

/* Launch a kernel; see kernel.h. */
int
kernel_start(struct loop *loop, const struct kernel_conf *conf,
    const struct limits *lim, const struct kp_kernelspec *spec,
    const char *cwd, kernel_event_cb *ev, void *arg, struct kernel **out,
    char *err, size_t errlen)
{
	struct kernel *k = new_kernel(loop, conf, lim, spec, cwd, ev, arg);
	int rc;

	id_uuid(k->id);
	if ((rc = launch(k, err, errlen)) < 0) {
		free_kernel(k);
		return rc;
	}
	*out = k;
	return 0;
}

/* A kernel of a process that is there already; see kernel.h. */
int
kernel_adopt(struct loop *loop, const struct kernel_conf *conf,
    const struct limits *lim, const struct kp_kernelspec *spec,
    const char *cwd, const char *id, kernel_become_fn *become, void *barg,
    kernel_event_cb *ev, void *arg, struct kernel **out, char *err,
    size_t errlen)
{
	struct kernel *k = new_kernel(loop, conf, lim, spec, cwd, ev, arg);
	int p[2] = { -1, -1 }, rc;
	pid_t pid;

	snprintf(k->id, sizeof(k->id), "%s", id);
	k->untimed = true;
	if ((rc = new_conn(k, err, errlen)) < 0)
		goto fail;
	/* Our end only is non-blocking: the kernel's writes must block. */
	if (pipe2(p, O_CLOEXEC) < 0 || fcntl(p[0], F_SETFL, O_NONBLOCK) < 0) {
		rc = -errno;
		snprintf(err, errlen, "pipe: %s", strerror(-rc));
		goto fail;
	}
	if ((pid = become(k->connfile, p[1], barg)) < 0) {
		rc = (int)pid;
		snprintf(err, errlen, "the process cannot become a kernel: %s",
		    strerror(-rc));
		goto fail;
	}
	close(p[1]);
	kp_msg_new_id(k->session);
	k->pid = pid;
	k->forked = true;
	k->errfd = p[0];
	child_add(k->pid, k->pid, reaped, k);
	loop_add_fd(k->loop, k->errfd, LOOP_READ, on_stderr, k);
	*out = k;
	/* On failure it was killed: the reaper reports it. */
	if (connect_kernel(k, err, errlen) < 0)
		log_warnx("kernel=%s: %s", k->id, err);
	return 0;
fail:
	if (k->connfile != NULL)
		unlink(k->connfile);
	if (k->sockdir != NULL)
		rmdir(k->sockdir);
	spawn_pipe_close(p);
	free_kernel(k);
	return rc;
}

/*
 * A new connection for k: a fresh 32-byte key (written as hex), ports or
 * ipc paths, and the file that holds them.  On failure nothing is left.
 */
static int
new_conn(struct kernel *k, char *err, size_t errlen)
{
	unsigned char raw[32];
	int rc;
	static const char hex[] = "0123456789abcdef";

	memset(&k->conn, 0, sizeof(k->conn));
	if (RAND_bytes(raw, sizeof(raw)) != 1) {
		snprintf(err, errlen, "no random bytes for the kernel key");
		return -EIO;
	}
	for (size_t i = 0; i < sizeof(raw); i++) {
		k->conn.key[2 * i] = (unsigned char)hex[raw[i] >> 4];
		k->conn.key[2 * i + 1] = (unsigned char)hex[raw[i] & 15];
	}
	explicit_bzero(raw, sizeof(raw));
	k->conn.keylen = 64;
	snprintf(k->conn.kernel_name, sizeof(k->conn.kernel_name), "%s",
	    k->spec->name);
	free(k->connfile);
	k->connfile = xasprintf("%s/kernel-%s.json", k->conf->runtime_dir,
	    k->id);
	k->tcp = use_tcp(k);
	if (k->tcp) {
		memcpy(k->conn.transport, "tcp", 4);
		snprintf(k->conn.ip, sizeof(k->conn.ip), "127.0.0.1");
		if ((rc = pick_ports(k->conn.port, KP_NCHAN)) < 0) {
			snprintf(err, errlen, "no free ports: %s",
			    strerror(-rc));
			return rc;
		}
	} else {
		memcpy(k->conn.transport, "ipc", 4);
		snprintf(k->conn.ip, sizeof(k->conn.ip), "%s/kernel-%s",
		    k->conf->runtime_dir, k->id);
		for (int i = 0; i < KP_NCHAN; i++)
			k->conn.port[i] = i + 1;
	}
	if (!k->tcp && k->conf->as_user) {
		/* The user's kernel binds in a directory of the user's. */
		free(k->sockdir);
		k->sockdir = xasprintf("%s/kernel-%s.d", k->conf->runtime_dir,
		    k->id);
		snprintf(k->conn.ip, sizeof(k->conn.ip), "%s/s", k->sockdir);
		if ((mkdir(k->sockdir, 0700) < 0 && errno != EEXIST) ||
		    chown(k->sockdir, k->conf->uid, k->conf->gid) < 0) {
			rc = -errno;
			snprintf(err, errlen, "%s: %s", k->sockdir,
			    strerror(-rc));
			goto fail;
		}
	}
	if ((rc = kp_connfile_write(k->connfile, &k->conn, err, errlen)) < 0)
		goto fail;
	if (k->conf->as_user &&
	    chown(k->connfile, k->conf->uid, k->conf->gid) < 0) {
		rc = -errno;
		snprintf(err, errlen, "%s: %s", k->connfile, strerror(-rc));
		goto fail;
	}
	return 0;
fail:
	unlink(k->connfile);
	if (k->sockdir != NULL)
		rmdir(k->sockdir);
	return rc;
}

/*
 * One process: connection file, spawn, channels, watches, timers.  On
 * failure everything made here is undone.
 */
static int
launch(struct kernel *k, char *err, size_t errlen)
{
	/*
	 * A kernel runs as the default user when there is one, else as
	 * execd; either way its connection file (0600) and sockets are its
	 * own and no one else's.
	 */
	struct spawn_opts so = { .stdin_fd = -1, .limits = &k->limits,
	    .keep_ids = !k->conf->as_user };
	char **argv = NULL, **env = NULL;
	int p[2] = { -1, -1 }, rc;

	/* 1. Connection info. */
	k->untimed = false;	/* a process of its own: timed from now */
	if ((rc = new_conn(k, err, errlen)) < 0)
		return rc;

	/* 2. The process, with stdout and stderr into one pipe we read. */
	kp_msg_new_id(k->session);
	argv = kp_kernelspec_argv(k->spec, k->connfile);
	env = kernel_env(k->spec);
	/* Our end only is non-blocking: the kernel's writes must block. */
	if (argv == NULL || pipe2(p, O_CLOEXEC) < 0 ||
	    fcntl(p[0], F_SETFL, O_NONBLOCK) < 0) {
		rc = -errno;
		snprintf(err, errlen, "cannot prepare the kernel: %s",
		    strerror(-rc));
		goto fail;
	}
	so.argv = argv;
	so.envp = env;
	so.cwd = k->cwd;
	so.stdout_fd = p[1];
	so.stderr_fd = p[1];
	/*
	 * An ipykernel comes from its spec's fork server when there is one
	 * ready; the first is launched while the server starts, and one
	 * that could not be forked is launched too.  A fork's pid comes
	 * later, to on_forked, which goes on from step 3.
	 */
	k->forked = false;
	k->state = K_STARTING;
	if (k->conf->fork && !k->no_fork && forksrv_fits(k->spec, argv)) {
		struct forksrv_job job = { .loop = k->loop,
		    .spec = k->spec, .argv = argv,
		    .envp = env, .cwd = k->cwd, .limits = &k->limits,
		    .out_fd = p[1], .keep_ids = so.keep_ids, .cb = reaped,
		    .arg = k, .done = on_forked, .done_arg = k };
		char ferr[256];

		rc = forksrv_start(&job, &k->freq, ferr, sizeof(ferr));
		if (rc == 0) {
			close(p[1]);
			p[1] = -1;
			k->errfd = p[0];
			k->tail_len = 0;
			loop_add_fd(k->loop, k->errfd, LOOP_READ, on_stderr,
			    k);
			goto out;
		}
		if (rc != -EAGAIN && rc != -ENOTSUP)
			log_warnx("kernel=%s not forked, launched: %s", k->id,
			    ferr);
	}
	if ((rc = spawn_start(&so, &k->pid, err, errlen)) < 0)
		goto fail;
	close(p[1]);
	p[1] = -1;
	k->errfd = p[0];
	k->tail_len = 0;
	child_add(k->pid, k->pid, reaped, k);
	loop_add_fd(k->loop, k->errfd, LOOP_READ, on_stderr, k);
	rc = connect_kernel(k, err, errlen);
	goto out;
fail:
	unlink(k->connfile);
	if (k->sockdir != NULL)
		rmdir(k->sockdir);
	if (p[0] >= 0)
		close(p[0]);
	if (p[1] >= 0)
		close(p[1]);
out:
	for (size_t i = 0; argv != NULL && argv[i] != NULL; i++)
		free(argv[i]);
	free(argv);
	for (size_t i = 0; env != NULL && env[i] != NULL; i++)
		free(env[i]);
	free(env);
	return rc;
}

/* The adopted process begins to become a kernel: its start is timed. */
void
kernel_adopt_begun(struct kernel *k)
{
	if (!k->untimed)
		return;
	k->untimed = false;
	if (k->state == K_STARTING && k->t_ready == 0 && k->ch != NULL)
		k->t_ready = loop_timer_add(k->loop,
		    k->conf->ready_timeout_ms / 3, on_ready_timeout, k);
}

/* Step 3 of launch, once the process is there: channels, timers. */
static int
connect_kernel(struct kernel *k, char *err, size_t errlen)
{
	int rc;

	/* A request sent before the kernel binds is queued. */
	if ((rc = kp_chan_open(k->conf->zctx, &k->conn, k->session,
	    k->conf->max_frame, &k->ch, err, errlen)) < 0) {
		kill(-k->pid, SIGKILL);	/* reaped will report DEAD */
		k->ch = NULL;
		return rc;
	}
	for (size_t i = 0; i < sizeof(polled) / sizeof(polled[0]); i++)
		loop_add_zsock(k->loop, kp_chan_socket(k->ch, polled[i]),
		    LOOP_READ, on_sock, k);
	k->have_oom = k->conf->cgroup != NULL &&
	    metrics_oom_kills(k->conf->cgroup, &k->oom_kills) == 0;
	k->state = K_STARTING;
	k->info_reply = k->iopub_seen = false;
	k->hb_missed = 0;
	send_info_request(k);
	/*
	 * Ask again each second until a reply comes, as jupyter_client does:
	 * a kernel still binding its sockets may lose the first request
	 * (tslab's zeromq.js does, with "Socket is blocked by a bind").
	 */
	k->t_nudge = loop_timer_add(k->loop, ASK_AGAIN_MS, on_nudge, k);
	if (!k->untimed)
		k->t_ready = loop_timer_add(k->loop, k->silent_once ?
		    k->conf->ready_timeout_ms : k->conf->ready_timeout_ms / 3,
		    on_ready_timeout, k);
	log_info("kernel=%s pid=%ld spec=%s %s", k->id, (long)k->pid,
	    k->spec->name, k->forked ? "forked" : "started");
	return 0;
}

/* The kernel is gone, or could not be made: DEAD, with why; k is freed. */
static void
dead(struct kernel *k, const char *why)
{
	k->state = K_GONE;
	set_state(k, KERNEL_S_DEAD);
	k->ev(k, KERNEL_DEAD, why, k->arg);
	free_kernel(k);
}

/* The fork server's answer: the kernel's pid, or launch it instead. */
static void
on_forked(pid_t pid, int rc, const char *msg, void *arg)
{
	struct kernel *k = arg;
	char err[256], why[400];

	k->freq = NULL;
	if (rc == -ESHUTDOWN)
		return;		/* execd stops: no kernel to make or report */
	if (rc == 0) {
		k->pid = pid;
		k->forked = true;
		/* On failure it was killed: the reaper reports it. */
		connect_kernel(k, err, sizeof(err));
		return;
	}
	log_warnx("kernel=%s not forked, launched: %s", k->id, msg);
	teardown(k);
	k->no_fork = true;
	rc = launch(k, err, sizeof(err));
	k->no_fork = false;
	if (rc == 0)
		return;
	snprintf(why, sizeof(why), "kernel %s could not be started: %s",
	    k->spec->name, err);
	fail_pending(k, why);
	dead(k, why);
}

/* Stopped before the fork server answered: no process to wait for. */
static void
on_unforked_stop(struct loop *l, uint64_t id, void *arg)
{
	struct kernel *k = arg;
	char why[400], err[256];

	k->t_stop = 0;
	teardown(k);
	snprintf(why, sizeof(why), "kernel %s %s", k->spec->name,
	    k->restart_after_exit ? "restarted" : "shut down");
	fail_pending(k, why);
	if (k->restart_after_exit) {
		k->restart_after_exit = false;
		set_state(k, KERNEL_S_RESTARTING);
		k->ev(k, KERNEL_RESTARTING, why, k->arg);
		if (launch(k, err, sizeof(err)) == 0)
			return;
		snprintf(why, sizeof(why), "kernel %s could not be "
		    "restarted: %s", k->spec->name, err);
	}
	dead(k, why);
}

/* execd's environment, the spec's env over it, and our kernel settings. */
char **
kernel_env(const struct kp_kernelspec *spec)
{
	extern char **environ;
	const char *key;
	json_t *v;
	size_t n = 0, i = 0, m;
	char **env;
	bool has_pydevd = false;

	while (environ[n] != NULL)
		n++;
	env = xcalloc(n + json_object_size(spec->env) + 2, sizeof(*env));
	for (size_t j = 0; j < n; j++) {
		m = strcspn(environ[j], "=");
		/* The spec's own value wins over ours. */
		if (spec->env != NULL) {
			char name[256];

			if (m < sizeof(name)) {
				memcpy(name, environ[j], m);
				name[m] = '\0';
				if (json_object_get(spec->env, name) != NULL)
					continue;
			}
		}
		if (strncmp(environ[j], "PYDEVD_DISABLE_FILE_VALIDATION=",
		    31) == 0)
			has_pydevd = true;
		env[i++] = xstrdup(environ[j]);
	}
	json_object_foreach(spec->env, key, v) {
		if (strcmp(key, "PYDEVD_DISABLE_FILE_VALIDATION") == 0)
			has_pydevd = true;
		env[i++] = xasprintf("%s=%s", key, json_string_value(v));
	}
	/*
	 * Debian's ipykernel prints four "frozen modules" warnings from
	 * debugpy on every start without this.
	 */
	if (!has_pydevd)
		env[i++] = xstrdup("PYDEVD_DISABLE_FILE_VALIDATION=1");
	env[i] = NULL;
	return env;
}

static int
send_info_request(struct kernel *k)
{
	struct kp_msg *m = kp_msg_kernel_info_request(k->session);
	int rc = kp_chan_send(k->ch, KP_SHELL, m);

	snprintf(k->info_id, sizeof(k->info_id), "%s", kp_msg_id(m));
	kp_msg_free(m);
	return rc;
}

/* Keep the last TAIL_MAX bytes the kernel wrote to stdout and stderr. */
static void
on_stderr(struct loop *l, int fd, void *zs, int rev, void *arg)
{
	struct kernel *k = arg;
	char buf[4096];
	ssize_t n;
	size_t keep;

	while ((n = read(fd, buf, sizeof(buf))) > 0) {
		if ((size_t)n >= TAIL_MAX) {
			memcpy(k->tail, buf + n - TAIL_MAX, TAIL_MAX);
			k->tail_len = TAIL_MAX;
			continue;
		}
		keep = k->tail_len + (size_t)n > TAIL_MAX ?
		    TAIL_MAX - (size_t)n : k->tail_len;
		memmove(k->tail, k->tail + k->tail_len - keep, keep);
		memcpy(k->tail + keep, buf, (size_t)n);
		k->tail_len = keep + (size_t)n;
	}
	if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
		loop_del(l, fd, NULL);
		close(fd);
		k->errfd = -1;
	}
}

/* The stderr tail as one line: "; stderr: ...", or "" when empty. */
static void
stderr_tail(struct kernel *k, char *out, size_t outlen)
{
	size_t n = 0, start = 0;

	if (k->errfd >= 0)
		on_stderr(k->loop, k->errfd, NULL, LOOP_READ, k);
	while (k->tail_len > 0 && (k->tail[k->tail_len - 1] == '\n' ||
	    k->tail[k->tail_len - 1] == '\r'))
		k->tail_len--;
	if (k->tail_len == 0 || outlen < 16) {
		if (outlen > 0)
			out[0] = '\0';
		return;
	}
	if (k->tail_len > outlen - 12)
		start = k->tail_len - (outlen - 12);
	n = (size_t)snprintf(out, outlen, "; stderr: ");
	for (size_t i = start; i < k->tail_len && n + 1 < outlen; i++)
		out[n++] = k->tail[i] == '\n' ? '|' : k->tail[i];
	out[n] = '\0';
}

/* "exited with code 3", "killed by signal 9 (Killed)". */
static void
describe_exit(int st, char *out, size_t outlen)
{
	if (WIFEXITED(st))
		snprintf(out, outlen, "exited with code %d", WEXITSTATUS(st));
	else if (WIFSIGNALED(st))
		snprintf(out, outlen, "killed by signal %d (%s)",
		    WTERMSIG(st), strsignal(WTERMSIG(st)));
	else
		snprintf(out, outlen, "stopped with status %d", st);
}

/* Drain every readable socket; messages are handled in arrival order. */
static void
on_sock(struct loop *l, int fd, void *zs, int rev, void *arg)
{
	struct kernel *k = arg;
	struct kp_msg *m;
	enum kp_chan_id c = KP_SHELL;
	int rc;

	for (size_t i = 0; i < sizeof(polled) / sizeof(polled[0]); i++)
		if (kp_chan_socket(k->ch, polled[i]) == zs)
			c = polled[i];
	for (;;) {
		if (k->ch == NULL)	/* torn down by a callback */
			return;
		rc = kp_chan_recv(k->ch, c, &m);
		if (rc == -EAGAIN)
			return;
		if (rc == -EBADMSG) {
			log_debug("kernel=%s dropped a bad message on %s",
			    k->id, kp_chan_name(c));
			continue;
		}
		if (rc < 0) {
			log_warnx("kernel=%s %s: %s", k->id, kp_chan_name(c),
			    zmq_strerror(-rc));
			return;
		}
		handle(k, c, m);
		kp_msg_free(m);
	}
}

static struct pending *
find_pending(struct kernel *k, const char *id)
{
	for (struct pending *p = k->pending; p != NULL; p = p->next)
		if (strcmp(p->id, id) == 0)
			return p;
	return NULL;
}

static void
unlink_pending(struct kernel *k, struct pending *p)
{
	for (struct pending **pp = &k->pending; *pp != NULL;
	    pp = &(*pp)->next) {
		if (*pp == p) {
			*pp = p->next;
			return;
		}
	}
}

/*
 * Both halves of an execution are in: report it and forget it.  The reply
 * and the iopub messages travel on different sockets, so iopub output the
 * kernel sent before its reply may still wait in our iopub queue: take it
 * in first.
 */
static void
maybe_done(struct kernel *k, struct pending *p)
{
	if (p->reply == NULL || !p->idle)
		return;
	if (!k->draining && k->ch != NULL) {
		k->draining = true;
		on_sock(k->loop, -1, kp_chan_socket(k->ch, KP_IOPUB),
		    LOOP_READ, k);
		k->draining = false;
		if (k->ch == NULL)	/* died meanwhile: already failed */
			return;
	}
	unlink_pending(k, p);
	k->restarts = 0;	/* it works: allow restarts again */
	if (p->cb != NULL)
		p->cb->done(k, p->reply, NULL, p->arg);
	free_pending(k, p);
}

/* An execution's memory and timers; it is off the list already. */
static void
free_pending(struct kernel *k, struct pending *p)
{
	loop_timer_cancel(k->loop, p->t_grace);
	if (k->t_int != 0 && strcmp(k->int_id, p->id) == 0) {
		loop_timer_cancel(k->loop, k->t_int);
		k->t_int = 0;
	}
	kp_msg_free(p->reply);
	free(p);
}

/* Wait ms for the missing half of p (see on_grace). */
static void
arm_grace(struct kernel *k, struct pending *p, unsigned ms)
{
	loop_timer_cancel(k->loop, p->t_grace);
	p->n_iopub_then = p->n_iopub;
	p->t_grace = loop_timer_add(k->loop, ms, on_grace, p);
}

/*
 * Half of an execution has been in for a while.  Read what waits on both
 * sockets first (the other half may be there); then end it: without its
 * reply, with a reply of our own (KeyboardInterrupt when interrupted);
 * without its idle, once iopub has been quiet, with a note on stderr.
 */
static void
on_grace(struct loop *l, uint64_t tid, void *arg)
{
	struct pending *p = arg;
	struct kernel *k = p->k;
	struct kp_msg *m;
	char id[33];
	json_t *c;

	p->t_grace = 0;
	memcpy(id, p->id, sizeof(id));
	for (size_t i = 0; i < 2 && k->ch != NULL; i++)
		on_sock(l, -1, kp_chan_socket(k->ch, i == 0 ? KP_SHELL :
		    KP_IOPUB), LOOP_READ, k);
	if (k->ch == NULL || (p = find_pending(k, id)) == NULL)
		return;		/* ended meanwhile */
	if (p->reply == NULL) {
		log_warnx("kernel=%s execution %s: idle but no execute_reply: "
		    "ending it", k->id, id);
		if (p->int_want)
			c = json_pack("{s:s, s:s, s:s, s:[s]}", "status",
			    "error", "ename", "KeyboardInterrupt", "evalue",
			    "the kernel was interrupted", "traceback",
			    "KeyboardInterrupt: the kernel was interrupted "
			    "and did not reply");
		else
			c = json_pack("{s:s, s:s, s:s, s:[]}", "status",
			    "error", "ename", "KernelError", "evalue",
			    "the kernel went idle without replying",
			    "traceback");
		p->reply = kp_msg_new("execute_reply", k->session, "execd", c,
		    NULL);
		if (p->reply == NULL)
			fatalx("execute_reply of our own");
		maybe_done(k, p);
		return;
	}
	if (p->n_iopub != p->n_iopub_then &&
	    ++p->quiet_rounds < QUIET_ROUNDS) {
		arm_grace(k, p, QUIET_MS);	/* output still comes */
		return;
	}
	log_warnx("kernel=%s execution %s: execute_reply but no idle: "
	    "ending it", k->id, id);
	m = kp_msg_new("stream", k->session, "execd", json_pack("{s:s, s:s}",
	    "name", "stderr", "text", "\n[execd: the kernel replied but "
	    "never reported idle; its output may be incomplete]\n"), NULL);
	if (m == NULL)
		fatalx("stream message of our own");
	if (p->cb != NULL)
		p->cb->output(k, m, p->arg);
	kp_msg_free(m);
	if (k->ch == NULL || (p = find_pending(k, id)) == NULL)
		return;
	p->idle = true;
	maybe_done(k, p);
}

static void
become_ready(struct kernel *k)
{
	loop_timer_cancel(k->loop, k->t_ready);
	loop_timer_cancel(k->loop, k->t_nudge);
	k->t_ready = k->t_nudge = 0;
	k->state = K_READY;
	k->last_activity = loop_wall_ms();	/* idle from here */
	k->silent_once = false;
	if (k->conf->hb_interval_ms > 0 && k->t_hb == 0) {
		kp_chan_hb_ping(k->ch);
		k->t_hb = loop_timer_add(k->loop, k->conf->hb_interval_ms,
		    on_hb, k);
	}
	log_info("kernel=%s ready", k->id);
	set_state(k, KERNEL_S_IDLE);
	k->ev(k, KERNEL_READY, NULL, k->arg);
}

/* Route one message. */
static void
handle(struct kernel *k, enum kp_chan_id c, struct kp_msg *m)
{
	const char *type = kp_msg_type(m), *parent = kp_msg_parent_id(m);
	struct pending *p;
	const char *st;
	char id[33];

	k->last_activity = loop_wall_ms();
	if (c == KP_IOPUB && k->state == K_STARTING) {
		k->iopub_seen = true;
		if (k->info_reply)
			become_ready(k);
	}
	if (c == KP_IOPUB && k->state == K_READY) {
		to_subs(k, m);
		if (k->ch == NULL)	/* torn down by a subscriber */
			return;
	}
	if (c == KP_SHELL && strcmp(type, "kernel_info_reply") == 0 &&
	    (k->state == K_STARTING || strcmp(parent, k->info_id) == 0)) {
		if (k->state != K_STARTING)
			return;		/* a late answer to our own */
		json_decref(k->info);
		k->info = json_incref(m->content);
		k->info_reply = true;
		if (k->iopub_seen) {
			become_ready(k);
		} else {
			/* Ask again soon until iopub shows it subscribed. */
			loop_timer_cancel(k->loop, k->t_nudge);
			k->t_nudge = loop_timer_add(k->loop, NUDGE_MS,
			    on_nudge, k);
		}
		return;
	}
	if ((p = find_pending(k, parent)) == NULL) {
		if (c != KP_IOPUB && !to_request(k, c, m))
			log_debug("kernel=%s %s %s for another client", k->id,
			    kp_chan_name(c), type);
		return;
	}
	if (c == KP_SHELL && strcmp(type, "execute_reply") == 0) {
		if (p->reply == NULL) {
			/* Taken over by the pending entry; see maybe_done. */
			p->reply = xcalloc(1, sizeof(*p->reply));
			*p->reply = *m;
			memset(m, 0, sizeof(*m));
		}
		snprintf(id, sizeof(id), "%s", p->id);
		maybe_done(k, p);
		if (k->ch != NULL && (p = find_pending(k, id)) != NULL &&
		    !p->idle && p->t_grace == 0)
			arm_grace(k, p, QUIET_MS);
		return;
	}
	if (c != KP_IOPUB)
		return;
	p->n_iopub++;
	if (strcmp(type, "status") == 0) {
		st = json_string_value(json_object_get(m->content,
		    "execution_state"));
		if (st != NULL && strcmp(st, "busy") == 0 && !p->busy) {
			p->busy = true;
			/* An interrupt that came too early: again, now. */
			if (p->int_want && !p->int_seen)
				send_interrupt(k, p);
		} else if (st != NULL && strcmp(st, "idle") == 0 &&
		    !p->idle) {
			p->idle = p->int_seen = true;
			snprintf(id, sizeof(id), "%s", p->id);
			maybe_done(k, p);
			if (k->ch != NULL && (p = find_pending(k, id)) !=
			    NULL && p->reply == NULL)
				arm_grace(k, p, p->int_want ? IDLE_GRACE_MS :
				    IDLE_WAIT_MS);
		}
		return;
	}
	/* Likely the interrupt; if the run goes on, it is sent again. */
	if (strcmp(type, "error") == 0 && p->int_want && k->t_int != 0 &&
	    strcmp(k->int_id, p->id) == 0) {
		loop_timer_cancel(k->loop, k->t_int);
		k->t_int = loop_timer_add(k->loop, INT_ERROR_MS,
		    on_int_resend, k);
	}
	if (p->cb != NULL)
		p->cb->output(k, m, p->arg);
}

static void
on_nudge(struct loop *l, uint64_t id, void *arg)
{
	struct kernel *k = arg;

	k->t_nudge = 0;
	if (k->state != K_STARTING || (k->info_reply && k->iopub_seen))
		return;
	send_info_request(k);
	k->t_nudge = loop_timer_add(l, k->info_reply ? NUDGE_MS : ASK_AGAIN_MS,
	    on_nudge, k);
}

static void
on_ready_timeout(struct loop *l, uint64_t id, void *arg)
{
	struct kernel *k = arg;

	k->t_ready = 0;
	if (k->state != K_STARTING)
		return;
	if (!k->silent_once) {
		log_warnx("kernel=%s no kernel_info_reply within %u ms: "
		    "starting it again", k->id, k->conf->ready_timeout_ms / 3);
		k->silent_once = true;
		k->restart_after_exit = true;
		k->cause = C_SILENT;
	} else {
		log_warnx("kernel=%s no kernel_info_reply within %u ms: "
		    "killing it", k->id, k->conf->ready_timeout_ms);
		k->restart_after_exit = false;
		k->cause = C_READY_TIMEOUT;
	}
	kill(-k->pid, SIGKILL);
}

/* Heartbeat tick: a missing pong counts; enough of them mean dead. */
static void
on_hb(struct loop *l, uint64_t id, void *arg)
{
	struct kernel *k = arg;

	k->t_hb = 0;
	if (k->state != K_READY)
		return;
	if (kp_chan_hb_pong(k->ch) == 0) {
		k->hb_missed = 0;
	} else if (++k->hb_missed >= k->conf->hb_misses) {
		log_warnx("kernel=%s missed %u heartbeats: killing it", k->id,
		    k->hb_missed);
		k->cause = C_HEARTBEAT;
		kill(-k->pid, SIGKILL);
		return;
	} else {
		kp_chan_hb_reset(k->ch);
	}
	kp_chan_hb_ping(k->ch);
	k->t_hb = loop_timer_add(l, k->conf->hb_interval_ms, on_hb, k);
}

/* Start an execution; see kernel.h. */
int
kernel_execute(struct kernel *k, const char *code,
    const struct kernel_exec_cb *cb, void *arg, char *id)
{
	struct kp_msg *m;
	struct pending *p, **pp;
	int rc;

	if (k->state == K_STARTING)
		return -EAGAIN;
	if (k->state != K_READY)
		return -EPIPE;
	if ((m = kp_msg_execute_request(k->session, code, false,
	    false)) == NULL)
		return -EINVAL;		/* code is not valid UTF-8 */
	if ((rc = kp_chan_send(k->ch, KP_SHELL, m)) < 0) {
		kp_msg_free(m);
		return rc;
	}
	p = xcalloc(1, sizeof(*p));
	p->k = k;
	snprintf(p->id, sizeof(p->id), "%s", kp_msg_id(m));
	p->cb = cb;
	p->arg = arg;
	for (pp = &k->pending; *pp != NULL; pp = &(*pp)->next)
		;
	*pp = p;	/* in sending order */
	memcpy(id, p->id, sizeof(p->id));
	kp_msg_free(m);
	return 0;
}

/* Keep the execution (the kernel still runs it) but stop reporting it. */
void
kernel_execute_forget(struct kernel *k, const char *id)
{
	struct pending *p = find_pending(k, id);

	if (p != NULL)
		p->cb = NULL;
}

/*
 * One interrupt by interrupt_mode: SIGINT to the group, or
 * interrupt_request on control.  For p (NULL: none of ours), counted, and
 * sent again after INT_RESEND_MS unless a sign of it comes first.
 */
static int
send_interrupt(struct kernel *k, struct pending *p)
{
	struct kp_msg *m;
	int rc;

	if (k->spec->interrupt_mode == KP_INTERRUPT_SIGNAL) {
		rc = kill(-k->pid, SIGINT) < 0 ? -errno : 0;
	} else if (k->ch == NULL) {
		return -ESRCH;	/* no channels: the process is going */
	} else {
		m = kp_msg_interrupt_request(k->session);
		rc = kp_chan_send(k->ch, KP_CONTROL, m);
		kp_msg_free(m);
	}
	if (p == NULL)
		return rc;
	p->int_sent++;
	arm_resend(k, p);
	return rc;
}

/* Interrupt p again after INT_RESEND_MS unless a sign comes first. */
static void
arm_resend(struct kernel *k, struct pending *p)
{
	loop_timer_cancel(k->loop, k->t_int);
	snprintf(k->int_id, sizeof(k->int_id), "%s", p->id);
	k->t_int = loop_timer_add(k->loop, INT_RESEND_MS, on_int_resend, k);
}

/*
 * No sign of the interrupt yet: send it again, or after INT_TRIES kill
 * the kernel to start it anew (what it ran is lost either way).
 */
static void
on_int_resend(struct loop *l, uint64_t tid, void *arg)
{
	struct kernel *k = arg;
	struct pending *p;

	k->t_int = 0;
	if (k->state != K_READY || k->pid == 0 ||
	    (p = find_pending(k, k->int_id)) == NULL || p->int_seen ||
	    p->reply != NULL)
		return;
	if (p->int_sent < INT_TRIES) {
		send_interrupt(k, p);
		return;
	}
	log_warnx("kernel=%s no sign of %u interrupts: restarting it", k->id,
	    p->int_sent);
	k->int_sent = p->int_sent;
	k->cause = C_INTERRUPT;
	k->restart_after_exit = true;
	k->state = K_STOPPING;
	kill(-k->pid, SIGKILL);
}

/* Interrupt what runs; see kernel.h. */
int
kernel_interrupt(struct kernel *k)
{
	struct pending *p;

	if (k->freq != NULL)
		return 0;	/* not forked yet: nothing runs */
	if (k->pid == 0 || k->state == K_GONE)
		return -ESRCH;
	if (k->state != K_READY || k->ch == NULL)
		return send_interrupt(k, NULL);
	/* The oldest execution still running is the kernel's current one. */
	for (p = k->pending; p != NULL; p = p->next)
		if (p->reply == NULL && !p->idle)
			break;
	if (p == NULL)
		return send_interrupt(k, NULL);
	p->int_want = true;
	p->int_seen = false;
	/*
	 * Not started: wait for its busy (or the resend).  Sent now as well,
	 * ipykernel would drop it or, worse, take the second of two SIGINTs
	 * so close together outside its handler, and exit.
	 */
	if (!p->busy) {
		arm_resend(k, p);
		return 0;
	}
	return send_interrupt(k, p);
}

/* End every pending execution, and every consumer's request, with why. */
static void
fail_pending(struct kernel *k, const char *why)
{
	struct pending *p;
	struct request *q;

	while ((p = k->pending) != NULL) {
		k->pending = p->next;
		if (p->cb != NULL)
			p->cb->done(k, NULL, why, p->arg);
		free_pending(k, p);
	}
	k->nrequests = 0;
	while ((q = k->requests) != NULL) {
		k->requests = q->next;
		if (q->cb != NULL && q->cb->reply != NULL)
			q->cb->reply(k, NULL, why, q->arg);
		free(q->id);
		free(q);
	}
}

/* Close channels, timers, pipe and connection file of the last process. */
static void
teardown(struct kernel *k)
{
	if (k->ch != NULL) {
		for (size_t i = 0; i < sizeof(polled) / sizeof(polled[0]);
		    i++)
			loop_del(k->loop, -1, kp_chan_socket(k->ch,
			    polled[i]));
		kp_chan_close(k->ch);
		k->ch = NULL;
	}
	loop_timer_cancel(k->loop, k->t_ready);
	loop_timer_cancel(k->loop, k->t_nudge);
	loop_timer_cancel(k->loop, k->t_hb);
	loop_timer_cancel(k->loop, k->t_stop);
	loop_timer_cancel(k->loop, k->t_int);
	k->t_ready = k->t_nudge = k->t_hb = k->t_stop = k->t_int = 0;
	if (k->errfd >= 0) {
		loop_del(k->loop, k->errfd, NULL);
		close(k->errfd);
		k->errfd = -1;
	}
	if (k->connfile != NULL) {
		unlink(k->connfile);
		if (!k->tcp) {
			/* ipc sockets the kernel bound: <ip>-1 .. <ip>-5 */
			for (int i = 0; i < KP_NCHAN; i++) {
				char *s = xasprintf("%s-%d", k->conn.ip,
				    k->conn.port[i]);

				unlink(s);
				free(s);
			}
		}
		if (k->sockdir != NULL)
			rmdir(k->sockdir);
	}
	explicit_bzero(k->conn.key, sizeof(k->conn.key));
	k->pid = 0;
}

static void
free_kernel(struct kernel *k)
{
	struct kernel_sub *s;

	if (k->freq != NULL)
		forksrv_cancel(k->freq);
	while ((s = k->subs) != NULL) {
		k->subs = s->next;
		free(s);
	}
	json_decref(k->info);
	free(k->connfile);
	free(k->sockdir);
	free(k->cwd);
	free(k);
}

/*
 * Whether the OOM killer ended the kernel: a SIGKILL that execd did not
 * send, while the cgroup's OOM kill count went up.
 */
static bool
oom_killed(struct kernel *k, int st)
{
	uint64_t n;

	return k->have_oom && WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL &&
	    k->cause == C_NONE && k->state != K_STOPPING &&
	    metrics_oom_kills(k->conf->cgroup, &n) == 0 && n > k->oom_kills;
}

/* The reaper's report: decide between restart, death and shutdown. */
static void
reaped(pid_t pid, int st, void *arg)
{
	struct kernel *k = arg;
	char how[256], tail[1024], why[1400], lim[160];
	bool was_ready, restart;
	char err[256];
	size_t n;

	/*
	 * Read what the kernel sent before it died, first: one poll may
	 * report the exit and its last output together, and output printed
	 * just before a crash belongs to the run it ends.
	 */
	for (size_t i = 0; k->ch != NULL &&
	    i < sizeof(polled) / sizeof(polled[0]); i++)
		on_sock(k->loop, -1, kp_chan_socket(k->ch, polled[i]),
		    LOOP_READ, k);
	was_ready = k->state == K_READY;
	describe_exit(st, how, sizeof(how));
	if (cgroup_why(pid, st, lim, sizeof(lim)))
		snprintf(how, sizeof(how), "ended, %s%s", lim,
		    strncmp(lim, "memory", 6) == 0 ? " (out of memory)" : "");
	else if (oom_killed(k, st))
		snprintf(how, sizeof(how), "was killed by the out-of-memory "
		    "killer (signal 9)");
	stderr_tail(k, tail, sizeof(tail));
	if (k->cause == C_SILENT)
		snprintf(why, sizeof(why), "kernel %s did not answer "
		    "kernel_info within %u ms: starting it again%s",
		    k->spec->name, k->conf->ready_timeout_ms / 3, tail);
	else if (k->cause == C_READY_TIMEOUT)
		snprintf(why, sizeof(why), "kernel %s did not answer "
		    "kernel_info within %u ms%s", k->spec->name,
		    k->conf->ready_timeout_ms, tail);
	else if (k->cause == C_HEARTBEAT)
		snprintf(why, sizeof(why), "kernel %s stopped answering its "
		    "heartbeat and was killed%s", k->spec->name, tail);
	else if (k->cause == C_INTERRUPT)
		snprintf(why, sizeof(why), "kernel %s showed no sign of %u "
		    "interrupts and was %s", k->spec->name, k->int_sent,
		    k->restart_after_exit ? "restarted" : "shut down");
	else if (k->state == K_STOPPING)
		snprintf(why, sizeof(why), "kernel %s %s", k->spec->name,
		    k->restart_after_exit ? "restarted" : "shut down");
	else
		snprintf(why, sizeof(why), "kernel %s %s%s%s", k->spec->name,
		    how, was_ready ? "" : " before it was ready", tail);
	log_info("kernel=%s pid=%ld %s", k->id, (long)pid, how);
	restart = k->restart_after_exit || (was_ready &&
	    k->restarts < k->conf->max_restarts);
	if (was_ready && !restart) {
		n = strlen(why);
		snprintf(why + n, sizeof(why) - n, " (not restarted: it died "
		    "%u times in a row)", k->restarts + 1);
	}
	teardown(k);
	fail_pending(k, why);
	k->stop_step = 0;
	k->cause = C_NONE;
	if (restart) {
		if (!k->restart_after_exit)
			k->restarts++;
		k->restart_after_exit = false;
		set_state(k, KERNEL_S_RESTARTING);
		k->ev(k, KERNEL_RESTARTING, why, k->arg);
		if (launch(k, err, sizeof(err)) == 0)
			return;
		snprintf(why, sizeof(why), "kernel %s could not be restarted: "
		    "%s", k->spec->name, err);
	}
	k->state = K_GONE;
	set_state(k, KERNEL_S_DEAD);
	k->ev(k, KERNEL_DEAD, why, k->arg);
	free_kernel(k);
}

/* The next step of an orderly stop. */
static void
on_stop_step(struct loop *l, uint64_t id, void *arg)
{
	struct kernel *k = arg;

	k->t_stop = 0;
	if (k->pid == 0)
		return;
	k->stop_step++;
	kill(-k->pid, k->stop_step == 1 ? SIGTERM : SIGKILL);
	if (k->stop_step == 1)
		k->t_stop = loop_timer_add(l, k->conf->grace_ms, on_stop_step,
		    k);
}

static void
begin_stop(struct kernel *k)
{
	struct kp_msg *m;

	if ((k->pid == 0 && k->freq == NULL) || k->state == K_STOPPING ||
	    k->state == K_GONE)
		return;
	k->state = K_STOPPING;
	k->stop_step = 0;
	if (k->freq != NULL) {
		forksrv_cancel(k->freq);
		k->freq = NULL;
		k->t_stop = loop_timer_add(k->loop, 0, on_unforked_stop, k);
		return;
	}
	m = kp_msg_shutdown_request(k->session, false);
	if (k->ch == NULL || kp_chan_send(k->ch, KP_CONTROL, m) < 0) {
		k->stop_step = 1;
		kill(-k->pid, SIGTERM);
	}
	kp_msg_free(m);
	k->t_stop = loop_timer_add(k->loop, k->conf->grace_ms, on_stop_step,
	    k);
}

/* A fresh process behind the same kernel object. */
int
kernel_restart(struct kernel *k)
{
	if (k->state == K_GONE || (k->pid == 0 && k->freq == NULL))
		return -ESRCH;
	k->restart_after_exit = true;
	begin_stop(k);
	return 0;
}

/* Orderly stop; see kernel.h. */
void
kernel_shutdown(struct kernel *k)
{
	k->restart_after_exit = false;
	begin_stop(k);
}

/* Send a consumer's message; see kernel.h. */
int
kernel_send(struct kernel *k, enum kp_chan_id c, const struct kp_msg *m,
    const struct kernel_req_cb *cb, void *arg)
{
	struct request *q;
	bool awaited;
	int rc;

	if (c != KP_SHELL && c != KP_CONTROL && c != KP_STDIN)
		return -EINVAL;
	if (k->state == K_STARTING)
		return -EAGAIN;
	if (k->state != K_READY || k->ch == NULL)
		return -EPIPE;
	/*
	 * Replies and output are routed by the request's msg_id: one that
	 * is empty, or already awaited, would take another's.
	 */
	if (kp_msg_id(m)[0] == '\0')
		return -EINVAL;
	if (find_pending(k, kp_msg_id(m)) != NULL ||
	    find_request(k, kp_msg_id(m)) != NULL)
		return -EEXIST;
	awaited = cb != NULL && (cb->reply != NULL || cb->input != NULL);
	/* A reply that never comes must not grow the list for ever. */
	if (awaited && k->nrequests >= (k->conf->max_requests > 0 ?
	    k->conf->max_requests : KERNEL_REQ_MAX))
		return -ENOBUFS;
	if ((rc = kp_chan_send(k->ch, c, m)) < 0)
		return rc;
	k->last_activity = loop_wall_ms();
	if (!awaited)
		return 0;
	k->nrequests++;
	q = xcalloc(1, sizeof(*q));
	q->id = xstrdup(kp_msg_id(m));
	q->cb = cb;
	q->arg = arg;
	q->next = k->requests;
	k->requests = q;
	return 0;
}

/* The consumer's request awaiting its reply under msg_id id, or NULL. */
static struct request *
find_request(struct kernel *k, const char *id)
{
	for (struct request *q = k->requests; q != NULL; q = q->next)
		if (strcmp(q->id, id) == 0)
			return q;
	return NULL;
}

void
kernel_send_forget(struct kernel *k, const char *id)
{
	for (struct request **qq = &k->requests; *qq != NULL;
	    qq = &(*qq)->next) {
		if (strcmp((*qq)->id, id) == 0) {
			struct request *q = *qq;

			*qq = q->next;
			k->nrequests--;
			free(q->id);
			free(q);
			return;
		}
	}
}

/*
 * A shell or control reply, or a stdin input_request, for a consumer's
 * request: delivered, and the request forgotten once replied to.  Whether
 * one took it.
 */
static bool
to_request(struct kernel *k, enum kp_chan_id c, const struct kp_msg *m)
{
	const char *parent = kp_msg_parent_id(m), *type = kp_msg_type(m);
	struct request **qq, *q;
	size_t n = strlen(type);

	for (qq = &k->requests; *qq != NULL; qq = &(*qq)->next)
		if (strcmp((*qq)->id, parent) == 0)
			break;
	if ((q = *qq) == NULL)
		return false;
	if (c == KP_STDIN) {
		if (strcmp(type, "input_request") != 0 || q->cb->input == NULL)
			return false;
		q->cb->input(k, m, q->arg);
		return true;
	}
	if (n < 6 || strcmp(type + n - 6, "_reply") != 0)
		return false;
	*qq = q->next;
	k->nrequests--;
	if (q->cb->reply != NULL)
		q->cb->reply(k, m, NULL, q->arg);
	free(q->id);
	free(q);
	return true;
}

struct kernel_sub *
kernel_subscribe(struct kernel *k, const struct kernel_sub_cb *cb,
    void *arg)
{
	struct kernel_sub *s = xcalloc(1, sizeof(*s)), **ss;

	s->cb = cb;
	s->arg = arg;
	for (ss = &k->subs; *ss != NULL; ss = &(*ss)->next)
		;
	*ss = s;	/* in order of subscription */
	k->nsubs++;
	return s;
}

/* Unlinked now, or after the delivery under way (see sweep_subs). */
void
kernel_unsubscribe(struct kernel *k, struct kernel_sub *s)
{
	if (s->gone)
		return;
	s->gone = true;
	k->nsubs--;
	if (k->delivering == 0)
		sweep_subs(k);
}

/* Free the subscriptions ended during a delivery. */
static void
sweep_subs(struct kernel *k)
{
	struct kernel_sub **ss = &k->subs, *s;

	while ((s = *ss) != NULL) {
		if (s->gone) {
			*ss = s->next;
			free(s);
		} else {
			ss = &s->next;
		}
	}
}

/* An iopub message to every subscriber; a status moves the state first. */
static void
to_subs(struct kernel *k, const struct kp_msg *m)
{
	const char *st;

	if (strcmp(kp_msg_type(m), "status") == 0 &&
	    (st = json_string_value(json_object_get(m->content,
	    "execution_state"))) != NULL) {
		if (strcmp(st, "busy") == 0)
			set_state(k, KERNEL_S_BUSY);
		else if (strcmp(st, "idle") == 0)
			set_state(k, KERNEL_S_IDLE);
	}
	k->delivering++;
	for (struct kernel_sub *s = k->subs; s != NULL; s = s->next) {
		if (s->gone || s->cb->iopub == NULL ||
		    s->cb->iopub(k, m, s->arg) != -ENOBUFS)
			continue;
		/* Too slow: it goes, the others go on. */
		log_warnx("kernel=%s a subscriber fell behind: dropped", k->id);
		kernel_unsubscribe(k, s);
		if (s->cb->dropped != NULL)
			s->cb->dropped(k, s->arg);
	}
	if (--k->delivering == 0)
		sweep_subs(k);
}

/* A new execution state, told to every subscriber that asked. */
static void
set_state(struct kernel *k, enum kernel_state st)
{
	if (k->xstate == st)
		return;
	k->xstate = st;
	k->delivering++;
	for (struct kernel_sub *s = k->subs; s != NULL; s = s->next)
		if (!s->gone && s->cb->state != NULL)
			s->cb->state(k, st, s->arg);
	if (--k->delivering == 0)
		sweep_subs(k);
}

enum kernel_state
kernel_state(const struct kernel *k)
{
	return k->xstate;
}

const char *
kernel_state_name(enum kernel_state st)
{
	static const char *const names[] = { "starting", "idle", "busy",
	    "restarting", "dead" };

	return (size_t)st < sizeof(names) / sizeof(names[0]) ? names[st] :
	    "unknown";
}

int64_t
kernel_last_activity(const struct kernel *k)
{
	return k->last_activity;
}

unsigned
kernel_consumers(const struct kernel *k)
{
	return k->nsubs;
}

const char *
kernel_id(const struct kernel *k)
{
	return k->id;
}

const char *
kernel_connection_file(const struct kernel *k)
{
	return k->connfile;
}

pid_t
kernel_pid(const struct kernel *k)
{
	return k->pid;
}

bool
kernel_forked(const struct kernel *k)
{
	return k->forked;
}

bool
kernel_ready(const struct kernel *k)
{
	return k->state == K_READY;
}

const json_t *
kernel_info(const struct kernel *k)
{
	return k->state == K_READY ? k->info : NULL;
}
