/*
 * execd.h -- what every route handler is handed: the configuration, the
 * loop, the HTTP server and the last metrics sample, made by main.c.
 *
 * One instance lives in main.c.  Route files reach it through
 * http_req_app().  Every other module keeps its state in its own file
 * and is started and stopped by main.c.  Loop thread only.
 */
#ifndef EXECD_EXECD_H
#define EXECD_EXECD_H

#include <stdbool.h>

#include "../config/conf.h"
#include "../domain/kernel.h"
#include "../domain/metrics.h"

struct loop;
struct http_server;

struct execd {
	struct loop		*loop;
	struct http_server	*http;
	/* --jupyter-listen's, or NULL: held and bound with http. */
	struct http_server	*jupyter_http;
	const struct conf	*conf;
	/* Last metrics sample, the base for the next CPU percentage. */
	struct metrics_sample	 msample;
	double			 mcpu_pct;
};

#endif
