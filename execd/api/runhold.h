/*
 * runhold.h -- an HTTP request that would start a run, held while the
 * run gate (rungate.h) is closed: routes of any front end ask first.
 * Loop thread only.
 */
#ifndef EXECD_RUNHOLD_H
#define EXECD_RUNHOLD_H

#include <stdbool.h>

#include "../transport/http.h"

/*
 * True when a restore runs: req is deferred and handler(req) runs again
 * once the gate opens (a client that leaves meanwhile is forgotten).
 * False: go on now.
 */
bool	runhold(struct http_req *req, http_handler *handler);

#endif
