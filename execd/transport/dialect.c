/*
 * dialect.c -- the rows of dialect.h: the token forms each front end
 * accepts, and the error bodies each writes.
 *
 * This file decides nothing about routing and sends nothing: http.c picks
 * the dialect of the route a request names and hands this file the
 * request's credentials and errors.  Keys are written in a fixed order
 * with sse_fmt_string, the one JSON string encoder of execd, so the
 * OpenSandbox body is byte for byte what execd has always sent.  The
 * token is never seen here, only its SHA-256 digest; every candidate a
 * request carries is hashed and its digest compared in constant time.
 */
#include <errno.h>
#include <string.h>
#include <strings.h>

#include <microhttpd.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "../../sse/sse_fmt.h"
#include "cookie.h"
#include "dialect.h"

static dialect_error_fn	 error_opensandbox;
static dialect_error_fn	 error_jupyter;
static dialect_error_fn	 error_jsonrpc;
static bool		 digest_eq(const char *, size_t,
			    const unsigned char *);
static bool		 scheme_ok(unsigned, const char *);
static bool		 cookie_ok(const struct dialect_creds *,
			    const unsigned char *);
static const char	*phrase(unsigned);

const struct dialect dialect_opensandbox = {
	.name = "opensandbox",
	.tokens = DIALECT_T_HEADER,
	.type = "application/json; charset=utf-8",
	.error = error_opensandbox,
	.deny_status = 401,
	.deny_body = "{\"error\":\"Unauthorized: invalid or missing header "
	    "X-EXECD-ACCESS-TOKEN\"}",
	/* upstream's gate: an "error" key, not code and message */
	.hold_body = "{\"error\":\"" DIALECT_HOLD_MSG "\"}",
};

const struct dialect dialect_jupyter = {
	.name = "jupyter",
	.tokens = DIALECT_T_TOKEN | DIALECT_T_BEARER | DIALECT_T_QUERY,
	.type = "application/json",
	.error = error_jupyter,
	.deny_status = 403,
	.deny_msg = "",		/* the phrase: "Forbidden" */
};

const struct dialect dialect_jsonrpc = {
	.name = "jsonrpc",
	.tokens = DIALECT_T_BEARER,
	.type = "application/json",
	.error = error_jsonrpc,
	.deny_status = 401,
	.deny_msg = "Unauthorized: invalid or missing bearer token",
	.deny_hname = "WWW-Authenticate",
	.deny_hval = "Bearer",
};

/*
 * MCP's /mcp: JSON-RPC's, and execd's own header too, so that a client
 * configured for either API reaches it with the same token.
 */
const struct dialect dialect_mcp = {
	.name = "mcp",
	.tokens = DIALECT_T_BEARER | DIALECT_T_HEADER,
	.type = "application/json",
	.error = error_jsonrpc,
	.deny_status = 401,
	.deny_msg = "Unauthorized: invalid or missing token (Authorization: "
	    "Bearer, or X-EXECD-ACCESS-TOKEN)",
	.deny_hname = "WWW-Authenticate",
	.deny_hval = "Bearer",
};

/*
 * The proxy's: OpenSandbox's words, and the forms a browser can use.  The
 * query form is also what the route trades for the cookie (route_proxy.c).
 */
const struct dialect dialect_proxy = {
	.name = "proxy",
	.tokens = DIALECT_T_HEADER | DIALECT_T_QUERY | DIALECT_T_COOKIE,
	.type = "application/json; charset=utf-8",
	.error = error_opensandbox,
	.deny_status = 401,
	.deny_body = "{\"error\":\"Unauthorized: invalid or missing header "
	    "X-EXECD-ACCESS-TOKEN\"}",
	.hold_body = "{\"error\":\"" DIALECT_HOLD_MSG "\"}",
};

/* SHA-256 of the configured token into md (DIALECT_MD_LEN bytes). */
int
dialect_token_hash(const char *token, unsigned char *md)
{
	unsigned int mdlen;

	if (EVP_Digest(token, strlen(token), md, &mdlen, EVP_sha256(),
	    NULL) != 1 || mdlen != DIALECT_MD_LEN)
		return -EINVAL;
	return 0;
}

