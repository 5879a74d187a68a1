/*
 * t_dialect.c -- front-end dialects: which token forms each accepts (and
 * only with the right token), the exact bytes of each error body, the
 * JSON-RPC code map; then, through a server on 127.0.0.1 port 0 with
 * routes of each dialect and a group, that the token is checked in the
 * dialect of the route called and that http.c's own answers (401/403,
 * 404, 405, 400, 413) and a handler's http_reply_error() take its shape.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "../../execd/core/log.h"
#include "../../execd/core/loop.h"
#include "../../execd/transport/dialect.h"
#include "../../execd/transport/http.h"
#include "../t.h"

#define TOKEN	"s3cr3t-T0ken"

/* --- the dialect functions, directly --- */

static unsigned char md[DIALECT_MD_LEN];

/* Whether d accepts the credentials (header, authorization, query). */
static bool
ok(const struct dialect *d, const char *h, const char *a, const char *q)
{
	struct dialect_creds c = { h, a, q, NULL, NULL };

	return dialect_token_ok(d, &c, md);
}

static void
t_hash(void)
{
	unsigned char again[DIALECT_MD_LEN], other[DIALECT_MD_LEN];

	T_EQ_INT(dialect_token_hash(TOKEN, md), 0);
	T_EQ_INT(dialect_token_hash(TOKEN, again), 0);
	T_EQ_INT(dialect_token_hash(TOKEN "x", other), 0);
	T_OK(memcmp(md, again, sizeof(md)) == 0);
	T_OK(memcmp(md, other, sizeof(md)) != 0);
}

/* Every form, accepted only where the dialect allows it. */
static void
t_forms(void)
{
	const struct dialect *os = &dialect_opensandbox;
	const struct dialect *jp = &dialect_jupyter;
	const struct dialect *rpc = &dialect_jsonrpc;

	dialect_token_hash(TOKEN, md);
	/* X-EXECD-ACCESS-TOKEN */
	T_OK(ok(os, TOKEN, NULL, NULL));
	T_OK(!ok(jp, TOKEN, NULL, NULL));
	T_OK(!ok(rpc, TOKEN, NULL, NULL));
	/* Authorization: token T */
	T_OK(!ok(os, NULL, "token " TOKEN, NULL));
	T_OK(ok(jp, NULL, "token " TOKEN, NULL));
	T_OK(!ok(rpc, NULL, "token " TOKEN, NULL));
	/* Authorization: Bearer T */
	T_OK(!ok(os, NULL, "Bearer " TOKEN, NULL));
	T_OK(ok(jp, NULL, "Bearer " TOKEN, NULL));
	T_OK(ok(rpc, NULL, "Bearer " TOKEN, NULL));
	/* ?token=T */
	T_OK(!ok(os, NULL, NULL, TOKEN));
	T_OK(ok(jp, NULL, NULL, TOKEN));
	T_OK(!ok(rpc, NULL, NULL, TOKEN));
	/* nothing at all */
	T_OK(!ok(os, NULL, NULL, NULL));
	T_OK(!ok(jp, NULL, NULL, NULL));
	T_OK(!ok(rpc, NULL, NULL, NULL));
	/* A wrong form beside a right one does not spoil it. */
	T_OK(ok(jp, TOKEN, "Basic eA==", TOKEN));
	T_OK(ok(os, TOKEN, "Bearer nope", "nope"));
}

/* MCP's: Bearer and execd's header, JSON-RPC's errors and denial. */
static void
t_mcp(void)
{
	const struct dialect *mcp = &dialect_mcp;
	struct buf b;

	dialect_token_hash(TOKEN, md);
	T_OK(ok(mcp, TOKEN, NULL, NULL));
	T_OK(ok(mcp, NULL, "Bearer " TOKEN, NULL));
	T_OK(ok(mcp, NULL, "bearer " TOKEN, NULL));
	T_OK(!ok(mcp, NULL, "token " TOKEN, NULL));
	T_OK(!ok(mcp, NULL, NULL, TOKEN));
	T_OK(!ok(mcp, NULL, NULL, NULL));
	T_OK(!ok(mcp, "nope", "Bearer nope", NULL));
	T_OK(ok(mcp, "nope", "Bearer " TOKEN, NULL));
	T_OK(mcp->error == dialect_jsonrpc.error);
	T_EQ_STR(mcp->deny_hval, "Bearer");
	buf_init(&b);
	T_EQ_INT(dialect_deny(mcp, &b), 401);
	buf_add(&b, "", 1);
	T_OK(strstr(b.p, "\"code\":-32001") != NULL);
	buf_reset(&b);
}

