/*
 * fuzz_rk.c -- fuzz target for execd-repl-kernel's two parsers: the REPL
 * description (rk_desc_parse, rk_desc_is_complete) and the scanner that
 * cuts a REPL's output into events (rk_scan).
 *
 * The input is a description's JSON text, a NUL, then REPL output (no
 * NUL: the whole input is output under a fixed description).  A refused
 * description must say why; an accepted one must hold what rk_desc.h
 * promises.  The output is fed twice, in pieces of a size the input
 * picks and whole, to a scanner and to a plain one: each event must be
 * within the cap, an error's message and traceback valid UTF-8, and both
 * feedings must give the same events.
 */
#include <errno.h>
#include <string.h>

#include "../../repl/rk_desc.c"
#include "../../repl/rk_scan.c"
#include "fz.h"

#define CAP	64

static const char fixed[] = "{\"argv\": [\"r\"], \"end\": \"e\", "
    "\"marker\": \"{marker}$\", \"result_open\": \"{marker}<\", "
    "\"result_close\": \">{marker}\", \"brackets\": true, \"errors\": "
    "[{\"prefix\": \"|  Exception \", \"ename\": \"E\", \"continue\": "
    "\"|  \"}, {\"prefix\": \"Error:\", \"ename\": \"C\"}]}";

struct log {
	char	h[64];		/* a running digest of the events */
	size_t	n;
};

/* Mix bytes into the log's digest (order-sensitive). */
static void
mix(struct log *l, const void *p, size_t n)
{
	const unsigned char *u = p;

	for (size_t i = 0; i < n; i++)
		l->h[(l->n + i) % sizeof(l->h)] ^= (char)(u[i] + i * 31);
	l->n += n + 1;
}

static void
on_ev(void *arg, const struct rk_ev *ev)
{
	struct log *l = arg;
	size_t i;
	json_t *v;

	mix(l, &ev->type, sizeof(ev->type));
	switch (ev->type) {
	case RK_EV_TEXT:
		CHECK(ev->n > 0 && ev->n <= CAP);
		/* Pieces may differ in where a cut line splits: not mixed. */
		break;
	case RK_EV_RESULT:
		CHECK(ev->n <= CAP);
		mix(l, ev->p, ev->n);
		break;
	case RK_EV_ERROR:
		CHECK(ev->ename != NULL && ev->evalue != NULL);
		CHECK(fz_utf8(ev->evalue, strlen(ev->evalue)));
		CHECK(json_is_array(ev->traceback));
		json_array_foreach(ev->traceback, i, v)
			CHECK(json_is_string(v) && fz_utf8(json_string_value(
			    v), json_string_length(v)));
		mix(l, ev->evalue, strlen(ev->evalue));
		break;
	case RK_EV_END:
		CHECK(ev->p == NULL);
		break;
	}
}

/* Feed p in pieces of step bytes (0: whole); the events' digest. */
static struct log
feed(const struct rk_desc *d, bool plain, const char *p, size_t n,
    size_t step)
{
	struct log l;
	struct rk_scan *s;

	memset(&l, 0, sizeof(l));
	s = rk_scan_new(d, plain, CAP, on_ev, &l);
	if (step == 0)
		step = n > 0 ? n : 1;
	for (size_t i = 0; i < n; i += step)
		rk_scan_feed(s, p + i, n - i < step ? n - i : step);
	rk_scan_flush(s);
	rk_scan_free(s);
	return l;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *text = (const char *)data, *nul, *st;
	const char *out = text;
	size_t outn = size, jn = sizeof(fixed) - 1;
	struct rk_desc *d = NULL;
	char err[256], *code;
	struct log a, b;
	json_t *o;
	int rc;

	if ((nul = memchr(data, '\0', size)) != NULL) {
		jn = (size_t)(nul - text);
		out = nul + 1;
		outn = size - jn - 1;
	} else {
		text = fixed;
	}
	err[0] = '\0';
	o = json_loadb(text, jn, 0, NULL);
	rc = rk_desc_parse(o, "@M@", &d, err, sizeof(err));
	json_decref(o);
	if (rc < 0) {
		CHECK(rc == -EINVAL && d == NULL && err[0] != '\0');
		o = json_loads(fixed, 0, NULL);
		CHECK(rk_desc_parse(o, "@M@", &d, err, sizeof(err)) == 0);
		json_decref(o);
	}
	CHECK(d->argv[0] != NULL && d->marker[0] != '\0' && d->end != NULL);
	CHECK(strstr(d->marker, "{marker}") == NULL);
	CHECK((d->result_open[0] == '\0') == (d->result_close[0] == '\0'));
	CHECK(d->ready_ms > 0);
	code = strndup(out, outn);
	CHECK(code != NULL);
	st = rk_desc_is_complete(d, code);
	CHECK(strcmp(st, "complete") == 0 || strcmp(st, "incomplete") == 0 ||
	    strcmp(st, "invalid") == 0 || strcmp(st, "unknown") == 0);
	free(code);
	for (int plain = 0; plain < 2; plain++) {
		a = feed(d, plain, out, outn, 0);
		b = feed(d, plain, out, outn, 1 + (size > 0 ? data[0] % 7 : 0));
		/* Same events, wherever the reads were cut. */
		CHECK(memcmp(a.h, b.h, sizeof(a.h)) == 0 && a.n == b.n);
	}
	rk_desc_free(d);
	return 0;
}
