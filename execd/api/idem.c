/*
 * idem.c -- the Idempotency-Key store (idem.h).
 *
 * Keys live in a chained hash table and a list in order of arrival (the
 * oldest first, for expiry and the count cap).  An entry is shared by
 * whatever still needs it (the table, its first request until answered,
 * each repeat waiting) and freed by the last; a recorded stream's tape
 * has references of its own.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <openssl/evp.h>

#include "../../util/buf.h"
#include "../core/log.h"
#include "../core/loop.h"
#include "../core/xmalloc.h"
#include "../transport/http.h"
#include "../transport/tape.h"
#include "idem.h"

#define FP_LEN	32
/* Whole answers kept over all keys (a batch's may be large). */
#define WHOLE_TOTAL	(64u << 20)

/* K_LOST: answered, but with more than WHOLE_TOTAL leaves room for. */
enum kind { K_PENDING, K_WHOLE, K_REPLAY, K_RECORD, K_LOST };

struct waiter {
	struct http_req		*req;
	struct entry		*e;
	struct waiter		*next;
};

/* An entry: a key and what its first request gave. */
struct entry {
	char			*key;
	unsigned char		 fp[FP_LEN];
	uint64_t		 t0;
	int			 refs;
	bool			 listed;
	struct entry		*hnext, *prev, *next;
	struct http_req		*first;		/* until it is answered */
	enum kind		 kind;
	unsigned		 status;	/* K_WHOLE */
	char			*type;
	struct buf		 bytes;		/* K_WHOLE */
	idem_replay_fn		*replay;	/* K_REPLAY */
	char			*id;
	struct tape		*tape;		/* K_RECORD */
	struct waiter		*waiters;
};

static struct {
	bool			 on;
	uint64_t		 window_ms;
	size_t			 max_keys, max_record, nkeys;
	struct entry		**tab;
	size_t			 ntab;
	struct entry		*oldest, *newest;
	size_t			 whole;		/* bytes of K_WHOLE answers */
} st;

static void	 answer(struct http_req *, struct entry *);
static void	 wake(struct entry *);

static size_t
slot(const char *key)
{
	uint64_t h = 1469598103934665603ULL;

	for (; *key != '\0'; key++)
		h = (h ^ (unsigned char)*key) * 1099511628211ULL;
	return (size_t)(h & (st.ntab - 1));
}

void
idem_init(unsigned window_s, unsigned max_keys, size_t max_record)
{
	st.on = true;
	st.window_ms = (uint64_t)window_s * 1000;
	st.max_keys = max_keys > 0 ? max_keys : 1;
	st.max_record = max_record;
	for (st.ntab = 64; st.ntab < st.max_keys; st.ntab *= 2)
		;
	st.tab = xcalloc(st.ntab, sizeof(*st.tab));
}

static void
unref(struct entry *e)
{
	if (--e->refs > 0)
		return;
	tape_unref(e->tape);
	st.whole -= e->bytes.len;
	buf_reset(&e->bytes);
	free(e->key);
	free(e->type);
	free(e->id);
	free(e);
}

/* Take e out of the table and the age list: its key is free again. */
static void
unlist(struct entry *e)
{
	struct entry **pp;

	if (!e->listed)
		return;
	for (pp = &st.tab[slot(e->key)]; *pp != e; pp = &(*pp)->hnext)
		;
	*pp = e->hnext;
	if (e->prev != NULL)
		e->prev->next = e->next;
	else
		st.oldest = e->next;
	if (e->next != NULL)
		e->next->prev = e->prev;
	else
		st.newest = e->prev;
	e->listed = false;
	st.nkeys--;
	unref(e);
}

void
idem_shutdown(void)
{
	while (st.oldest != NULL)
		unlist(st.oldest);
	free(st.tab);
	memset(&st, 0, sizeof(st));
}