/* Only the right token: not a near miss of any kind. */
static void
t_wrong_tokens(void)
{
	static const char *const bad[] = {
		"s3cr3t-T0kem",		/* same length, last byte */
		"S3cr3t-T0ken",		/* same length, first byte */
		"s3cr3t-T0ke",		/* a prefix */
		"s3",			/* a short prefix */
		TOKEN "x",		/* the token and more */
		"",			/* empty */
	};
	const struct dialect *all[] = { &dialect_opensandbox,
	    &dialect_jupyter, &dialect_jsonrpc };
	char a[128];

	dialect_token_hash(TOKEN, md);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		for (size_t j = 0; j < 3; j++) {
			T_OK(!ok(all[j], bad[i], NULL, NULL));
			T_OK(!ok(all[j], NULL, NULL, bad[i]));
			snprintf(a, sizeof(a), "Bearer %s", bad[i]);
			T_OK(!ok(all[j], NULL, a, NULL));
			snprintf(a, sizeof(a), "token %s", bad[i]);
			T_OK(!ok(all[j], NULL, a, NULL));
		}
}

/* RFC 7235: the scheme in any case, then 1*SP, then the credentials. */
static void
t_authorization(void)
{
	const struct dialect *jp = &dialect_jupyter;
	const struct dialect *rpc = &dialect_jsonrpc;

	dialect_token_hash(TOKEN, md);
	T_OK(ok(jp, NULL, "Token " TOKEN, NULL));
	T_OK(ok(jp, NULL, "TOKEN " TOKEN, NULL));
	T_OK(ok(jp, NULL, "tOkEn " TOKEN, NULL));
	T_OK(ok(rpc, NULL, "bearer " TOKEN, NULL));
	T_OK(ok(rpc, NULL, "BEARER " TOKEN, NULL));
	T_OK(ok(rpc, NULL, "Bearer   " TOKEN, NULL));	/* 1*SP */
	T_OK(ok(rpc, NULL, "Bearer\t" TOKEN " ", NULL));
	/* no credentials after the scheme */
	T_OK(!ok(rpc, NULL, "Bearer", NULL));
	T_OK(!ok(rpc, NULL, "Bearer ", NULL));
	T_OK(!ok(rpc, NULL, "Bearer    ", NULL));
	T_OK(!ok(jp, NULL, "token", NULL));
	/* a scheme that only starts like ours, or none */
	T_OK(!ok(rpc, NULL, "Bearer" TOKEN, NULL));
	T_OK(!ok(rpc, NULL, "Bearerx " TOKEN, NULL));
	T_OK(!ok(jp, NULL, "tokens " TOKEN, NULL));
	T_OK(!ok(rpc, NULL, TOKEN, NULL));
	T_OK(!ok(rpc, NULL, "Basic " TOKEN, NULL));
	T_OK(!ok(rpc, NULL, " Bearer " TOKEN, NULL));
	/* the token is one credential, not a list */
	T_OK(!ok(rpc, NULL, "Bearer " TOKEN " " TOKEN, NULL));
}

/* d's body for (status, code, msg) as a string. */
static const char *
body(const struct dialect *d, unsigned status, const char *code,
    const char *msg)
{
	static char out[1024];
	struct buf b;

	buf_init(&b);
	dialect_error(d, &b, status, code, msg);
	snprintf(out, sizeof(out), "%s", b.p != NULL ? b.p : "");
	buf_reset(&b);
	return out;
}

/* d's answer without the token; its status in *status. */
static const char *
deny(const struct dialect *d, unsigned *status)
{
	static char out[1024];
	struct buf b;

	buf_init(&b);
	*status = dialect_deny(d, &b);
	snprintf(out, sizeof(out), "%s", b.p != NULL ? b.p : "");
	buf_reset(&b);
	return out;
}

