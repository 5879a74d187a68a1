/*
 * t_kp_msg.c -- unit tests for kp_msg.c.
 *
 * A new message has the header Jupyter 5.3 expects (a 32-hex msg_id, the
 * session and username given, a UTC date with microseconds, version
 * "5.3"), a deep copy of the parent, the content it was handed and empty
 * metadata; bad arguments fail with EINVAL without leaking the content.
 * The getters fall back to "" and ids are random v4 UUIDs.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "../../kernelproto/kp_msg.h"
#include "../t.h"

static int	 is_hex32(const char *);
static time_t	 parse_date(const char *);

/* Whether s is exactly 32 lowercase hex digits. */
static int
is_hex32(const char *s)
{
	return strlen(s) == 32 && strspn(s, "0123456789abcdef") == 32;
}

/*
 * The seconds of a date written as 2026-11-30T09:08:57.123456Z, or -1 if
 * it is not exactly that shape.
 */
static time_t
parse_date(const char *s)
{
	static const char shape[] = "dddd-dd-ddTdd:dd:dd.ddddddZ";
	struct tm tm;

	if (strlen(s) != sizeof(shape) - 1)
		return -1;
	for (size_t i = 0; i < sizeof(shape) - 1; i++) {
		if (shape[i] == 'd' ? (s[i] < '0' || s[i] > '9') :
		    s[i] != shape[i])
			return -1;
	}
	memset(&tm, 0, sizeof(tm));
	if (strptime(s, "%Y-%m-%dT%H:%M:%S", &tm) == NULL)
		return -1;
	return timegm(&tm);
}

/* Every header field, and the other parts, of a fresh message. */
static void
test_new_fields(void)
{
	json_t *content = json_pack("{s:s}", "code", "1+1");
	struct kp_msg *m;
	time_t before = time(NULL), t;
	const char *date;

	m = kp_msg_new("execute_request", "sess-1", "execd", content, NULL);
	T_OK(m != NULL);
	if (m == NULL)
		return;
	T_OK(json_is_object(m->header));
	T_EQ_INT(json_object_size(m->header), 6);
	T_OK(is_hex32(kp_msg_id(m)));
	T_EQ_STR(json_string_value(json_object_get(m->header, "msg_id")),
	    kp_msg_id(m));
	T_EQ_STR(kp_msg_type(m), "execute_request");
	T_EQ_STR(kp_msg_session(m), "sess-1");
	T_EQ_STR(json_string_value(json_object_get(m->header, "username")),
	    "execd");
	T_EQ_STR(json_string_value(json_object_get(m->header, "version")),
	    "5.3");
	T_EQ_STR(KP_PROTOCOL_VERSION, "5.3");
	date = json_string_value(json_object_get(m->header, "date"));
	T_OK(date != NULL);
	t = parse_date(date != NULL ? date : "");
	T_OK(t != -1);
	T_OK(t >= before - 1 && t <= time(NULL) + 1);
	/* content is the very object handed in: stolen, not copied. */
	T_OK(m->content == content);
	T_EQ_INT(content->refcount, 1);
	T_OK(json_is_object(m->parent) && json_object_size(m->parent) == 0);
	T_OK(json_is_object(m->metadata) &&
	    json_object_size(m->metadata) == 0);
	T_EQ_STR(kp_msg_parent_id(m), "");
	T_OK(m->idents == NULL && m->nidents == 0);
	T_OK(m->buffers == NULL && m->nbuffers == 0);
	kp_msg_free(m);
}

/* The header keys come in the order ipykernel writes them. */
static void
test_header_order(void)
{
	static const char *const keys[] = { "msg_id", "session", "username",
	    "date", "msg_type", "version" };
	struct kp_msg *m = kp_msg_new("t", "s", "u", NULL, NULL);
	void *it;
	size_t i = 0;

	T_OK(m != NULL);
	if (m == NULL)
		return;
	for (it = json_object_iter(m->header); it != NULL;
	    it = json_object_iter_next(m->header, it), i++)
		T_EQ_STR(json_object_iter_key(it), i < 6 ? keys[i] : "?");
	T_EQ_INT(i, 6);
	T_OK(json_is_object(m->content) && json_object_size(m->content) == 0);
	kp_msg_free(m);
}

