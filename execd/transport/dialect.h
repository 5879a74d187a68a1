/*
 * dialect.h -- how a front end's routes authenticate and word their
 * errors: which forms of the access token they accept, and the shape of
 * an error body (OpenSandbox, Jupyter Server, JSON-RPC for MCP).
 *
 * A dialect is one const table row; a route (http.h) names the row of
 * its front end, and http.c answers everything it says itself (401, 404,
 * 405, 413, 503, the body-field check) and every http_reply_error() in
 * that row's shape.  The functions are pure: any thread.
 */
#ifndef EXECD_DIALECT_H
#define EXECD_DIALECT_H

#include <stdbool.h>
#include <stddef.h>

#include "../../util/buf.h"

/* The forms of the access token a dialect accepts (flags). */
#define DIALECT_T_HEADER	0x01	/* X-EXECD-ACCESS-TOKEN: T */
#define DIALECT_T_TOKEN		0x02	/* Authorization: token T */
#define DIALECT_T_BEARER	0x04	/* Authorization: Bearer T */
#define DIALECT_T_QUERY		0x08	/* ?token=T */
#define DIALECT_T_COOKIE	0x10	/* Cookie: DIALECT_COOKIE=MAC (below) */

#define DIALECT_MD_LEN		32	/* a token's SHA-256 digest */
#define DIALECT_COOKIE		"execd_proxy_token"
#define DIALECT_COOKIE_LEN	64	/* its value: hex of a SHA-256 HMAC */
#define DIALECT_E_DENY		"UNAUTHORIZED"	/* the code of a denial */

/*
 * Append an error body to out: status, an execd error code (http.h's
 * HTTP_E_*), a message in UTF-8 ("" for none).
 */
typedef void dialect_error_fn(struct buf *out, unsigned status,
    const char *code, const char *msg);

struct dialect {
	const char		*name;		/* for logs */
	unsigned		 tokens;	/* DIALECT_T_* accepted */
	const char		*type;		/* Content-Type of its errors */
	dialect_error_fn	*error;
	unsigned		 deny_status;	/* a missing or wrong token */
	const char		*deny_body;	/* its fixed body, or NULL: */
	const char		*deny_msg;	/* ... error() with this */
	const char		*deny_hname;	/* a header with it, or NULL */
	const char		*deny_hval;
	const char		*hold_body;	/* 503 while held, or NULL:
						   error() with
						   DIALECT_HOLD_MSG */
};

/* Why a request is held until execd is initialised (upstream's words). */
#define DIALECT_HOLD_MSG	"execd is not initialized yet: POST " \
	"/internal/init must be called first"


/*
 * OpenSandbox's (the default: a route that names none speaks it): the
 * X-EXECD-ACCESS-TOKEN header; {"code","message"}; 401 with upstream's
 * fixed {"error":"Unauthorized: ..."}.
 */
extern const struct dialect dialect_opensandbox;
/*
 * Jupyter Server's: Authorization "token T" or "Bearer T" (the scheme in
 * any case), or ?token=T; {"message","reason":null}; 403 "Forbidden" as
 * its API handlers answer a request without a valid token.
 */
extern const struct dialect dialect_jupyter;
/*
 * MCP's (JSON-RPC over HTTP): Authorization "Bearer T"; a JSON-RPC error
 * object with id null and the code of dialect_jsonrpc_code(); 401 with
 * WWW-Authenticate: Bearer.
 */
extern const struct dialect dialect_jsonrpc;
/*
 * The MCP front end's (/mcp): dialect_jsonrpc's, with the
 * X-EXECD-ACCESS-TOKEN header accepted as well as Bearer.
 */
extern const struct dialect dialect_mcp;

/*
 * The proxy's (/proxy/{port}/...): OpenSandbox's, and for a browser,
 * which cannot send a header, ?token=T (which the route trades for a
 * cookie) and that cookie.  The cookie holds no token, but
 * HMAC-SHA256(key: the token's digest, message: "execd proxy cookie "
 * and the scope, the path's first two segments "/proxy/6080/"): it
 * opens that port's routes only, and only while the token is the same.
 */
extern const struct dialect dialect_proxy;

/* The credentials a request carries; NULL where it carries none. */
struct dialect_creds {
	const char	*header;	/* X-EXECD-ACCESS-TOKEN */
	const char	*authorization;	/* the Authorization header */
	const char	*query;		/* the first ?token= value */
	const char *const *cookies;	/* every Cookie header, NULL-ended */
	const char	*scope;		/* the cookie's scope (path prefix) */
};

/* The digest kept of the configured token: 0, or -EINVAL. */
int	 dialect_token_hash(const char *token, unsigned char *md);
/*
 * Whether one of the forms d accepts carries the token whose digest is
 * md.  Each candidate is hashed and compared with CRYPTO_memcmp, so the
 * time taken says nothing of how much of the token was right.  An empty
 * token, or an Authorization scheme d does not accept, never matches.
 */
bool	 dialect_token_ok(const struct dialect *d,
	    const struct dialect_creds *c, const unsigned char *md);
/*
 * The scope of a cookie for path: its first two segments with a '/'
 * after them ("/proxy/6080/x" and "/proxy/6080" give "/proxy/6080/")
 * into out; -ENAMETOOLONG when it does not fit, -EINVAL when path has
 * fewer segments.
 */
int	 dialect_cookie_scope(const char *path, char *out, size_t len);
/*
 * The cookie value for scope under the token whose digest is md:
 * DIALECT_COOKIE_LEN hex digits and a NUL into out.  0, or -EINVAL.
 */
int	 dialect_cookie_value(const unsigned char *md, const char *scope,
	    char out[DIALECT_COOKIE_LEN + 1]);
/* Append d's error body for (status, code, msg) to out. */
void	 dialect_error(const struct dialect *d, struct buf *out,
	    unsigned status, const char *code, const char *msg);
/* Append d's answer to a missing or wrong token; returns its status. */
unsigned dialect_deny(const struct dialect *d, struct buf *out);
/*
 * Append d's 503 body for a request held until execd is initialised
 * (http_hold): OpenSandbox's is upstream's fixed {"error":"..."}.
 */
void	 dialect_hold(const struct dialect *d, struct buf *out);
/*
 * The JSON-RPC error code of an HTTP status: 400 -32600 (invalid
 * request), 500 -32603 (internal error), another 4xx -(32000 + status -
 * 400) (401 -32001, 403 -32003, 404 -32004, 405 -32005, 413 -32013), a
 * 5xx below 550 -(32050 + status - 500) (503 -32053, 504 -32054): all in
 * the range JSON-RPC 2.0 leaves to servers.  Anything else -32603.
 */
int	 dialect_jsonrpc_code(unsigned status);

#endif
