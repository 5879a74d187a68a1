/*
 * t_kp_serve.c -- the kernel side of kernelproto (kp_kernel, kp_serve),
 * driven through the client side (kp_chan) over ipc sockets in a
 * temporary directory, in one thread: each step pumps the kernel's
 * sockets, then reads what the client got.
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <zmq.h>

#include "../../kernelproto/kp_chan.h"
#include "../../kernelproto/kp_serve.h"
#include "../t.h"
#include "../t_tmp.h"

struct fix {
	char		*dir;
	void		*zctx;
	struct kp_conn	 conn;
	struct kp_kernel *k;
	struct kp_serve	*s;
	struct kp_chan	*c;
	/* What the callbacks saw. */
	char		 code[256];
	int		 interrupts, shutdowns, fail;
};

static int
cb_execute(void *arg, const char *code, bool silent)
{
	struct fix *f = arg;

	snprintf(f->code, sizeof(f->code), "%s", code);
	return f->fail ? -EIO : 0;
}

static const char *
cb_is_complete(void *arg, const char *code)
{
	return strchr(code, '{') != NULL ? "incomplete" : "complete";
}

static void
cb_interrupt(void *arg)
{
	((struct fix *)arg)->interrupts++;
}

static void
cb_shutdown(void *arg, bool restart)
{
	((struct fix *)arg)->shutdowns++;
}

static const struct kp_serve_ops ops = {
	cb_execute, cb_is_complete, cb_interrupt, cb_shutdown,
};

static void
fix_open(struct fix *f, const char *key)
{
	char err[256];

	memset(f, 0, sizeof(*f));
	f->dir = t_tmpdir();
	f->zctx = zmq_ctx_new();
	strcpy(f->conn.transport, "ipc");
	snprintf(f->conn.ip, sizeof(f->conn.ip), "%s/k", f->dir);
	for (int i = 0; i < KP_NCHAN; i++)
		f->conn.port[i] = i + 1;
	memcpy(f->conn.key, key, strlen(key));
	f->conn.keylen = strlen(key);
	T_EQ_INT(kp_kernel_open(f->zctx, &f->conn, 1 << 20, &f->k, err,
	    sizeof(err)), 0);
	f->s = kp_serve_new(f->k, json_pack("{s:s, s:{s:s}}",
	    "implementation", "test", "language_info", "name", "java"),
	    &ops, f);
	T_EQ_INT(kp_chan_open(f->zctx, &f->conn, "sess", 1 << 20, &f->c,
	    err, sizeof(err)), 0);
}

static void
fix_close(struct fix *f)
{
	kp_chan_close(f->c);
	kp_serve_free(f->s);
	kp_kernel_close(f->k);
	zmq_ctx_term(f->zctx);
	t_tmpdir_free(f->dir);
}

/* Let the kernel answer what waits (shell only when idle). */
static void
pump(struct fix *f)
{
	for (int i = 0; i < 5; i++) {
		zmq_pollitem_t it[3] = {
			{ kp_kernel_socket(f->k, KP_CONTROL), 0, ZMQ_POLLIN, 0 },
			{ kp_kernel_socket(f->k, KP_HB), 0, ZMQ_POLLIN, 0 },
			{ kp_kernel_socket(f->k, KP_SHELL), 0, ZMQ_POLLIN, 0 },
		};
		zmq_poll(it, kp_serve_busy(f->s) ? 2 : 3, 20);
		kp_serve_handle(f->s, KP_CONTROL);
		kp_kernel_hb(f->k);
		if (!kp_serve_busy(f->s))
			kp_serve_handle(f->s, KP_SHELL);
	}
}

/* The next message on c within 5 s (pumping the kernel), or NULL. */
static struct kp_msg *
next(struct fix *f, enum kp_chan_id c)
{
	struct kp_msg *m;

	for (int i = 0; i < 100; i++) {
		if (kp_chan_recv(f->c, c, &m) == 0)
			return m;
		pump(f);
	}
	return NULL;
}

/* Skip iopub messages until one of type t; its content's key k. */
static struct kp_msg *
iopub_until(struct fix *f, const char *t)
{
	struct kp_msg *m;

	while ((m = next(f, KP_IOPUB)) != NULL) {
		if (strcmp(kp_msg_type(m), t) == 0)
			return m;
		kp_msg_free(m);
	}
	return NULL;
}