/* The parent is deep-copied: later changes to the original do not show. */
static void
test_parent_copied(void)
{
	json_t *parent = json_pack("{s:s, s:s, s:{s:i}}", "msg_id",
	    "0123456789abcdef0123456789abcdef", "msg_type", "execute_request",
	    "nested", "n", 1);
	json_t *snapshot = json_deep_copy(parent);
	struct kp_msg *m;

	m = kp_msg_new("execute_reply", "s", "u", NULL, parent);
	T_OK(m != NULL);
	if (m == NULL)
		return;
	T_EQ_STR(kp_msg_parent_id(m), "0123456789abcdef0123456789abcdef");
	T_OK(m->parent != parent);
	json_object_set_new(parent, "msg_id", json_string("changed"));
	json_integer_set(json_object_get(json_object_get(parent, "nested"),
	    "n"), 2);
	T_OK(json_equal(m->parent, snapshot));
	T_EQ_INT(parent->refcount, 1);
	kp_msg_free(m);
	json_decref(parent);
	json_decref(snapshot);
}

/* NULL strings become ""; absent or non-string header fields read "". */
static void
test_getters_fallback(void)
{
	struct kp_msg *m = kp_msg_new(NULL, NULL, NULL, NULL, NULL);

	T_OK(m != NULL);
	if (m == NULL)
		return;
	T_EQ_STR(kp_msg_type(m), "");
	T_EQ_STR(kp_msg_session(m), "");
	T_OK(is_hex32(kp_msg_id(m)));
	json_object_set_new(m->header, "msg_type", json_integer(3));
	json_object_del(m->header, "session");
	json_object_set_new(m->parent, "msg_id", json_null());
	T_EQ_STR(kp_msg_type(m), "");
	T_EQ_STR(kp_msg_session(m), "");
	T_EQ_STR(kp_msg_parent_id(m), "");
	kp_msg_free(m);
}

/* Non-object content or parent and non-UTF-8 strings: NULL, EINVAL. */
static void
test_new_errors(void)
{
	json_t *arr = json_array(), *str = json_string("x");

	errno = 0;
	T_OK(kp_msg_new("t", "s", "u", json_array(), NULL) == NULL);
	T_EQ_INT(errno, EINVAL);
	errno = 0;
	T_OK(kp_msg_new("t", "s", "u", json_object(), arr) == NULL);
	T_EQ_INT(errno, EINVAL);
	errno = 0;
	T_OK(kp_msg_new("t", "s", "u", NULL, str) == NULL);
	T_EQ_INT(errno, EINVAL);
	errno = 0;
	T_OK(kp_msg_new("t", "s\xff", "u", json_object(), NULL) == NULL);
	T_EQ_INT(errno, EINVAL);
	errno = 0;
	T_OK(kp_msg_new("t\xc3", "s", "u", NULL, NULL) == NULL);
	T_EQ_INT(errno, EINVAL);
	/* The caller's parent is untouched (LeakSanitizer checks content). */
	T_EQ_INT(arr->refcount, 1);
	json_decref(arr);
	json_decref(str);
	kp_msg_free(NULL);
}