int
idem_key_parse(const char *v, char *out)
{
	char key[IDEM_KEY_MAX + 1];
	size_t n = 0;
	bool quoted = v[0] == '"';

	if (quoted)
		v++;
	for (; *v != '\0' && !(quoted && *v == '"'); v++) {
		if (quoted && *v == '\\' && (v[1] == '"' || v[1] == '\\'))
			v++;
		if (*v < 0x21 || *v > 0x7e || n == IDEM_KEY_MAX)
			return -EINVAL;
		key[n++] = *v;
	}
	if (n == 0 || (quoted && (*v != '"' || v[1] != '\0')))
		return -EINVAL;
	memcpy(out, key, n);
	out[n] = '\0';
	return 0;
}

/* method, target and body, hashed. */
static void
fingerprint(struct http_req *req, unsigned char *fp)
{
	EVP_MD_CTX *c = EVP_MD_CTX_new();
	const char *m = http_req_method(req), *t = http_req_target(req);
	const json_t *j = http_req_json(req);
	const void *body;
	char *dump = NULL;
	size_t n;
	unsigned len = FP_LEN;

	/* A JSON body is parsed (and its bytes let go) before the route. */
	if (j != NULL &&
	    (dump = json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS)) != NULL) {
		body = dump;
		n = strlen(dump);
	} else {
		body = http_req_body(req, &n);
	}
	if (c == NULL || EVP_DigestInit_ex(c, EVP_sha256(), NULL) != 1 ||
	    EVP_DigestUpdate(c, m, strlen(m) + 1) != 1 ||
	    EVP_DigestUpdate(c, t, strlen(t) + 1) != 1 ||
	    EVP_DigestUpdate(c, body, n) != 1 ||
	    EVP_DigestFinal_ex(c, fp, &len) != 1)
		fatalx("cannot hash a request");
	EVP_MD_CTX_free(c);
	free(dump);
}

/* Forget what is past the window, then the oldest past the count. */
static void
expire(void)
{
	uint64_t now = loop_now_ms();

	while (st.oldest != NULL && (now - st.oldest->t0 >= st.window_ms ||
	    st.nkeys > st.max_keys))
		unlist(st.oldest);
}

static struct entry *
lookup(const char *key)
{
	struct entry *e;

	for (e = st.tab[slot(key)]; e != NULL; e = e->hnext)
		if (strcmp(e->key, key) == 0)
			return e;
	return NULL;
}

/* The entry whose first request is req, still unanswered. */
static struct entry *
first_of(struct http_req *req)
{
	struct entry *e;

	for (e = st.newest; e != NULL; e = e->prev)
		if (e->first == req)
			return e;
	return NULL;
}

/* The first request is answered (status 0: with no whole body). */
static void
on_tap(struct http_req *req, unsigned status, const char *type,
    const void *body, size_t n, void *arg)
{
	struct entry *e = arg;

	e->first = NULL;
	if (e->kind == K_PENDING && status != 0 &&
	    n > WHOLE_TOTAL - st.whole) {
		/* Too large to keep: said so to a repeat, never run again. */
		e->kind = K_LOST;
		e->status = status;
	} else if (e->kind == K_PENDING && status != 0) {
		e->kind = K_WHOLE;
		e->status = status;
		e->type = type != NULL ? xstrdup(type) : NULL;
		buf_init_max(&e->bytes, n > 0 ? n : 1);
		if (n > 0 && buf_add(&e->bytes, body, n) == 0)
			st.whole += n;
	} else if (e->kind == K_PENDING) {
		unlist(e);	/* no outcome: the key is free again */
	}
	wake(e);
	unref(e);
}