/* The client is subscribed once a message it asks for comes back. */
static void
settle(struct fix *f)
{
	struct kp_msg *m;

	for (int i = 0; i < 50; i++) {
		kp_serve_status(f->s, "starting");
		pump(f);
		if ((m = next(f, KP_IOPUB)) != NULL) {
			kp_msg_free(m);
			while (kp_chan_recv(f->c, KP_IOPUB, &m) == 0)
				kp_msg_free(m);
			return;
		}
	}
	T_OK(!"iopub never delivered");
}

static void
test_kernel_info(void)
{
	struct fix f;
	struct kp_msg *m, *r;

	fix_open(&f, "secret");
	m = kp_msg_kernel_info_request("sess");
	T_EQ_INT(kp_chan_send(f.c, KP_SHELL, m), 0);
	T_OK((r = next(&f, KP_SHELL)) != NULL);
	if (r != NULL) {
		T_EQ_STR(kp_msg_type(r), "kernel_info_reply");
		T_EQ_STR(kp_msg_parent_id(r), kp_msg_id(m));
		T_EQ_STR(json_string_value(json_object_get(r->content,
		    "status")), "ok");
		T_EQ_STR(json_string_value(json_object_get(r->content,
		    "protocol_version")), KP_PROTOCOL_VERSION);
		T_EQ_STR(json_string_value(json_object_get(json_object_get(
		    r->content, "language_info"), "name")), "java");
	}
	kp_msg_free(r);
	kp_msg_free(m);
	fix_close(&f);
}

static void
test_execute_ok_and_error(void)
{
	struct fix f;
	struct kp_msg *m, *r, *o;

	fix_open(&f, "k");
	settle(&f);
	m = kp_msg_execute_request("sess", "x + 1", false, false);
	T_EQ_INT(kp_chan_send(f.c, KP_SHELL, m), 0);
	o = iopub_until(&f, "execute_input");
	T_OK(o != NULL && kp_serve_busy(f.s));
	T_EQ_STR(f.code, "x + 1");
	if (o != NULL)
		T_EQ_STR(kp_msg_parent_id(o), kp_msg_id(m));
	kp_msg_free(o);
	kp_serve_stream(f.s, "stdout", "hi\n\xff", 4);
	kp_serve_result(f.s, json_pack("{s:s}", "text/plain", "42"));
	kp_serve_done(f.s);
	T_OK(!kp_serve_busy(f.s));
	o = iopub_until(&f, "stream");
	T_OK(o != NULL);
	if (o != NULL)
		T_EQ_STR(json_string_value(json_object_get(o->content,
		    "text")), "hi\n\xef\xbf\xbd");
	kp_msg_free(o);
	o = iopub_until(&f, "execute_result");
	T_OK(o != NULL);
	if (o != NULL)
		T_EQ_STR(json_string_value(json_object_get(json_object_get(
		    o->content, "data"), "text/plain")), "42");
	kp_msg_free(o);
	o = iopub_until(&f, "status");
	T_OK(o != NULL);
	if (o != NULL)
		T_EQ_STR(json_string_value(json_object_get(o->content,
		    "execution_state")), "idle");
	kp_msg_free(o);
	T_OK((r = next(&f, KP_SHELL)) != NULL);
	if (r != NULL) {
		T_EQ_STR(kp_msg_type(r), "execute_reply");
		T_EQ_STR(json_string_value(json_object_get(r->content,
		    "status")), "ok");
		T_EQ_INT(json_integer_value(json_object_get(r->content,
		    "execution_count")), 1);
	}
	kp_msg_free(r);
	kp_msg_free(m);

	/* A run the callback refuses ends at once, with an error. */
	f.fail = 1;
	m = kp_msg_execute_request("sess", "y", false, false);
	T_EQ_INT(kp_chan_send(f.c, KP_SHELL, m), 0);
	o = iopub_until(&f, "error");
	T_OK(o != NULL);
	if (o != NULL)
		T_EQ_STR(json_string_value(json_object_get(o->content,
		    "ename")), "KernelError");
	kp_msg_free(o);
	T_OK((r = next(&f, KP_SHELL)) != NULL);
	if (r != NULL) {
		T_EQ_STR(json_string_value(json_object_get(r->content,
		    "status")), "error");
		T_EQ_INT(json_integer_value(json_object_get(r->content,
		    "execution_count")), 2);
	}
	kp_msg_free(r);
	kp_msg_free(m);
	fix_close(&f);
}