/* Whether the n bytes at s hash to md; empty never does. */
static bool
digest_eq(const char *s, size_t n, const unsigned char *md)
{
	unsigned char got[EVP_MAX_MD_SIZE];
	unsigned int len;

	if (n == 0 || EVP_Digest(s, n, got, &len, EVP_sha256(), NULL) != 1 ||
	    len != DIALECT_MD_LEN)
		return false;
	return CRYPTO_memcmp(got, md, DIALECT_MD_LEN) == 0;
}

/*
 * Whether an Authorization value's scheme is one of those in forms.
 * RFC 7235: the scheme is case-insensitive and ends at a space.
 */
static bool
scheme_ok(unsigned forms, const char *v)
{
	size_t n = strcspn(v, " \t");

	if ((forms & DIALECT_T_TOKEN) && n == 5 &&
	    strncasecmp(v, "token", 5) == 0)
		return true;
	return (forms & DIALECT_T_BEARER) && n == 6 &&
	    strncasecmp(v, "bearer", 6) == 0;
}

/* Any accepted form carries the token; see dialect.h. */
bool
dialect_token_ok(const struct dialect *d, const struct dialect_creds *c,
    const unsigned char *md)
{
	const char *v;
	size_t n;
	bool ok = false;

	if ((d->tokens & DIALECT_T_HEADER) && c->header != NULL)
		ok |= digest_eq(c->header, strlen(c->header), md);
	if ((d->tokens & DIALECT_T_QUERY) && c->query != NULL)
		ok |= digest_eq(c->query, strlen(c->query), md);
	if ((v = c->authorization) != NULL && scheme_ok(d->tokens, v)) {
		/* scheme 1*SP token68, with surrounding blanks forgiven */
		v += strcspn(v, " \t");
		v += strspn(v, " \t");
		n = strlen(v);
		while (n > 0 && (v[n - 1] == ' ' || v[n - 1] == '\t'))
			n--;
		ok |= digest_eq(v, n, md);
	}
	if ((d->tokens & DIALECT_T_COOKIE) && c->cookies != NULL &&
	    c->scope != NULL)
		ok |= cookie_ok(c, md);
	return ok;
}

/* The scope of a cookie for path; see dialect.h. */
int
dialect_cookie_scope(const char *path, char *out, size_t len)
{
	const char *p = path;
	size_t n;

	for (int seg = 0; seg < 2; seg++) {
		if (*p != '/')
			return -EINVAL;
		n = strcspn(p + 1, "/");
		if (n == 0)
			return -EINVAL;
		p += 1 + n;
	}
	n = (size_t)(p - path);
	if (n + 2 > len)
		return -ENAMETOOLONG;
	memcpy(out, path, n);
	out[n] = '/';
	out[n + 1] = '\0';
	return 0;
}

/* The cookie value for scope; see dialect.h. */
int
dialect_cookie_value(const unsigned char *md, const char *scope,
    char out[DIALECT_COOKIE_LEN + 1])
{
	static const char pre[] = "execd proxy cookie ";
	unsigned char msg[512], mac[EVP_MAX_MD_SIZE];
	unsigned int mlen;
	size_t n = strlen(scope);

	if (n > sizeof(msg) - sizeof(pre))
		return -EINVAL;
	memcpy(msg, pre, sizeof(pre) - 1);
	memcpy(msg + sizeof(pre) - 1, scope, n);
	if (HMAC(EVP_sha256(), md, DIALECT_MD_LEN, msg, sizeof(pre) - 1 + n,
	    mac, &mlen) == NULL || mlen * 2 != DIALECT_COOKIE_LEN)
		return -EINVAL;
	for (unsigned i = 0; i < mlen; i++) {
		out[2 * i] = "0123456789abcdef"[mac[i] >> 4];
		out[2 * i + 1] = "0123456789abcdef"[mac[i] & 15];
	}
	out[DIALECT_COOKIE_LEN] = '\0';
	return 0;
}

/*
 * Whether a DIALECT_COOKIE pair of the request holds the MAC for its
 * scope.  Every such pair (a browser may hold one per path) is compared
 * whole and in constant time; at most a few, so that a header of many
 * costs no more than those.
 */