static void
t_bodies(void)
{
	unsigned st;

	T_EQ_STR(body(&dialect_opensandbox, 404, "FILE_NOT_FOUND",
	    "no \"such\" file\n"),
	    "{\"code\":\"FILE_NOT_FOUND\",\"message\":"
	    "\"no \\\"such\\\" file\\n\"}");
	T_EQ_STR(body(&dialect_opensandbox, 416, "UNKNOWN", ""),
	    "{\"code\":\"UNKNOWN\",\"message\":\"\"}");
	T_EQ_STR(body(&dialect_jupyter, 404, "CONTEXT_NOT_FOUND",
	    "Kernel does not exist: k1"),
	    "{\"message\":\"Kernel does not exist: k1\",\"reason\":null}");
	/* No message: the reason phrase, as jupyter_server writes it. */
	T_EQ_STR(body(&dialect_jupyter, 404, "NOT_FOUND", ""),
	    "{\"message\":\"Not Found\",\"reason\":null}");
	T_EQ_STR(body(&dialect_jupyter, 599, "X", NULL),
	    "{\"message\":\"Unknown HTTP Error\",\"reason\":null}");
	T_EQ_STR(body(&dialect_jsonrpc, 400, "INVALID_REQUEST_BODY",
	    "invalid request, bad"),
	    "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32600,"
	    "\"message\":\"invalid request, bad\",\"data\":{\"status\":400,"
	    "\"code\":\"INVALID_REQUEST_BODY\"}}}");
	T_EQ_STR(body(&dialect_jsonrpc, 500, "RUNTIME_ERROR", "\x01"),
	    "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32603,"
	    "\"message\":\"\\u0001\",\"data\":{\"status\":500,"
	    "\"code\":\"RUNTIME_ERROR\"}}}");
	T_EQ_STR(body(&dialect_jsonrpc, 405, "METHOD_NOT_ALLOWED", ""),
	    "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32005,"
	    "\"message\":\"Method Not Allowed\",\"data\":{\"status\":405,"
	    "\"code\":\"METHOD_NOT_ALLOWED\"}}}");

	T_EQ_STR(deny(&dialect_opensandbox, &st),
	    "{\"error\":\"Unauthorized: invalid or missing header "
	    "X-EXECD-ACCESS-TOKEN\"}");
	T_EQ_INT(st, 401);
	T_EQ_STR(deny(&dialect_jupyter, &st),
	    "{\"message\":\"Forbidden\",\"reason\":null}");
	T_EQ_INT(st, 403);
	T_EQ_STR(deny(&dialect_jsonrpc, &st),
	    "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32001,"
	    "\"message\":\"Unauthorized: invalid or missing bearer token\","
	    "\"data\":{\"status\":401,\"code\":\"UNAUTHORIZED\"}}}");
	T_EQ_INT(st, 401);
	T_EQ_STR(dialect_opensandbox.type, "application/json; charset=utf-8");
	T_EQ_STR(dialect_jupyter.type, "application/json");
	T_EQ_STR(dialect_jsonrpc.type, "application/json");
	T_EQ_STR(dialect_jsonrpc.deny_hname, "WWW-Authenticate");
	T_EQ_STR(dialect_jsonrpc.deny_hval, "Bearer");
}

static void
t_jsonrpc_codes(void)
{
	T_EQ_INT(dialect_jsonrpc_code(400), -32600);
	T_EQ_INT(dialect_jsonrpc_code(401), -32001);
	T_EQ_INT(dialect_jsonrpc_code(403), -32003);
	T_EQ_INT(dialect_jsonrpc_code(404), -32004);
	T_EQ_INT(dialect_jsonrpc_code(405), -32005);
	T_EQ_INT(dialect_jsonrpc_code(409), -32009);
	T_EQ_INT(dialect_jsonrpc_code(413), -32013);
	T_EQ_INT(dialect_jsonrpc_code(499), -32099);
	T_EQ_INT(dialect_jsonrpc_code(500), -32603);
	T_EQ_INT(dialect_jsonrpc_code(503), -32053);
	T_EQ_INT(dialect_jsonrpc_code(504), -32054);
	T_EQ_INT(dialect_jsonrpc_code(549), -32099);
	T_EQ_INT(dialect_jsonrpc_code(550), -32603);
	T_EQ_INT(dialect_jsonrpc_code(200), -32603);
}

