/*
 * kp_serve.c -- what a kernel of ours says to each request.
 *
 * The protocol's bookkeeping lives here (execution counts, busy/idle
 * around every request, the execute_input echo, the reply's status);
 * what a run does is the caller's (ops->execute).  It holds the request
 * of the current run, so output is published with it as the parent and
 * the reply goes to its sender.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "../util/must.h"
#include "../util/utf8.h"
#include "kp_serve.h"

struct kp_serve {
	struct kp_kernel		*k;
	json_t				*info;
	const struct kp_serve_ops	*ops;
	void				*arg;
	struct kp_msg			*run;		/* its request */
	bool				 run_silent;
	json_t				*run_error;	/* its error, if any */
	long				 count;		/* execution_count */
};

static void	answer(struct kp_serve *, enum kp_chan_id, struct kp_msg *);
static void	start_run(struct kp_serve *, struct kp_msg *);
static json_t	*text_json(const char *, size_t);

/* A server over k. */
struct kp_serve *
kp_serve_new(struct kp_kernel *k, json_t *info,
    const struct kp_serve_ops *ops, void *arg)
{
	struct kp_serve *s = must(calloc(1, sizeof(*s)));

	s->k = k;
	s->info = info != NULL ? info : json_object();
	s->ops = ops;
	s->arg = arg;
	return s;
}

/* Free the server (and the request of a run still going). */
void
kp_serve_free(struct kp_serve *s)
{
	if (s == NULL)
		return;
	kp_msg_free(s->run);
	json_decref(s->run_error);
	json_decref(s->info);
	free(s);
}

bool
kp_serve_busy(const struct kp_serve *s)
{
	return s->run != NULL;
}

/* Publish a status, parented to the current run if any. */
int
kp_serve_status(struct kp_serve *s, const char *state)
{
	return kp_kernel_publish(s->k, s->run, "status",
	    json_pack("{s:s}", "execution_state", state));
}

/* Answer what waits on c; on shell, stop once a run has started. */
int
kp_serve_handle(struct kp_serve *s, enum kp_chan_id c)
{
	struct kp_msg *m;
	int rc;

	while (!(c == KP_SHELL && s->run != NULL)) {
		rc = kp_kernel_recv(s->k, c, &m);
		if (rc == -EBADMSG)
			continue;
		if (rc < 0)
			return rc == -EAGAIN ? 0 : rc;
		answer(s, c, m);	/* takes m */
	}
	return 0;
}

/* Publish a status parented to request m (busy before, idle after). */
static void
busy_idle(struct kp_serve *s, const struct kp_msg *m, const char *state)
{
	kp_kernel_publish(s->k, m, "status",
	    json_pack("{s:s}", "execution_state", state));
}

/* Answer one request m (freed here, or kept as the current run). */
static void
answer(struct kp_serve *s, enum kp_chan_id c, struct kp_msg *m)
{
	const char *t = kp_msg_type(m), *v;
	json_t *r, *code;
	bool restart;

	if (strcmp(t, "execute_request") == 0 && c == KP_SHELL) {
		start_run(s, m);
		return;
	}
	busy_idle(s, m, "busy");
	if (strcmp(t, "kernel_info_request") == 0) {
		r = json_deep_copy(s->info);
		json_object_set_new(r, "status", json_string("ok"));
		json_object_set_new(r, "protocol_version",
		    json_string(KP_PROTOCOL_VERSION));
		kp_kernel_reply(s->k, c, m, "kernel_info_reply", r);
	} else if (strcmp(t, "is_complete_request") == 0) {
		code = json_object_get(m->content, "code");
		v = json_is_string(code) && s->ops->is_complete != NULL ?
		    s->ops->is_complete(s->arg, json_string_value(code)) :
		    "unknown";
		r = json_pack("{s:s}", "status", v);
		if (strcmp(v, "incomplete") == 0)
			json_object_set_new(r, "indent", json_string(""));
		kp_kernel_reply(s->k, c, m, "is_complete_reply", r);
	} else if (strcmp(t, "interrupt_request") == 0 && c == KP_CONTROL) {
		if (s->ops->interrupt != NULL)
			s->ops->interrupt(s->arg);
		kp_kernel_reply(s->k, c, m, "interrupt_reply",
		    json_pack("{s:s}", "status", "ok"));
	} else if (strcmp(t, "shutdown_request") == 0) {
		restart = json_is_true(json_object_get(m->content,
		    "restart"));
		kp_kernel_reply(s->k, c, m, "shutdown_reply",
		    json_pack("{s:s, s:b}", "status", "ok", "restart",
		    restart));
		busy_idle(s, m, "idle");
		if (s->ops->shutdown != NULL)
			s->ops->shutdown(s->arg, restart);
		kp_msg_free(m);
		return;
	}
	busy_idle(s, m, "idle");
	kp_msg_free(m);
}

