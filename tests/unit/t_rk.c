/*
 * t_rk.c -- execd-repl-kernel's description (rk_desc) and output scanner
 * (rk_scan), on the java kernelspec of the tree and on small made-up
 * descriptions.  The program's .c files are included: they are not part
 * of execd's objects.
 */
#include <stdlib.h>
#include <string.h>

#include "../../repl/rk_desc.c"
#include "../../repl/rk_scan.c"
#include "../t.h"

/* What a scanner emitted, as one string: T[..] R[..] E[name|value|n] $ */
struct seen {
	char	buf[4096];
};

static void
record(void *arg, const struct rk_ev *ev)
{
	struct seen *s = arg;
	size_t o = strlen(s->buf);

	switch (ev->type) {
	case RK_EV_TEXT:
		snprintf(s->buf + o, sizeof(s->buf) - o, "T[%.*s]",
		    (int)ev->n, ev->p);
		break;
	case RK_EV_RESULT:
		snprintf(s->buf + o, sizeof(s->buf) - o, "R[%.*s]",
		    (int)ev->n, ev->p);
		break;
	case RK_EV_ERROR:
		snprintf(s->buf + o, sizeof(s->buf) - o, "E[%s|%s|%zu]",
		    ev->ename, ev->evalue, json_array_size(ev->traceback));
		break;
	case RK_EV_END:
		snprintf(s->buf + o, sizeof(s->buf) - o, "$%lu", ev->seq);
		break;
	}
}

static struct rk_desc *
parse(const char *text, const char *marker)
{
	json_t *o = json_loads(text, 0, NULL);
	struct rk_desc *d = NULL;
	char err[256] = "";

	T_OK(o != NULL);
	if (rk_desc_parse(o, marker, &d, err, sizeof(err)) < 0)
		fprintf(stderr, "  parse: %s\n", err);
	json_decref(o);
	return d;
}

static struct rk_desc *
java(void)
{
	json_t *spec = json_load_file("repl/kernels/java/kernel.json", 0,
	    NULL);
	json_t *repl = json_object_get(json_object_get(spec, "metadata"),
	    "repl");
	struct rk_desc *d = NULL;
	char err[256] = "";

	T_OK(spec != NULL);
	T_EQ_INT(rk_desc_parse(repl, "@M@", &d, err, sizeof(err)), 0);
	json_decref(spec);
	return d;
}

static void
test_desc_java(void)
{
	struct rk_desc *d = java();

	if (d == NULL)
		return;
	T_EQ_STR(d->argv[0], "jshell");
	T_EQ_STR(d->marker, "@M@$");
	T_EQ_STR(d->result_open, "@M@<");
	T_OK(strstr(d->end, "@M@${seq}") != NULL);
	T_OK(strstr(d->init[2], "@M@<{value}>@M@") != NULL);
	T_EQ_INT(d->nerrors, 2);
	T_EQ_STR(d->errors[0].ename, "EvalException");
	T_EQ_STR(d->intr_write, "\003");
	T_EQ_INT(d->intr_signal, 0);
	T_OK(d->end_stderr);
	rk_desc_free(d);
}

static void
test_desc_refusals(void)
{
	static const char *const bad[] = {
		"[]", "{}", "{\"argv\": [], \"end\": \"x\"}",
		"{\"argv\": [\"sh\"]}",
		"{\"argv\": [\"sh\", 1], \"end\": \"x\"}",
		"{\"argv\": [\"sh\"], \"end\": \"x\", \"marker\": \"\"}",
		"{\"argv\": [\"sh\"], \"end\": \"x\", \"result_open\": \"<\"}",
		"{\"argv\": [\"sh\"], \"end\": \"x\", \"interrupt\": "
		    "{\"signal\": \"NOPE\"}}",
		"{\"argv\": [\"sh\"], \"end\": \"x\", \"errors\": "
		    "[{\"prefix\": \"\", \"ename\": \"E\"}]}",
		"{\"argv\": [\"sh\"], \"end\": \"x\", \"ready_timeout\": 0}",
	};
	struct rk_desc *d;
	char err[256];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		json_t *o = json_loads(bad[i], 0, NULL);

		err[0] = '\0';
		d = NULL;
		T_EQ_INT(rk_desc_parse(o, "M", &d, err, sizeof(err)), -EINVAL);
		T_OK(d == NULL && err[0] != '\0');
		json_decref(o);
	}
	d = parse("{\"argv\": [\"sh\"], \"end\": \"echo {marker}\", "
	    "\"interrupt\": {\"signal\": \"SIGTERM\"}}", "MK");
	T_OK(d != NULL);
	if (d != NULL) {
		T_EQ_STR(d->end, "echo MK");
		T_EQ_STR(d->marker, "MK");
		T_EQ_INT(d->intr_signal, SIGTERM);
		T_EQ_STR(d->intr_ename, "KeyboardInterrupt");
		T_EQ_INT(d->ready_ms, 60000);
	}
	rk_desc_free(d);
}

