/*
 * fuzz_route.c -- route matching and path parameters against the real
 * route table, and the one parser of query numbers (after, cursor, depth,
 * maxMatches, since, offset, limit).
 *
 * The first byte chooses: even, a path matched against every route; odd,
 * a query number parsed against a few limits.  Invariants: a path that
 * matches a route is the route's pattern with each {name} replaced by a
 * parameter, no parameter is empty or holds a '/', and a path matches no
 * route twice over different parameters; a number parses if and only if
 * it is all digits, one at least, with a value no more than the limit,
 * and then to that value.
 */
#include "../../execd/api/opensandbox/route.h"
#include "../../execd/transport/http.c"
#include "fz.h"

/* The path a route's pattern gives with the parameters of req. */
static void
rebuild(const char *pat, const struct http_req *req, char *out, size_t cap)
{
	size_t o = 0, k = 0, n;
	const char *end;

	for (const char *p = pat; *p != '\0' && o + 1 < cap; ) {
		if (*p == '{') {
			end = strchr(p, '}');
			CHECK(end != NULL && k < req->nparams);
			CHECK(strncmp(req->pnames[k], p + 1,
			    (size_t)(end - p - 1)) == 0);
			n = strlen(req->pvals[k]);
			CHECK(o + n < cap);
			memcpy(out + o, req->pvals[k++], n);
			o += n;
			p = end + 1;
			continue;
		}
		out[o++] = *p++;
	}
	CHECK(k == req->nparams);
	out[o] = '\0';
}

static void
fuzz_path(const char *path)
{
	struct http_req req;
	char again[4200];
	size_t n = strlen(path);

	for (size_t i = 0; i < route_count; i++) {
		memset(&req, 0, sizeof(req));
		if (match(route_table[i].path, path, &req)) {
			for (size_t j = 0; j < req.nparams; j++) {
				CHECK(req.pvals[j][0] != '\0');
				CHECK(strchr(req.pvals[j], '/') == NULL);
			}
			rebuild(route_table[i].path, &req, again,
			    sizeof(again));
			/* The same path, or it with one trailing slash. */
			CHECK(strcmp(again, path) == 0 ||
			    (n > 0 && path[n - 1] == '/' &&
			    strlen(again) == n - 1 &&
			    strncmp(again, path, n - 1) == 0));
		}
		for (size_t j = 0; j < req.nparams; j++)
			free(req.pvals[j]);
	}
}

static void
fuzz_number(const char *s)
{
	static const uint64_t maxes[] = { 0, 1, 9, 10, 99, 65535,
	    INT64_MAX, UINT64_MAX - 1, UINT64_MAX };
	unsigned __int128 model;
	uint64_t v;
	bool digits = s[0] != '\0';
	int rc;

	for (const char *p = s; *p != '\0'; p++)
		digits = digits && *p >= '0' && *p <= '9';
	for (size_t i = 0; i < NELEM(maxes); i++) {
		model = 0;
		for (const char *p = s; digits && *p != '\0' &&
		    model <= maxes[i]; p++)
			model = model * 10 + (unsigned)(*p - '0');
		v = 12345;
		rc = http_parse_uint(s, maxes[i], &v);
		if (digits && model <= maxes[i]) {
			CHECK(rc == 0 && v == (uint64_t)model);
		} else {
			CHECK(rc == -EINVAL && v == 12345);
		}
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char s[4097];
	size_t n;

	if (size < 1)
		return 0;
	n = size - 1 < sizeof(s) - 1 ? size - 1 : sizeof(s) - 1;
	memcpy(s, data + 1, n);
	s[n] = '\0';	/* a NUL inside cuts it, as in a decoded URL */
	if (data[0] % 2 == 0)
		fuzz_path(s);
	else
		fuzz_number(s);
	return 0;
}
