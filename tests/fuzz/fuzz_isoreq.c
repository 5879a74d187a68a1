/*
 * fuzz_isoreq.c -- an isolated session's create request (isoreq_parse)
 * and its echo (isoreq_echo).
 *
 * The input is a body, parsed as JSON first (not JSON: nothing to do).
 * Invariants: an accepted body has 1 to ISOREQ_MAX overlays, each an
 * absolute path given once with a known mode, persist only on overlay
 * mode; binds with absolute sources and destinations; the echo always
 * holds overlays and idle_timeout_seconds, and workspace exactly when
 * there is one overlay.  A refused one says why.  Everything is freed
 * (ASan's leak check sees the rest).
 */
#include <string.h>

#include <jansson.h>

#include "../../execd/domain/isoreq.h"
#include "fz.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct isoreq r;
	char err[512] = "";
	json_t *body, *echo;

	body = json_loadb((const char *)data, size, JSON_DECODE_ANY, NULL);
	if (body == NULL)
		return 0;
	if (isoreq_parse(body, &r, err, sizeof(err)) < 0) {
		CHECK(err[0] != '\0' && memchr(err, '\0', sizeof(err)));
		isoreq_free(&r);
		json_decref(body);
		return 0;
	}
	CHECK(json_is_object(body));
	CHECK(r.noverlay >= 1 && r.noverlay <= ISOREQ_MAX);
	for (size_t i = 0; i < r.noverlay; i++) {
		CHECK(r.overlay[i].path[0] == '/');
		CHECK(r.overlay[i].mode <= ISOREQ_RO);
		CHECK(r.overlay[i].persist < 0 ||
		    r.overlay[i].mode == ISOREQ_OVERLAY);
		for (size_t j = 0; j < i; j++)
			CHECK(strcmp(r.overlay[i].path, r.overlay[j].path) != 0);
	}
	CHECK(r.nbind <= ISOREQ_MAX && r.nwritable <= ISOREQ_MAX &&
	    r.nkeys <= ISOREQ_MAX);
	for (size_t i = 0; i < r.nbind; i++)
		CHECK(r.bind[i].source[0] == '/' && r.bind[i].dest[0] == '/');
	for (size_t i = 0; i < r.nwritable; i++)
		CHECK(r.writable[i][0] == '/');
	echo = json_object();
	isoreq_echo(&r, echo);
	CHECK(json_array_size(json_object_get(echo, "overlays")) ==
	    r.noverlay);
	CHECK(json_is_integer(json_object_get(echo, "idle_timeout_seconds")));
	CHECK((json_object_get(echo, "workspace") != NULL) ==
	    (r.noverlay == 1));
	json_decref(echo);
	isoreq_free(&r);
	json_decref(body);
	return 0;
}