/* --- through the server --- */

/* 200 {"dialect":name}: which dialect the request was answered in. */
static void
h_ok(struct http_req *req)
{
	http_reply_json(req, 200, json_pack("{s:s}", "dialect",
	    http_req_dialect(req)->name));
}

static void
h_fail(struct http_req *req)
{
	http_reply_error(req, 409, HTTP_E_EXISTS, "it is %s", "there");
}

static const struct body_field need_x[] = {
	{ "x", BODY_STRING, BODY_REQUIRED },
	BODY_END
};

static const struct http_route routes[] = {
	{ "GET", "/os", 0, h_ok, "", NULL, NULL },
	{ "POST", "/os", HTTP_R_BODY, h_ok, "", need_x, NULL },
	{ "*", "/api/{rest}", HTTP_R_PREFIX, NULL, "a group", NULL,
	    &dialect_jupyter },
	{ "GET", "/api/kernels", 0, h_ok, "", NULL, &dialect_jupyter },
	{ "POST", "/api/kernels", HTTP_R_BODY, h_ok, "", need_x,
	    &dialect_jupyter },
	{ "DELETE", "/api/fail", 0, h_fail, "", NULL, &dialect_jupyter },
	{ "POST", "/mcp", HTTP_R_BODY, h_ok, "", need_x, &dialect_jsonrpc },
	{ "GET", "/mcp/fail", 0, h_fail, "", NULL, &dialect_jsonrpc },
};

/* One request and what came back. */
struct exch {
	const char	*req;		/* the bytes sent */
	char		 resp[8192];	/* all that came back */
};

struct client {
	uint16_t	 port;
	struct exch	*ex;
	size_t		 n;
	atomic_int	 done;
};

/* Whether resp holds a whole response (head and Content-Length bytes). */
static bool
complete(const char *resp)
{
	const char *end = strstr(resp, "\r\n\r\n"), *cl;
	unsigned long n;

	if (end == NULL || (cl = strstr(resp, "Content-Length: ")) == NULL ||
	    cl > end)
		return false;
	n = strtoul(cl + 16, NULL, 10);
	return strlen(end + 4) >= n;
}

/* Client thread: each request on its own connection, read to its end. */
static void *
client_run(void *arg)
{
	struct client *cl = arg;
	struct sockaddr_in sin;
	size_t got;
	ssize_t r;
	int fd;

	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_port = htons(cl->port);
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	for (size_t i = 0; i < cl->n; i++) {
		struct exch *e = &cl->ex[i];

		e->resp[0] = '\0';
		if ((fd = socket(AF_INET, SOCK_STREAM, 0)) < 0)
			continue;
		if (connect(fd, (struct sockaddr *)&sin, sizeof(sin)) < 0 ||
		    write(fd, e->req, strlen(e->req)) < 0) {
			close(fd);
			continue;
		}
		got = 0;
		while (got < sizeof(e->resp) - 1 && (r = read(fd,
		    e->resp + got, sizeof(e->resp) - 1 - got)) > 0) {
			got += (size_t)r;
			e->resp[got] = '\0';
			if (complete(e->resp))
				break;	/* a 413 is sent before the body */
		}
		e->resp[got] = '\0';
		close(fd);
	}
	atomic_store(&cl->done, 1);
	return NULL;
}

/* Loop timer: stop once the client is done. */
static void
poll_done(struct loop *l, uint64_t id, void *arg)
{
	struct client *cl = arg;

	if (atomic_load(&cl->done))
		loop_stop(l);
	else
		loop_timer_add(l, 5, poll_done, cl);
}

