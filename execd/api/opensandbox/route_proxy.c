/*
 * route_proxy.c -- ANY /proxy/{port}/{path}: the reverse proxy to a
 * server on 127.0.0.1:{port} inside the sandbox (proxy.c does the work).
 *
 * The path after the port, with the query string exactly as the client
 * sent it, is the backend's request-target: /proxy/8080 and
 * /proxy/8080/ both name "/".  The port must be 1 to 65535.  The route
 * takes its body as a stream, so no body cap of JSON routes applies;
 * --max-upload-size, the cap on streamed bodies, does.
 *
 * A browser cannot send the token's header, so with a token configured
 * the route takes ?token=T too (dialect_proxy): a GET or HEAD that is no
 * upgrade is answered 303 to the same URL without it, with a cookie that
 * opens this port's routes from then on (HttpOnly, SameSite=Strict,
 * Path=/proxy/{port}/, for the browser's session; its value is an HMAC,
 * see dialect.h).  Another request carrying the right ?token= is
 * forwarded without it.  A ?token= that is not execd's reaches the
 * backend only on a request that the header or the cookie let in.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../config/conf.h"
#include "../../core/xmalloc.h"
#include "../../../util/buf.h"
#include "../../../util/hex.h"
#include "../../transport/http.h"
#include "../../transport/proxy.h"
#include "../execd.h"
#include "route.h"

#define PREFIX	"/proxy/"

/* Whether the n bytes at k, %-decoded, are "token" (MHD decodes keys). */
static bool
token_key(const char *k, size_t n)
{
	const char *want = "token";
	char ch;

	for (size_t i = 0; i < n; i++) {
		ch = k[i];
		if (ch == '%' && i + 2 < n && hex_digit(k[i + 1]) >= 0 &&
		    hex_digit(k[i + 2]) >= 0) {
			ch = (char)(hex_digit(k[i + 1]) << 4 |
			    hex_digit(k[i + 2]));
			i += 2;
		}
		if (*want == '\0' || ch != *want++)
			return false;
	}
	return *want == '\0';
}

/* The request-target t without its token= pairs (a '?' only if any left). */
static char *
strip_token(const char *t)
{
	const char *q = strchr(t, '?'), *p, *amp, *eq;
	struct buf b;
	bool first = true;
	size_t klen;

	buf_init(&b);
	buf_add(&b, t, q != NULL ? (size_t)(q - t) : strlen(t));
	for (p = q != NULL ? q + 1 : NULL; p != NULL && *p != '\0'; ) {
		amp = p + strcspn(p, "&");
		eq = memchr(p, '=', (size_t)(amp - p));
		klen = eq != NULL ? (size_t)(eq - p) : (size_t)(amp - p);
		if (!token_key(p, klen) && amp > p) {
			buf_adds(&b, first ? "?" : "&");
			buf_add(&b, p, (size_t)(amp - p));
			first = false;
		}
		p = *amp == '&' ? amp + 1 : amp;
	}
	return b.p != NULL ? b.p : xstrdup("/");
}

/* ?token= right on a page load: 303 to the URL without it, and a cookie. */
static void
trade_token(struct http_req *req, const char *location)
{
	char scope[64], val[DIALECT_COOKIE_LEN + 1], *cookie;
	struct http_resp *hr;

	if (dialect_cookie_scope(http_req_path(req), scope,
	    sizeof(scope)) < 0 || http_scope_cookie(req, scope, val) < 0) {
		http_reply_error(req, 400, HTTP_E_QUERY,
		    "cannot make a cookie for this path");
		return;
	}
	cookie = xasprintf("%s=%s; Path=%s; HttpOnly; SameSite=Strict",
	    DIALECT_COOKIE, val, scope);
	hr = http_resp_buf("", 0);
	http_resp_header(hr, "Location", location);
	http_resp_header(hr, "Set-Cookie", cookie);
	http_resp_header(hr, "Cache-Control", "no-store");
	http_resp_header(hr, "Referrer-Policy", "no-referrer");
	http_reply_resp(req, 303, hr);
	explicit_bzero(val, sizeof(val));
	explicit_bzero(cookie, strlen(cookie));
	free(cookie);
}

void
route_proxy(struct http_req *req)
{
	const struct execd *app = http_req_app(req);
	const char *t = http_req_target(req), *rest;
	struct proxy_opts o;
	char port[8], *target, *clean = NULL;
	uint64_t v;
	size_t n;

	if (strncmp(t, PREFIX, strlen(PREFIX)) != 0) {
		http_reply_error(req, 400, HTTP_E_QUERY,
		    "the request-target must be a path under %s", PREFIX);
		return;
	}
	t += strlen(PREFIX);
	n = strcspn(t, "/?");
	if (n == 0) {
		http_reply_error(req, 400, HTTP_E_QUERY,
		    "port is required");
		return;
	}
	if (n >= sizeof(port) ||
	    (memcpy(port, t, n), port[n] = '\0',
	    http_parse_uint(port, 65535, &v) < 0) || v == 0) {
		http_reply_error(req, 400, HTTP_E_QUERY,
		    "invalid port '%.*s': want 1 to 65535",
		    (int)(n < 16 ? n : 16), t);
		return;
	}
	rest = t + n;
	if (http_req_query_token_ok(req)) {
		const char *m = http_req_method(req);

		clean = strip_token(http_req_target(req));
		if ((strcmp(m, "GET") == 0 || strcmp(m, "HEAD") == 0) &&
		    http_req_header(req, "Upgrade") == NULL) {
			/* /proxy/8080 is /proxy/8080/, where the cookie goes. */
			size_t at = strlen(PREFIX) + n;
			char *loc = clean[at] == '/' ? xstrdup(clean) :
			    xasprintf("%.*s/%s", (int)at, clean, clean + at);

			trade_token(req, loc);
			free(loc);
			free(clean);
			return;
		}
		rest = clean + strlen(PREFIX) + n;
	}
	target = xasprintf("%s%s", rest[0] == '/' ? "" : "/", rest);
	free(clean);
	o.port = (uint16_t)v;
	o.target = target;
	o.timeout_ms = app->conf->proxy_timeout * 1000u;
	proxy_start(req, &o);
	free(target);
}