static bool
cookie_ok(const struct dialect_creds *c, const unsigned char *md)
{
	char want[DIALECT_COOKIE_LEN + 1];
	const size_t nlen = strlen(DIALECT_COOKIE);
	struct cookie_pair cp;
	const char *at;
	bool ok = false;
	int tries = 0;

	if (dialect_cookie_value(md, c->scope, want) < 0)
		return false;
	for (size_t i = 0; c->cookies[i] != NULL && tries < 8; i++)
		for (at = c->cookies[i]; tries < 8 && cookie_next(&at, &cp); )
			if (cp.nlen == nlen &&
			    memcmp(cp.name, DIALECT_COOKIE, nlen) == 0) {
				tries++;
				ok |= cp.vlen == DIALECT_COOKIE_LEN &&
				    CRYPTO_memcmp(cp.value, want,
				    DIALECT_COOKIE_LEN) == 0;
			}
	explicit_bzero(want, sizeof(want));
	return ok;
}

/* The reason phrase of status, or NULL for one HTTP does not name. */
static const char *
phrase(unsigned status)
{
	const char *p = MHD_get_reason_phrase_for(status);

	return p == NULL || *p == '\0' || strcmp(p, "Unknown") == 0 ?
	    NULL : p;
}

/* {"code":...,"message":...}: OpenSandbox's, and execd's since day one. */
static void
error_opensandbox(struct buf *b, unsigned status, const char *code,
    const char *msg)
{
	buf_adds(b, "{\"code\":");
	sse_fmt_string(b, code, strlen(code));
	buf_adds(b, ",\"message\":");
	sse_fmt_string(b, msg, strlen(msg));
	buf_adds(b, "}");
}

/*
 * {"message":...,"reason":null}: what jupyter_server's APIHandler writes
 * for an HTTPError raised without a reason, which is nearly all of them;
 * with no message of ours, the message is the reason phrase, as there.
 */
static void
error_jupyter(struct buf *b, unsigned status, const char *code,
    const char *msg)
{
	const char *p = phrase(status);

	if (*msg == '\0')
		msg = p != NULL ? p : "Unknown HTTP Error";
	buf_adds(b, "{\"message\":");
	sse_fmt_string(b, msg, strlen(msg));
	buf_adds(b, ",\"reason\":null}");
}

/*
 * A JSON-RPC 2.0 response with id null (the request's id is not known
 * to the HTTP layer, or there was none), the HTTP status and execd's
 * code kept in data.
 */
static void
error_jsonrpc(struct buf *b, unsigned status, const char *code,
    const char *msg)
{
	const char *p;

	if (*msg == '\0' && (p = phrase(status)) != NULL)
		msg = p;
	buf_addf(b, "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":%d,"
	    "\"message\":", dialect_jsonrpc_code(status));
	sse_fmt_string(b, msg, strlen(msg));
	buf_addf(b, ",\"data\":{\"status\":%u,\"code\":", status);
	sse_fmt_string(b, code, strlen(code));
	buf_adds(b, "}}}");
}

/* The JSON-RPC code of an HTTP status; see dialect.h. */
int
dialect_jsonrpc_code(unsigned status)
{
	if (status == 400)
		return -32600;
	if (status > 400 && status < 500)
		return -(32000 + (int)(status - 400));
	if (status > 500 && status < 550)
		return -(32050 + (int)(status - 500));
	return -32603;
}

/* An error body in d's shape. */
void
dialect_error(const struct dialect *d, struct buf *out, unsigned status,
    const char *code, const char *msg)
{
	d->error(out, status, code, msg != NULL ? msg : "");
}

/* d's answer to a request without the token. */
unsigned
dialect_deny(const struct dialect *d, struct buf *out)
{
	if (d->deny_body != NULL)
		buf_adds(out, d->deny_body);
	else
		d->error(out, d->deny_status, DIALECT_E_DENY, d->deny_msg);
	return d->deny_status;
}

/* d's answer to a request held until execd is initialised. */
void
dialect_hold(const struct dialect *d, struct buf *out)
{
	if (d->hold_body != NULL)
		buf_adds(out, d->hold_body);
	else
		d->error(out, 503, "UNAVAILABLE", DIALECT_HOLD_MSG);
}