/* kp_msg_new_id: 32 hex digits of a v4 UUID, different every time. */
static void
test_new_id(void)
{
	enum { N = 1000 };
	static char ids[N][33];
	char *sorted[N];

	for (size_t i = 0; i < N; i++) {
		memset(ids[i], 'x', sizeof(ids[i]));
		kp_msg_new_id(ids[i]);
		T_OK(is_hex32(ids[i]));
		T_EQ_INT(ids[i][12], '4');
		T_OK(strchr("89ab", ids[i][16]) != NULL);
		sorted[i] = ids[i];
	}
	for (size_t i = 0; i < N; i++)
		for (size_t j = i + 1; j < N; j++)
			T_OK(strcmp(sorted[i], sorted[j]) != 0);
	/* Two messages never share an id. */
	{
		struct kp_msg *a = kp_msg_new("t", "", "", NULL, NULL);
		struct kp_msg *b = kp_msg_new("t", "", "", NULL, NULL);

		T_OK(a != NULL && b != NULL);
		if (a != NULL && b != NULL)
			T_OK(strcmp(kp_msg_id(a), kp_msg_id(b)) != 0);
		kp_msg_free(a);
		kp_msg_free(b);
	}
}

/* The date's microseconds vary: it is not a whole-second clock. */
static void
test_date_micro(void)
{
	struct kp_msg *m;
	int nonzero = 0;

	for (int i = 0; i < 20 && !nonzero; i++) {
		m = kp_msg_new("t", "", "", NULL, NULL);
		T_OK(m != NULL);
		if (m == NULL)
			return;
		if (strncmp(json_string_value(json_object_get(m->header,
		    "date")) + 20, "000000", 6) != 0)
			nonzero = 1;
		kp_msg_free(m);
	}
	T_OK(nonzero);
}

/* The request builders: type, content, and invalid UTF-8 refused. */
static void
test_requests(void)
{
	struct kp_msg *m;

	m = kp_msg_execute_request("s", "1+1", false, false);
	T_EQ_STR(kp_msg_type(m), "execute_request");
	T_EQ_STR(kp_msg_session(m), "s");
	T_EQ_STR(json_string_value(json_object_get(m->content, "code")),
	    "1+1");
	T_OK(json_is_false(json_object_get(m->content, "allow_stdin")));
	T_OK(json_is_true(json_object_get(m->content, "store_history")));
	T_OK(json_is_object(json_object_get(m->content,
	    "user_expressions")));
	kp_msg_free(m);
	m = kp_msg_execute_request("s", "x", true, true);
	T_OK(json_is_false(json_object_get(m->content, "store_history")));
	T_OK(json_is_true(json_object_get(m->content, "allow_stdin")));
	kp_msg_free(m);
	m = kp_msg_complete_request("s", "pri", 3);
	T_EQ_STR(kp_msg_type(m), "complete_request");
	T_EQ_INT(json_integer_value(json_object_get(m->content,
	    "cursor_pos")), 3);
	kp_msg_free(m);
	m = kp_msg_inspect_request("s", "print", 2, 1);
	T_EQ_STR(kp_msg_type(m), "inspect_request");
	T_EQ_INT(json_integer_value(json_object_get(m->content,
	    "detail_level")), 1);
	kp_msg_free(m);
	m = kp_msg_shutdown_request("s", true);
	T_OK(json_is_true(json_object_get(m->content, "restart")));
	kp_msg_free(m);
	m = kp_msg_kernel_info_request("s");
	T_EQ_STR(kp_msg_type(m), "kernel_info_request");
	T_EQ_INT(json_object_size(m->content), 0);
	kp_msg_free(m);
	m = kp_msg_interrupt_request("s");
	T_EQ_STR(kp_msg_type(m), "interrupt_request");
	kp_msg_free(m);
	errno = 0;
	T_OK(kp_msg_execute_request("s", "\xff", false, false) == NULL);
	T_EQ_INT(errno, EINVAL);
}

static const struct t_case cases[] = {
	{ "new fields", test_new_fields },
	{ "header order", test_header_order },
	{ "parent copied", test_parent_copied },
	{ "getters fallback", test_getters_fallback },
	{ "new errors", test_new_errors },
	{ "new id", test_new_id },
	{ "date micro", test_date_micro },
	{ "requests", test_requests },
};

int
main(void)
{
	return T_RUN(cases);
}