bool
idem_front(struct http_req *req)
{
	const char *h = http_req_header(req, "Idempotency-Key");
	char key[IDEM_KEY_MAX + 1];
	unsigned char fp[FP_LEN];
	struct entry *e, **pp;

	if (h == NULL)
		h = http_req_header(req, "X-EXECD-OPERATION-ID");
	if (h == NULL || !st.on)
		return false;
	if (idem_key_parse(h, key) < 0) {
		http_reply_error(req, 400, "INVALID_IDEMPOTENCY_KEY", "invalid "
		    "Idempotency-Key: 1 to %d visible ASCII characters, "
		    "optionally in double quotes", IDEM_KEY_MAX);
		return true;
	}
	expire();
	fingerprint(req, fp);
	if ((e = lookup(key)) != NULL) {
		if (memcmp(e->fp, fp, FP_LEN) != 0) {
			http_reply_error(req, 422, "IDEMPOTENCY_KEY_REUSED",
			    "Idempotency-Key %s was used for another request "
			    "(method, path or body differ)", key);
			return true;
		}
		answer(req, e);
		return true;
	}
	e = xcalloc(1, sizeof(*e));
	e->key = xstrdup(key);
	memcpy(e->fp, fp, FP_LEN);
	e->t0 = loop_now_ms();
	e->refs = 2;		/* the table's, the first request's */
	e->first = req;
	e->listed = true;
	pp = &st.tab[slot(key)];
	e->hnext = *pp;
	*pp = e;
	e->prev = st.newest;
	if (st.newest != NULL)
		st.newest->next = e;
	else
		st.oldest = e;
	st.newest = e;
	st.nkeys++;
	expire();
	http_req_tap(req, on_tap, e);
	return false;
}

void
idem_stream_replay(struct http_req *req, idem_replay_fn *fn, const char *id)
{
	struct entry *e = first_of(req);

	if (e == NULL || e->kind != K_PENDING)
		return;
	e->kind = K_REPLAY;
	e->replay = fn;
	e->id = xstrdup(id);
	wake(e);
}

struct tape *
idem_stream_record(struct http_req *req)
{
	struct entry *e = first_of(req);

	if (e == NULL || e->kind != K_PENDING)
		return NULL;
	e->kind = K_RECORD;
	e->tape = tape_new(st.max_record);
	wake(e);
	return tape_ref(e->tape);
}

static void
wait_cancel(struct http_req *req, void *arg)
{
	struct waiter *w = arg, **pp;
	struct entry *e = w->e;

	for (pp = &e->waiters; *pp != w; pp = &(*pp)->next)
		;
	*pp = w->next;
	free(w);
	unref(e);
}

/* The first outcome of e (or a wait for it) answers req. */
static void
answer(struct http_req *req, struct entry *e)
{
	struct waiter *w;

	switch (e->kind) {
	case K_WHOLE:
		http_reply_text(req, e->status, e->type != NULL ? e->type :
		    "text/plain", e->bytes.p != NULL ? e->bytes.p : "",
		    e->bytes.len, NULL, NULL);
		break;
	case K_LOST:
		http_reply_error(req, 409, "IDEMPOTENCY_ANSWER_NOT_KEPT",
		    "the first request with Idempotency-Key %s was answered "
		    "%u, with more than execd keeps for repeats; it is not run "
		    "again", e->key, e->status);
		break;
	case K_REPLAY:
		e->replay(req, e->id);
		break;
	case K_RECORD:
		tape_play(e->tape, req);
		break;
	case K_PENDING:
		if (e->first == NULL) {	/* ended with no outcome */
			http_reply_error(req, 409, "IDEMPOTENCY_KEY_UNSETTLED",
			    "the first request with Idempotency-Key %s ended "
			    "without an answer; send it again", e->key);
			break;
		}
		w = xcalloc(1, sizeof(*w));
		w->req = req;
		w->e = e;
		e->refs++;
		w->next = e->waiters;
		e->waiters = w;
		http_req_defer(req, wait_cancel, w);
		break;
	}
}

/* e has its outcome (or never will): the repeats waiting get it. */
static void
wake(struct entry *e)
{
	struct waiter *w;

	while ((w = e->waiters) != NULL) {
		e->waiters = w->next;
		answer(w->req, e);
		free(w);
		unref(e);
	}
}