/* An execute_request: busy, execute_input, then the caller's run. */
static void
start_run(struct kp_serve *s, struct kp_msg *m)
{
	json_t *code = json_object_get(m->content, "code");
	int rc;

	s->run = m;
	s->run_silent = json_is_true(json_object_get(m->content, "silent"));
	json_decref(s->run_error);
	s->run_error = NULL;
	if (!s->run_silent)
		s->count++;
	kp_serve_status(s, "busy");
	if (!json_is_string(code)) {
		kp_serve_error(s, "ValueError", "code is not a string", NULL);
		kp_serve_done(s);
		return;
	}
	kp_kernel_publish(s->k, m, "execute_input", json_pack("{s:O, s:I}",
	    "code", code, "execution_count", (json_int_t)s->count));
	rc = s->ops->execute(s->arg, json_string_value(code), s->run_silent);
	if (rc < 0) {
		if (s->run_error == NULL)
			kp_serve_error(s, "KernelError", strerror(-rc), NULL);
		kp_serve_done(s);
	}
}

/* n bytes of text as a JSON string, U+FFFD for what is not UTF-8. */
static json_t *
text_json(const char *p, size_t n)
{
	const unsigned char *u = (const unsigned char *)p;
	char *t = must(malloc(3 * n + 1));
	size_t i = 0, o = 0, k;
	json_t *j;

	while (i < n) {
		if (u[i] != 0 && (k = utf8_len(u + i, n - i)) > 0) {
			memcpy(t + o, p + i, k);
			o += k;
			i += k;
		} else {
			memcpy(t + o, "\xef\xbf\xbd", 3);
			o += 3;
			i++;
		}
	}
	j = must(json_stringn(t, o));
	free(t);
	return j;
}

/* Output text of the run on stream name. */
void
kp_serve_stream(struct kp_serve *s, const char *name, const char *text,
    size_t n)
{
	if (s->run == NULL || n == 0)
		return;
	kp_kernel_publish(s->k, s->run, "stream", json_pack("{s:s, s:o}",
	    "name", name, "text", text_json(text, n)));
}

/* The run's result: an execute_result with data (stolen). */
void
kp_serve_result(struct kp_serve *s, json_t *data)
{
	if (s->run == NULL || s->run_silent) {
		json_decref(data);
		return;
	}
	kp_kernel_publish(s->k, s->run, "execute_result", json_pack(
	    "{s:o, s:{}, s:I}", "data", data, "metadata", "execution_count",
	    (json_int_t)s->count));
}

/* The run's error: published, and kept for the reply. */
void
kp_serve_error(struct kp_serve *s, const char *ename, const char *evalue,
    json_t *traceback)
{
	json_t *e;

	if (s->run == NULL) {
		json_decref(traceback);
		return;
	}
	e = json_pack("{s:o, s:o, s:o}", "ename",
	    text_json(ename, strlen(ename)), "evalue",
	    text_json(evalue, strlen(evalue)), "traceback",
	    traceback != NULL ? traceback : json_array());
	kp_kernel_publish(s->k, s->run, "error", json_incref(e));
	json_decref(s->run_error);
	s->run_error = e;
}

/* End the run: its reply, then idle. */
void
kp_serve_done(struct kp_serve *s)
{
	json_t *r;

	if (s->run == NULL)
		return;
	if (s->run_error != NULL) {
		r = json_deep_copy(s->run_error);
		json_object_set_new(r, "status", json_string("error"));
	} else {
		r = json_pack("{s:s, s:{}, s:[]}", "status", "ok",
		    "user_expressions", "payload");
	}
	json_object_set_new(r, "execution_count",
	    json_integer((json_int_t)s->count));
	kp_kernel_reply(s->k, KP_SHELL, s->run, "execute_reply", r);
	kp_serve_status(s, "idle");
	kp_msg_free(s->run);
	s->run = NULL;
	json_decref(s->run_error);
	s->run_error = NULL;
}
