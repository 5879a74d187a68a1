/*
 * route.c -- the table of every endpoint execd serves.
 *
 * The order matters only for readability: http.c matches on method and
 * path.  specs/execd-api.yaml must describe exactly these routes; a test
 * compares the two through `execd --routes`.
 */
#include "route.h"

const struct http_route route_table[] = {
	{ "GET", "/ping", 0, route_ping, "health check" },
	{ "GET", "/metrics", 0, route_metrics, "resource use of the sandbox" },
	{ "GET", "/metrics/watch", 0, route_metrics_watch,
	    "resource use, streamed once a second" },
	{ "POST", "/directories", HTTP_R_BODY, route_dirs_make,
	    "create directories (mkdir -p) with mode and owner" },
};

const size_t route_count = sizeof(route_table) / sizeof(route_table[0]);
