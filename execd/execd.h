/*
 * execd.h -- the daemon's shared state, handed to every route handler.
 *
 * One instance lives in main.c.  Route files reach it through
 * http_req_app().  Loop thread only.
 */
#ifndef EXECD_EXECD_H
#define EXECD_EXECD_H

#include <stdbool.h>

#include "conf.h"
#include "kernel.h"
#include "metrics.h"

struct loop;
struct http_server;
struct context_set;

struct execd {
	struct loop		*loop;
	struct http_server	*http;
	const struct conf	*conf;
	bool			 stopping;
	void			*zctx;
	struct kernel_conf	 kconf;
	struct context_set	*contexts;
	char			*cmd_dir;	/* background output */
	/* Last metrics sample, the base for the next CPU percentage. */
	struct metrics_sample	 msample;
	double			 mcpu_pct;
};

#endif