/* Serve routes (with the token) until every exchange has its answer. */
static void
serve(struct exch *ex, size_t n)
{
	struct http_conf conf = {
		.addr = "127.0.0.1", .port = 0, .token = TOKEN,
		.max_body = 4096, .max_conns = 16, .stream_cap = 65536,
	};
	struct http_server *srv = NULL;
	struct client cl = { 0, ex, n, 0 };
	struct loop *l = loop_new();
	pthread_t th;
	char err[256];

	T_OK(l != NULL);
	T_EQ_INT(http_new(l, &conf, routes, sizeof(routes) /
	    sizeof(routes[0]), NULL, &srv, err, sizeof(err)), 0);
	if (srv == NULL)
		return;
	cl.port = http_port(srv);
	pthread_create(&th, NULL, client_run, &cl);
	loop_timer_add(l, 5, poll_done, &cl);
	loop_run(l);
	pthread_join(th, NULL);
	http_free(srv);
	loop_free(l);
}

/* The status of a response. */
static int
status_of(const char *resp)
{
	int st = 0;

	sscanf(resp, "HTTP/1.1 %d", &st);
	return st;
}

/* The body of a response (after the blank line). */
static const char *
body_of(const char *resp)
{
	const char *p = strstr(resp, "\r\n\r\n");

	return p != NULL ? p + 4 : "";
}

