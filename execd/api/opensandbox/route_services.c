/*
 * route_services.c -- GET /services: the policy file's services as
 * service.h reports them, {"services": [...]}, in start order.
 */
#include <jansson.h>

#include "../../domain/service.h"
#include "../../transport/http.h"
#include "route.h"

void
route_services(struct http_req *req)
{
	http_reply_json(req, 200, json_pack("{s:o}", "services",
	    service_list()));
}
