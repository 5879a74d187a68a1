/*
 * kernel.h -- one Jupyter kernel process and its protocol session, on the
 * loop: launch from a kernelspec, readiness, executions, interrupt,
 * restart, shutdown, death.
 *
 * An execution is finished when both its execute_reply (shell) and its
 * status "idle" (iopub) have arrived; iopub output with the execution's
 * msg_id as parent reaches the caller in order until then.  Every
 * execution ends: idle without a reply ends it after a grace (as
 * interrupted when it was), a reply without idle once iopub is quiet
 * (with a note on stderr), and a kernel that dies ends every pending
 * execution with the cause.
 * Loop thread only; callbacks are called from the loop.
 */
#ifndef EXECD_KERNEL_H
#define EXECD_KERNEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "../../kernelproto/kp_chan.h"
#include "../../kernelproto/kp_kernelspec.h"
#include "../../kernelproto/kp_msg.h"

struct limits;
struct loop;
struct kernel;
struct metrics_src;

/* Daemon-wide settings; must outlive every kernel. */
struct kernel_conf {
	void		*zctx;
	const char	*runtime_dir;	/* connection files; must exist */
	enum kernel_transport {
		KERNEL_AUTO,	/* ipc for ipykernel, tcp for the rest */
		KERNEL_IPC,
		KERNEL_TCP,
	}		 transport;
	unsigned	 ready_timeout_ms;
	unsigned	 hb_interval_ms;	/* 0: no heartbeat */
	unsigned	 hb_misses;	/* missed beats that mean dead */
	unsigned	 grace_ms;	/* between shutdown steps */
	unsigned	 max_restarts;	/* automatic, in a row */
	size_t		 max_frame;	/* cap on a received frame */
	unsigned	 max_requests;	/* awaited at once; 0: KERNEL_REQ_MAX */
	/* Where OOM kills are counted, to name them; NULL: not named. */
	const struct metrics_src *cgroup;
	/*
	 * Kernels run as spawn's default user (spawn_default_user) when
	 * as_user: their connection file and socket directory are made
	 * uid's, and runtime_dir must let uid pass (0711).
	 */
	bool		 as_user;
	uid_t		 uid;
	gid_t		 gid;
	/* ipykernels are forked from a fork server (forksrv.h). */
	bool		 fork;
	/* ... and code may run in a fork without a kernel (oneshot.h). */
	bool		 no_kernel;
};

enum kernel_event {
	KERNEL_READY,		/* ready for executions (again) */
	KERNEL_RESTARTING,	/* died or was restarted; starting anew */
	KERNEL_DEAD,		/* gone for good; the kernel is freed next */
};

/*
 * State changes.  why explains RESTARTING and DEAD (exit status, signal,
 * stderr tail).  After DEAD the kernel frees itself once the callback
 * returns: drop every reference to it there.
 */
typedef void kernel_event_cb(struct kernel *, enum kernel_event,
    const char *why, void *arg);

/* Per-execution callbacks. */
struct kernel_exec_cb {
	/* Each iopub message of the execution except status, in order. */
	void	(*output)(struct kernel *, const struct kp_msg *, void *arg);
	/*
	 * Exactly once: reply is the execute_reply (borrowed) once reply and
	 * idle have both arrived; or NULL with why when the kernel died,
	 * restarted or shut down first.
	 */
	void	(*done)(struct kernel *, const struct kp_msg *reply,
		    const char *why, void *arg);
};

/*
 * A kernel serves any number of consumers besides execd's own executions
 * (a run, kernel_execute): a Jupyter client sends requests of its own on
 * shell, control or stdin (kernel_send) and hears their replies and the
 * input requests they allow; a subscriber sees every iopub message,
 * whoever it is for.  Delivery is a direct call: a subscriber must not
 * block, and bounds what it keeps for its own client; one that cannot
 * take a message (its client fell behind that bound) says so, and its
 * subscription ends there while the others go on.
 */

/* The execution state clients see, as Jupyter names it. */
enum kernel_state {
	KERNEL_S_STARTING,
	KERNEL_S_IDLE,
	KERNEL_S_BUSY,
	KERNEL_S_RESTARTING,
	KERNEL_S_DEAD,
};

/* A consumer's request (kernel_send). */
struct kernel_req_cb {
	/*
	 * At most once: the request's reply (borrowed), on the channel it
	 * was sent on; or NULL with why when the kernel died, restarted or
	 * shut down first.  NULL: no reply is awaited.
	 */
	void	(*reply)(struct kernel *, const struct kp_msg *reply,
		    const char *why, void *arg);
	/*
	 * An input_request of the request (an execute_request that allowed
	 * stdin); answer with an input_reply sent on KP_STDIN.  NULL: none.
	 */
	void	(*input)(struct kernel *, const struct kp_msg *req,
		    void *arg);
};

struct kernel_sub;

/* A subscriber to a kernel. */
struct kernel_sub_cb {
	/*
	 * Every iopub message (borrowed), whoever it is for: 0, or
	 * -ENOBUFS when the subscriber cannot take it (its client is too
	 * far behind): the subscription then ends, and dropped says so.
	 */
	int	(*iopub)(struct kernel *, const struct kp_msg *, void *arg);
	/*
	 * The execution state changed (NULL: not wanted).  After
	 * KERNEL_S_DEAD the subscription is freed and the kernel with it.
	 */
	void	(*state)(struct kernel *, enum kernel_state, void *arg);
	/*
	 * The subscription ended because iopub refused a message (NULL:
	 * not wanted); not called for kernel_unsubscribe() or death.
	 */
	void	(*dropped)(struct kernel *, void *arg);
};

