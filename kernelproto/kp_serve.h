/*
 * kp_serve.h -- a kernel's answers to the Jupyter requests, over
 * kp_kernel's sockets.
 *
 * It answers kernel_info, is_complete and (on control) shutdown and
 * interrupt itself, from the callbacks below; an execute_request starts a
 * run: status busy and execute_input are published and ops->execute
 * called; the kernel then publishes the run's output with kp_serve_stream
 * / _result / _error and ends it with kp_serve_done, which sends the
 * execute_reply and status idle.  One run at a time: the caller stops
 * polling shell while kp_serve_busy() (requests queue in ZeroMQ meanwhile)
 * and keeps polling control and hb.  Requests it does not know get no
 * reply, as the protocol allows.  One thread at a time.
 */
#ifndef KP_SERVE_H
#define KP_SERVE_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "kp_kernel.h"

/* Called on the thread of kp_serve_handle; none may free the serve. */
struct kp_serve_ops {
	/*
	 * Start running code (NUL-terminated, UTF-8).  0: the run goes on
	 * until kp_serve_done; -errno: the run ends at once with an error
	 * reply (a message published first with kp_serve_error is kept).
	 */
	int		(*execute)(void *arg, const char *code, bool silent);
	/* "complete", "incomplete", "invalid" or "unknown". */
	const char	*(*is_complete)(void *arg, const char *code);
	/* interrupt_request came on control (interrupt_mode "message"). */
	void		(*interrupt)(void *arg);
	/* shutdown_request came on control; the reply is already sent. */
	void		(*shutdown)(void *arg, bool restart);
};

struct kp_serve;

/*
 * A server on k (borrowed, must outlive it); info holds the
 * kernel_info_reply's own fields (implementation, language_info,
 * banner...) and is stolen.
 */
struct kp_serve	*kp_serve_new(struct kp_kernel *k, json_t *info,
		    const struct kp_serve_ops *ops, void *arg);
void		 kp_serve_free(struct kp_serve *);	/* NULL ok */

/*
 * Read and answer the requests waiting on c (shell, control, stdin).
 * On shell it stops after starting a run.  0 or -errno.
 */
int		 kp_serve_handle(struct kp_serve *, enum kp_chan_id c);
/* Whether a run is going on. */
bool		 kp_serve_busy(const struct kp_serve *);
/* Publish "starting" (once, at start) or any other status. */
int		 kp_serve_status(struct kp_serve *, const char *state);

/*
 * Output of the current run (ignored when none runs): text (n bytes,
 * bytes that are not UTF-8 become U+FFFD) on stream name; a result
 * (data, a MIME bundle, stolen); an error (traceback, an array of
 * strings, stolen; NULL: []).  After an error the run's reply says
 * "error".
 */
void		 kp_serve_stream(struct kp_serve *, const char *name,
		    const char *text, size_t n);
void		 kp_serve_result(struct kp_serve *, json_t *data);
void		 kp_serve_error(struct kp_serve *, const char *ename,
		    const char *evalue, json_t *traceback);
/* End the current run: execute_reply, then status idle. */
void		 kp_serve_done(struct kp_serve *);

#endif