static void
test_control_and_is_complete(void)
{
	struct fix f;
	struct kp_msg *m, *r;

	fix_open(&f, "k");
	m = kp_msg_new("is_complete_request", "sess", "u",
	    json_pack("{s:s}", "code", "for (;;) {"), NULL);
	T_EQ_INT(kp_chan_send(f.c, KP_SHELL, m), 0);
	T_OK((r = next(&f, KP_SHELL)) != NULL);
	if (r != NULL)
		T_EQ_STR(json_string_value(json_object_get(r->content,
		    "status")), "incomplete");
	kp_msg_free(r);
	kp_msg_free(m);
	m = kp_msg_interrupt_request("sess");
	T_EQ_INT(kp_chan_send(f.c, KP_CONTROL, m), 0);
	T_OK((r = next(&f, KP_CONTROL)) != NULL);
	T_OK(r != NULL && strcmp(kp_msg_type(r), "interrupt_reply") == 0);
	T_EQ_INT(f.interrupts, 1);
	kp_msg_free(r);
	kp_msg_free(m);
	m = kp_msg_shutdown_request("sess", false);
	T_EQ_INT(kp_chan_send(f.c, KP_CONTROL, m), 0);
	T_OK((r = next(&f, KP_CONTROL)) != NULL);
	T_OK(r != NULL && strcmp(kp_msg_type(r), "shutdown_reply") == 0);
	T_EQ_INT(f.shutdowns, 1);
	kp_msg_free(r);
	kp_msg_free(m);
	fix_close(&f);
}

static void
test_heartbeat_and_bad_signature(void)
{
	struct fix f;
	struct kp_msg *m, *r;
	struct kp_conn other;
	struct kp_chan *bad;
	char err[256];
	int got = 0;

	fix_open(&f, "right");
	T_EQ_INT(kp_chan_hb_ping(f.c), 0);
	for (int i = 0; i < 100 && !got; i++) {
		pump(&f);
		got = kp_chan_hb_pong(f.c) == 0;
	}
	T_OK(got);
	/* A request signed with another key gets no answer. */
	other = f.conn;
	memcpy(other.key, "wrong", 5);
	T_EQ_INT(kp_chan_open(f.zctx, &other, "bad", 1 << 20, &bad, err,
	    sizeof(err)), 0);
	m = kp_msg_kernel_info_request("bad");
	T_EQ_INT(kp_chan_send(bad, KP_SHELL, m), 0);
	for (int i = 0; i < 20; i++)
		pump(&f);
	T_EQ_INT(kp_chan_recv(bad, KP_SHELL, &r), -EAGAIN);
	kp_msg_free(m);
	kp_chan_close(bad);
	fix_close(&f);
}

/*
 * A client that reads iopub late still gets every message: the kernel
 * queues them, as many as there are, rather than dropping what passes
 * ZeroMQ's default high-water mark (1000 messages on each side), which
 * lost the end of large outputs when execd fell behind.
 */
static void
test_iopub_keeps_what_a_late_reader_has_not_read(void)
{
	enum { N = 20000 };
	struct fix f;
	struct kp_msg *m;
	char pad[1024];
	int got = 0, expect = 0, idle = 0;

	fix_open(&f, "k");
	settle(&f);
	memset(pad, 'y', sizeof(pad) - 1);
	pad[sizeof(pad) - 1] = '\0';
	for (int i = 0; i < N; i++)
		T_EQ_INT(kp_kernel_publish(f.k, NULL, "stream",
		    json_pack("{s:s, s:s, s:i}", "name", "stdout", "text",
		    pad, "seq", i)), 0);
	while (got < N && idle < 200) {
		if (kp_chan_recv(f.c, KP_IOPUB, &m) < 0) {
			struct timespec ts = { 0, 10 * 1000000 };

			nanosleep(&ts, NULL);
			idle++;
			continue;
		}
		idle = 0;
		if (strcmp(kp_msg_type(m), "stream") == 0) {
			T_EQ_INT(json_integer_value(json_object_get(
			    m->content, "seq")), expect);
			expect++;
			got++;
		}
		kp_msg_free(m);
	}
	T_EQ_INT(got, N);
	fix_close(&f);
}

int
main(void)
{
	static const struct t_case cases[] = {
		{ "kernel_info", test_kernel_info },
		{ "execute_ok_and_error", test_execute_ok_and_error },
		{ "control_and_is_complete", test_control_and_is_complete },
		{ "heartbeat_and_bad_signature",
		    test_heartbeat_and_bad_signature },
		{ "iopub_keeps_what_a_late_reader_has_not_read",
		    test_iopub_keeps_what_a_late_reader_has_not_read },
	};

	return T_RUN(cases);
}