/*
 * The environment of spec's kernels: execd's, the spec's env over it,
 * and execd's kernel settings; NULL-terminated, each string and the
 * array the caller's to free.
 */
char	**kernel_env(const struct kp_kernelspec *spec);

/*
 * Launch a kernel from spec (which must outlive it) in cwd (NULL: execd's),
 * under limits (NULL: none; copied, for its restarts too).
 * 0 with *out set; ev later reports READY or DEAD.  -errno with a message
 * in err when it could not even be started.
 */
int	kernel_start(struct loop *, const struct kernel_conf *,
	    const struct limits *,
	    const struct kp_kernelspec *spec, const char *cwd,
	    kernel_event_cb *ev, void *arg, struct kernel **out, char *err,
	    size_t errlen);

/*
 * What a process that is there already does to become a kernel (see
 * kernel_adopt): start one on connfile, with out_fd (to be dup'd, not
 * kept) as its stdout and stderr.  Its pid, registered with no one, or
 * -errno.
 */
typedef pid_t kernel_become_fn(const char *connfile, int out_fd, void *arg);

/*
 * A kernel of spec made of a process that is there already (a run once
 * that stays, oneshot.h), under the id given: a new connection file is
 * written and become() asked to start the kernel on it; from then on it
 * is as a forked kernel_start()'s (its restarts are forks of spec's
 * server), but that its start is not timed (the ready timeout) until
 * kernel_adopt_begun(): the process may finish runs before it begins.
 * Returns as kernel_start.
 */
int	kernel_adopt(struct loop *, const struct kernel_conf *,
	    const struct limits *, const struct kp_kernelspec *spec,
	    const char *cwd, const char *id, kernel_become_fn *become,
	    void *barg, kernel_event_cb *ev, void *arg, struct kernel **out,
	    char *err, size_t errlen);
void	kernel_adopt_begun(struct kernel *);

/*
 * Send an execute_request (allow_stdin false, store_history true).  The
 * kernel runs requests in the order sent.  0 with the request's msg_id in
 * id (33 bytes), or -errno (-EAGAIN while not ready, -EPIPE once dead,
 * -EINVAL when code is not valid UTF-8).
 */
int	kernel_execute(struct kernel *, const char *code,
	    const struct kernel_exec_cb *, void *arg, char *id);
/* Stop delivering callbacks for execution id (its caller went away). */
void	kernel_execute_forget(struct kernel *, const char *id);

/*
 * Interrupt by interrupt_mode (SIGINT, or interrupt_request on control).
 * For an execution of ours it is kept until the execution ends (idle or
 * reply): sent when the kernel starts it (at once if it has) and again
 * while it goes on; after a bounded number the kernel is restarted and
 * the execution ends with why saying so.  0 or -errno (-ESRCH: no
 * process).
 */
int	kernel_interrupt(struct kernel *);
int	kernel_restart(struct kernel *);	/* fresh process, same object */
/*
 * Orderly stop: shutdown_request, SIGTERM, SIGKILL, each after the grace
 * period; DEAD is reported (and the kernel freed) once it is reaped.
 */
void	kernel_shutdown(struct kernel *);

/*
 * Consumers' requests a kernel awaits replies to at once, at most, unless
 * kernel_conf.max_requests says otherwise.
 */
#define KERNEL_REQ_MAX	1024

/*
 * Sign and send a consumer's message m (not freed) on shell, control or
 * stdin; cb (NULL: nothing awaited) hears its reply and input requests.
 * 0, -EAGAIN while not ready, -EPIPE once dead, -EINVAL for a channel
 * other than those three or a message without a msg_id, -EEXIST when
 * its msg_id is that of a request or an execution still awaited (replies
 * and output are routed by it: a client must not take another's),
 * -ENOBUFS (nothing sent) when the most requests allowed
 * (max_requests) await their replies already, or -errno.
 */
int	kernel_send(struct kernel *, enum kp_chan_id, const struct kp_msg *m,
	    const struct kernel_req_cb *cb, void *arg);
/* Stop delivering callbacks for request msg_id (its sender went away). */
void	kernel_send_forget(struct kernel *, const char *msg_id);

/*
 * Subscribe to every iopub message and state change until
 * kernel_unsubscribe() or death.  Never NULL.
 */
struct kernel_sub *kernel_subscribe(struct kernel *,
	    const struct kernel_sub_cb *, void *arg);
/* End a subscription; safe from inside any of the kernel's callbacks. */
void	kernel_unsubscribe(struct kernel *, struct kernel_sub *);

enum kernel_state kernel_state(const struct kernel *);
/* "starting", "idle", "busy", "restarting" or "dead". */
const char	*kernel_state_name(enum kernel_state);
/* When a message last came from the kernel or was sent to it: Unix ms. */
int64_t		 kernel_last_activity(const struct kernel *);
/* Subscribers now. */
unsigned	 kernel_consumers(const struct kernel *);

const char	*kernel_id(const struct kernel *);
const char	*kernel_connection_file(const struct kernel *);
pid_t		 kernel_pid(const struct kernel *);	/* 0 when none */
/* Whether its process came from a fork server (forksrv.h). */
bool		 kernel_forked(const struct kernel *);
bool		 kernel_ready(const struct kernel *);
/* The kernel_info_reply content (borrowed), NULL before READY. */
const json_t	*kernel_info(const struct kernel *);

#endif