static void
test_is_complete(void)
{
	struct rk_desc *d = java();

	if (d == NULL)
		return;
	T_EQ_STR(rk_desc_is_complete(d, "int x = 1;"), "complete");
	T_EQ_STR(rk_desc_is_complete(d, "void f() {"), "incomplete");
	T_EQ_STR(rk_desc_is_complete(d, "f(\"(\", '{')"), "complete");
	T_EQ_STR(rk_desc_is_complete(d, "x = 1; // {"), "complete");
	T_EQ_STR(rk_desc_is_complete(d, "/* {"), "incomplete");
	T_EQ_STR(rk_desc_is_complete(d, "f(]"), "invalid");
	T_EQ_STR(rk_desc_is_complete(d, "\"open"), "invalid");
	d->brackets = false;
	T_EQ_STR(rk_desc_is_complete(d, "{"), "unknown");
	rk_desc_free(d);
}

static void
scan(const struct rk_desc *d, bool plain, const char *in, size_t step,
    const char *want)
{
	struct seen s = { "" };
	struct rk_scan *sc = rk_scan_new(d, plain, 64, record, &s);
	size_t n = strlen(in);

	for (size_t i = 0; i < n; i += step)
		rk_scan_feed(sc, in + i, n - i < step ? n - i : step);
	rk_scan_flush(sc);
	rk_scan_free(sc);
	T_EQ_STR(s.buf, want);
}

static void
test_scan_java(void)
{
	struct rk_desc *d = java();

	if (d == NULL)
		return;
	for (size_t step = 1; step <= 7; step += 6) {
		scan(d, false, "hi\n@M@<4>@M@\nab@M@$\n", step,
		    "T[hi\n]R[4]T[ab]$0");
		scan(d, false, "x|  Exception java.lang.E: boom\n"
		    "|        at (#3:1)\n@M@$\n", step,
		    "T[x]E[EvalException|java.lang.E: boom|2]$0");
		scan(d, false, "|  Error:\n|  cannot find symbol\n"
		    "|  foo(1)\nafter\n", step,
		    "E[CompilationException|cannot find symbol|2]T[after\n]");
		/* The run's number after the marker. */
		scan(d, false, "out@M@$12 rest\n@M@$7\n", step,
		    "T[out]$12$7");
		/* A value over lines. */
		scan(d, false, "@M@<a\nb>@M@ tail\n", step,
		    "R[a\nb]T[ tail\n]");
		/* stderr knows no values and no errors. */
		scan(d, true, "@M@<1>@M@\n|  Error:\n@M@$\n", step,
		    "T[@M@<1>@M@\n]T[|  Error:\n]$0");
	}
	/* A line past the cap (64) comes out in pieces. */
	scan(d, false, "0123456789012345678901234567890123456789"
	    "0123456789012345678901234567890123456789\n", 100,
	    "T[0123456789012345678901234567890123456789012345678901234567"
	    "890123]T[4567890123456789\n]");
	rk_desc_free(d);
}

int
main(void)
{
	static const struct t_case cases[] = {
		{ "desc_java", test_desc_java },
		{ "desc_refusals", test_desc_refusals },
		{ "is_complete", test_is_complete },
		{ "scan_java", test_scan_java },
	};

	return T_RUN(cases);
}
