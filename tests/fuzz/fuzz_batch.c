/*
 * fuzz_batch.c -- the items of POST /code/batch (batch_parse).
 *
 * The input is a body, parsed as JSON first (not JSON: nothing to do).
 * Invariants: an accepted body holds 1 to MAX items, each with non-empty
 * code and a language that is not a shell's, a timeout of 0 or more, and
 * the concurrency given (0 when none); a refused one says why, and sets
 * nothing.  Every item is freed (ASan's leak check sees the rest).
 */
#include <string.h>

#include <jansson.h>

#include "../../execd/domain/batch.h"
#include "../../execd/domain/context.h"
#include "fz.h"

#define MAX	8

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct batch_item *items = NULL;
	size_t n = 12345, i;
	unsigned conc = 777;
	char err[256] = "";
	json_t *body, *c;

	body = json_loadb((const char *)data, size, JSON_DECODE_ANY, NULL);
	if (body == NULL)
		return 0;
	if (batch_parse(body, MAX, &items, &n, &conc, err, sizeof(err)) < 0) {
		CHECK(err[0] != '\0' && memchr(err, '\0', sizeof(err)));
		CHECK(items == NULL && n == 12345 && conc == 777);
		json_decref(body);
		return 0;
	}
	CHECK(json_is_object(body));
	CHECK(n >= 1 && n <= MAX);
	CHECK(n == json_array_size(json_object_get(body, "items")));
	c = json_object_get(body, "concurrency");
	CHECK(c == NULL ? conc == 0 : conc == json_integer_value(c));
	CHECK(c == NULL || conc >= 1);
	for (i = 0; i < n; i++) {
		CHECK(items[i].code != NULL && items[i].code[0] != '\0');
		CHECK(items[i].language != NULL &&
		    items[i].language[0] != '\0');
		CHECK(!context_is_command_language(items[i].language));
		CHECK(items[i].timeout_ms >= 0);
	}
	batch_items_free(items, n);
	json_decref(body);
	return 0;
}
