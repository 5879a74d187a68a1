/*
 * route_proxy.c -- ANY /proxy/{port}/{path}: the reverse proxy to a
 * server on 127.0.0.1:{port} inside the sandbox (proxy.c does the work).
 *
 * The path after the port, with the query string exactly as the client
 * sent it, is the backend's request-target: /proxy/8080 and
 * /proxy/8080/ both name "/".  The port must be 1 to 65535.  The route
 * takes its body as a stream, so no body cap of JSON routes applies;
 * --max-upload-size, the cap on streamed bodies, does.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../config/conf.h"
#include "../../core/xmalloc.h"
#include "../../transport/http.h"
#include "../../transport/proxy.h"
#include "../execd.h"
#include "route.h"

#define PREFIX	"/proxy/"

void
route_proxy(struct http_req *req)
{
	const struct execd *app = http_req_app(req);
	const char *t = http_req_target(req), *rest;
	struct proxy_opts o;
	char port[8], *target;
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
	target = xasprintf("%s%s", rest[0] == '/' ? "" : "/", rest);
	o.port = (uint16_t)v;
	o.target = target;
	o.timeout_ms = app->conf->proxy_timeout * 1000u;
	proxy_start(req, &o);
	free(target);
}