/* Whether s starts with prefix. */
static bool
starts(const char *s, const char *prefix)
{
	return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* Whether the response has the header line (case as sent by MHD). */
static bool
has_header(const char *resp, const char *line)
{
	const char *end = strstr(resp, "\r\n\r\n");
	const char *p = strstr(resp, line);

	return p != NULL && end != NULL && p < end;
}

#define GET(path, hdr) \
	"GET " path " HTTP/1.1\r\nHost: x\r\n" hdr "Connection: close\r\n\r\n"
#define REQ(m, path, hdr, body) \
	m " " path " HTTP/1.1\r\nHost: x\r\n" hdr "Content-Type: " \
	"application/json\r\nContent-Length: " body "Connection: close\r\n\r\n"
#define OS_HDR	"X-EXECD-ACCESS-TOKEN: " TOKEN "\r\n"
#define JP_HDR	"Authorization: token " TOKEN "\r\n"
#define RPC_HDR	"Authorization: Bearer " TOKEN "\r\n"
#define OS_401 \
	"{\"error\":\"Unauthorized: invalid or missing header " \
	"X-EXECD-ACCESS-TOKEN\"}"
#define JP_403	"{\"message\":\"Forbidden\",\"reason\":null}"

/* The token is checked in the dialect of the route called. */
static void
t_server_auth(void)
{
	struct exch ex[] = {
		{ GET("/os", OS_HDR), "" },
		{ GET("/os", RPC_HDR JP_HDR), "" },
		{ GET("/os?token=" TOKEN, ""), "" },
		{ GET("/api/kernels", JP_HDR), "" },
		{ GET("/api/kernels", "Authorization: TOKEN " TOKEN "\r\n"),
		    "" },
		{ GET("/api/kernels?token=" TOKEN, ""), "" },
		{ GET("/api/kernels?token=" TOKEN "x", ""), "" },
		{ GET("/api/kernels", OS_HDR), "" },
		{ GET("/mcp/fail", JP_HDR), "" },
		{ GET("/mcp/fail", "Authorization: Bearer\r\n"), "" },
		{ GET("/nope", ""), "" },
		{ GET("/nope", JP_HDR), "" },
	};

	serve(ex, sizeof(ex) / sizeof(ex[0]));
	T_EQ_INT(status_of(ex[0].resp), 200);
	T_EQ_STR(body_of(ex[0].resp), "{\"dialect\":\"opensandbox\"}");
	for (int i = 1; i <= 2; i++) {
		T_EQ_INT(status_of(ex[i].resp), 401);
		T_EQ_STR(body_of(ex[i].resp), OS_401);
		T_OK(has_header(ex[i].resp, "Content-Type: application/json; "
		    "charset=utf-8\r\n"));
	}
	for (int i = 3; i <= 5; i++) {
		T_EQ_INT(status_of(ex[i].resp), 200);
		T_EQ_STR(body_of(ex[i].resp), "{\"dialect\":\"jupyter\"}");
	}
	for (int i = 6; i <= 7; i++) {
		T_EQ_INT(status_of(ex[i].resp), 403);
		T_EQ_STR(body_of(ex[i].resp), JP_403);
		T_OK(has_header(ex[i].resp,
		    "Content-Type: application/json\r\n"));
	}
	for (int i = 8; i <= 9; i++) {
		T_EQ_INT(status_of(ex[i].resp), 401);
		T_EQ_STR(body_of(ex[i].resp), "{\"jsonrpc\":\"2.0\","
		    "\"id\":null,\"error\":{\"code\":-32001,\"message\":"
		    "\"Unauthorized: invalid or missing bearer token\","
		    "\"data\":{\"status\":401,\"code\":\"UNAUTHORIZED\"}}}");
		T_OK(has_header(ex[i].resp, "WWW-Authenticate: Bearer\r\n"));
	}
	/* No route: OpenSandbox's 401 before anything else, as ever. */
	for (int i = 10; i <= 11; i++) {
		T_EQ_INT(status_of(ex[i].resp), 401);
		T_EQ_STR(body_of(ex[i].resp), OS_401);
	}
}

/* http.c's own answers and a handler's error, in the route's shape. */
static void
t_server_errors(void)
{
	struct exch ex[] = {
		{ GET("/api/nope/deeper", JP_HDR), "" },
		{ GET("/api/nope", ""), "" },
		{ GET("/api/nope", OS_HDR), "" },
		{ "PUT /api/kernels HTTP/1.1\r\nHost: x\r\n" JP_HDR
		    "Connection: close\r\n\r\n", "" },
		{ REQ("POST", "/api/kernels", JP_HDR, "7\r\n") "{\"x\":1}",
		    "" },
		{ REQ("POST", "/api/kernels", JP_HDR, "99999\r\n"), "" },
		{ "DELETE /api/fail HTTP/1.1\r\nHost: x\r\n" JP_HDR
		    "Connection: close\r\n\r\n", "" },
		{ GET("/mcp/fail", RPC_HDR), "" },
		{ REQ("POST", "/mcp", RPC_HDR, "2\r\n") "{}", "" },
		{ REQ("POST", "/mcp", RPC_HDR, "1\r\n") "{", "" },
		{ REQ("POST", "/os", OS_HDR, "7\r\n") "{\"x\":1}", "" },
		{ GET("/nope", OS_HDR), "" },
		{ "PUT /os HTTP/1.1\r\nHost: x\r\n" OS_HDR
		    "Connection: close\r\n\r\n", "" },
	};
	const char *b;

	serve(ex, sizeof(ex) / sizeof(ex[0]));
	/* a group: 404 in its dialect, and its token forms */
	T_EQ_INT(status_of(ex[0].resp), 404);
	T_EQ_STR(body_of(ex[0].resp), "{\"message\":\"no such endpoint: "
	    "/api/nope/deeper\",\"reason\":null}");
	T_EQ_INT(status_of(ex[1].resp), 403);
	T_EQ_STR(body_of(ex[1].resp), JP_403);
	T_EQ_INT(status_of(ex[2].resp), 403);
	T_EQ_INT(status_of(ex[3].resp), 405);
	T_EQ_STR(body_of(ex[3].resp), "{\"message\":\"method PUT is not "
	    "allowed on /api/kernels\",\"reason\":null}");
	T_OK(has_header(ex[3].resp, "Allow: GET, POST\r\n"));
	/* the body-field check */
	T_EQ_INT(status_of(ex[4].resp), 400);
	b = body_of(ex[4].resp);
	T_OK(starts(b, "{\"message\":\"invalid request, "));
	T_OK(strstr(b, "\",\"reason\":null}") != NULL);
	T_EQ_INT(status_of(ex[5].resp), 413);
	T_EQ_STR(body_of(ex[5].resp), "{\"message\":\"request body is larger "
	    "than 4096 bytes\",\"reason\":null}");
	T_EQ_INT(status_of(ex[6].resp), 409);
	T_EQ_STR(body_of(ex[6].resp), "{\"message\":\"it is there\","
	    "\"reason\":null}");
	T_OK(has_header(ex[6].resp, "Content-Type: application/json\r\n"));
	T_EQ_INT(status_of(ex[7].resp), 409);
	T_EQ_STR(body_of(ex[7].resp), "{\"jsonrpc\":\"2.0\",\"id\":null,"
	    "\"error\":{\"code\":-32009,\"message\":\"it is there\","
	    "\"data\":{\"status\":409,\"code\":\"ALREADY_EXISTS\"}}}");
	T_EQ_INT(status_of(ex[8].resp), 400);
	b = body_of(ex[8].resp);
	T_OK(starts(b, "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":"
	    "-32600,\"message\":\"invalid request, "));
	T_OK(strstr(b, "\"data\":{\"status\":400,\"code\":"
	    "\"INVALID_REQUEST_BODY\"}}}") != NULL);
	T_EQ_INT(status_of(ex[9].resp), 400);
	T_OK(strstr(body_of(ex[9].resp), "\"code\":-32600,\"message\":"
	    "\"error parsing request, MAYBE invalid body format. ") != NULL);
	/* OpenSandbox's, unchanged */
	T_EQ_INT(status_of(ex[10].resp), 400);
	T_OK(starts(body_of(ex[10].resp), "{\"code\":\"INVALID_REQUEST_BODY\","
	    "\"message\":\"invalid request, "));
	T_EQ_INT(status_of(ex[11].resp), 404);
	T_EQ_STR(body_of(ex[11].resp), "{\"code\":\"NOT_FOUND\",\"message\":"
	    "\"no such endpoint: /nope\"}");
	T_EQ_INT(status_of(ex[12].resp), 405);
	T_EQ_STR(body_of(ex[12].resp), "{\"code\":\"METHOD_NOT_ALLOWED\","
	    "\"message\":\"method PUT is not allowed on /os\"}");
	T_OK(has_header(ex[12].resp, "Allow: GET, POST\r\n"));
}

/* A token sent in the query never reaches the access log. */
static void
t_server_log(void)
{
	struct exch ex[] = {
		{ GET("/api/kernels?a=1&token=" TOKEN "&b=2", ""), "" },
		{ GET("/api/kernels?%74oken=" TOKEN, ""), "" },
		{ GET("/api/nope?token=" TOKEN "x", ""), "" },
	};
	char path[] = "/tmp/t_dialect.XXXXXX", log[8192];
	int fd, saved;
	ssize_t n;

	T_OK((fd = mkstemp(path)) >= 0);
	unlink(path);
	saved = dup(STDERR_FILENO);
	dup2(fd, STDERR_FILENO);
	log_init(LOG_L_INFO);
	serve(ex, sizeof(ex) / sizeof(ex[0]));
	log_init(LOG_L_WARN);
	dup2(saved, STDERR_FILENO);
	close(saved);
	n = pread(fd, log, sizeof(log) - 1, 0);
	close(fd);
	log[n > 0 ? n : 0] = '\0';
	T_EQ_INT(status_of(ex[0].resp), 200);
	T_EQ_INT(status_of(ex[1].resp), 200);
	T_EQ_INT(status_of(ex[2].resp), 403);
	T_OK(strstr(log, "/api/kernels?a=1&token=[hidden]&b=2 200") != NULL);
	T_OK(strstr(log, "/api/kernels?%74oken=[hidden] 200") != NULL);
	T_OK(strstr(log, "/api/nope?token=[hidden] 403") != NULL);
	T_OK(strstr(log, TOKEN) == NULL);
}

/* The proxy's cookie: its scope, its value, and who takes it. */
static void
t_proxy_cookie(void)
{
	char scope[64], v[DIALECT_COOKIE_LEN + 1], v2[DIALECT_COOKIE_LEN + 1];
	char hdr[256];
	unsigned char other[DIALECT_MD_LEN];
	const char *jar[] = { hdr, NULL };
	struct dialect_creds c = { NULL, NULL, NULL, jar, scope };

	dialect_token_hash(TOKEN, md);
	dialect_token_hash(TOKEN "x", other);
	T_EQ_INT(dialect_cookie_scope("/proxy/6080/vnc.html", scope,
	    sizeof(scope)), 0);
	T_EQ_STR(scope, "/proxy/6080/");
	T_EQ_INT(dialect_cookie_scope("/proxy/6080", scope, sizeof(scope)), 0);
	T_EQ_STR(scope, "/proxy/6080/");
	T_EQ_INT(dialect_cookie_scope("/proxy/", scope, sizeof(scope)),
	    -EINVAL);
	T_EQ_INT(dialect_cookie_scope("/proxy//x", scope, sizeof(scope)),
	    -EINVAL);
	T_EQ_INT(dialect_cookie_scope("/proxy/6080/", scope, 12), -ENAMETOOLONG);

	/* A value per scope and per token, never the token. */
	T_EQ_INT(dialect_cookie_value(md, "/proxy/6080/", v), 0);
	T_EQ_INT((int)strlen(v), DIALECT_COOKIE_LEN);
	T_EQ_INT(dialect_cookie_value(md, "/proxy/8080/", v2), 0);
	T_OK(strcmp(v, v2) != 0);
	T_EQ_INT(dialect_cookie_value(other, "/proxy/6080/", v2), 0);
	T_OK(strcmp(v, v2) != 0);
	T_OK(strstr(v, TOKEN) == NULL);

	/* Taken by the proxy's dialect only, for its scope only. */
	snprintf(scope, sizeof(scope), "/proxy/6080/");
	snprintf(hdr, sizeof(hdr), "a=b; %s=%s; c=d", DIALECT_COOKIE, v);
	T_OK(dialect_token_ok(&dialect_proxy, &c, md));
	T_OK(!dialect_token_ok(&dialect_opensandbox, &c, md));
	T_OK(!dialect_token_ok(&dialect_jupyter, &c, md));
	T_OK(!dialect_token_ok(&dialect_mcp, &c, md));
	T_OK(!dialect_token_ok(&dialect_proxy, &c, other));
	snprintf(scope, sizeof(scope), "/proxy/8080/");
	T_OK(!dialect_token_ok(&dialect_proxy, &c, md));
	snprintf(scope, sizeof(scope), "/proxy/6080/");
	/* Quoted is the same value; a wrong one before the right one is fine. */
	snprintf(hdr, sizeof(hdr), "%s=x; %s=\"%s\"", DIALECT_COOKIE,
	    DIALECT_COOKIE, v);
	T_OK(dialect_token_ok(&dialect_proxy, &c, md));
	/* Cut short, longer, another name, the token itself. */
	snprintf(hdr, sizeof(hdr), "%s=%.63s", DIALECT_COOKIE, v);
	T_OK(!dialect_token_ok(&dialect_proxy, &c, md));
	snprintf(hdr, sizeof(hdr), "%s=%s0", DIALECT_COOKIE, v);
	T_OK(!dialect_token_ok(&dialect_proxy, &c, md));
	snprintf(hdr, sizeof(hdr), "X%s=%s", DIALECT_COOKIE, v);
	T_OK(!dialect_token_ok(&dialect_proxy, &c, md));
	snprintf(hdr, sizeof(hdr), "%s=%s", DIALECT_COOKIE, TOKEN);
	T_OK(!dialect_token_ok(&dialect_proxy, &c, md));
	/* The proxy takes the header and ?token= too. */
	T_OK(ok(&dialect_proxy, TOKEN, NULL, NULL));
	T_OK(ok(&dialect_proxy, NULL, NULL, TOKEN));
	T_OK(!ok(&dialect_proxy, NULL, "Bearer " TOKEN, NULL));
}

int
main(void)
{
	static const struct t_case cases[] = {
		{ "token digest", t_hash },
		{ "each form only where its dialect takes it", t_forms },
		{ "wrong, prefix, longer and empty tokens", t_wrong_tokens },
		{ "MCP: Bearer or execd's header, JSON-RPC errors", t_mcp },
		{ "Authorization: scheme case, spaces, no token",
		    t_authorization },
		{ "error and denial bodies, exact", t_bodies },
		{ "JSON-RPC codes of HTTP statuses", t_jsonrpc_codes },
		{ "server: the token in the route's dialect", t_server_auth },
		{ "server: http.c's answers in the route's shape",
		    t_server_errors },
		{ "server: no query token in the log", t_server_log },
		{ "the proxy's cookie: scope, value, who takes it",
		    t_proxy_cookie },
	};

	log_init(LOG_L_WARN);
	return T_RUN(cases);
}
