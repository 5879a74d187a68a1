/*
 * kevent.c -- a kernel's iopub messages and execute replies, read as the
 * events of a code run's stream (see kevent.h).
 *
 * The event shapes are those upstream's daemon writes and the SDKs parse:
 * stream text verbatim by its stream name (anything but "stderr" is
 * stdout), execution_count only when positive and always before the
 * result, a result only for a non-empty MIME bundle, and errors with
 * their three fields always present.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "kevent.h"

static json_t	*results(const json_t *);
static void	 error_of(struct kevent *, const char *, const char *,
		    const json_t *);
static const char *str(const json_t *, const char *);

/* Field key of object o as a string, or NULL when absent or not one. */
static const char *
str(const json_t *o, const char *key)
{
	return json_string_value(json_object_get(o, key));
}

/* MIME bundle with text/plain renamed "text", as clients read it. */
static json_t *
results(const json_t *data)
{
	json_t *o = json_object(), *v;
	const char *k;

	json_object_foreach((json_t *)(uintptr_t)data, k, v)
		json_object_set(o, strcmp(k, "text/plain") == 0 ? "text" : k,
		    v);
	return o;
}

/* ev as an error event; traceback is kept only when it is a list. */
static void
error_of(struct kevent *ev, const char *ename, const char *evalue,
    const json_t *traceback)
{
	*ev = (struct kevent){ .kind = KEV_ERROR };
	ev->error = json_pack("{s:s, s:s, s:O}", "ename", ename, "evalue",
	    evalue, "traceback", json_is_array(traceback) ?
	    (json_t *)(uintptr_t)traceback : json_null());
	ev->ename = str(ev->error, "ename");
}

/* Our own error event. */
void
kevent_error(struct kevent *ev, const char *ename, const char *evalue,
    const json_t *traceback)
{
	error_of(ev, ename, evalue, traceback);
}

/* The events of one iopub message. */
void
kevent_iopub(const struct kp_msg *m, struct kevent_set *set)
{
	const char *type = kp_msg_type(m), *name;
	const json_t *c = m->content, *data, *text;
	struct kevent *ev;
	long long count;

	set->n = 0;
	if (m->dropped > 0) {
		/* Over the frame cap: say so rather than lose it unseen. */
		snprintf(set->note, sizeof(set->note), "\n[execd: a %s "
		    "message of %zu bytes was over the frame limit and was "
		    "dropped]\n", type, m->dropped);
		set->ev[set->n++] = (struct kevent){ .kind = KEV_STDERR,
		    .text = set->note, .len = strlen(set->note),
		    .note = true };
	}
	ev = &set->ev[set->n];
	if (strcmp(type, "stream") == 0) {
		text = json_object_get(c, "text");
		name = str(c, "name");
		if (json_string_length(text) == 0)
			return;
		*ev = (struct kevent){ .kind = name != NULL &&
		    strcmp(name, "stderr") == 0 ? KEV_STDERR : KEV_STDOUT,
		    .text = json_string_value(text),
		    .len = json_string_length(text) };
		set->n++;
	} else if (strcmp(type, "execute_result") == 0 ||
	    strcmp(type, "display_data") == 0 ||
	    strcmp(type, "update_display_data") == 0) {
		count = json_integer_value(json_object_get(c,
		    "execution_count"));
		if (strcmp(type, "execute_result") == 0 && count > 0) {
			*ev++ = (struct kevent){ .kind = KEV_COUNT,
			    .count = count };
			set->n++;
		}
		data = json_object_get(c, "data");
		if (json_object_size(data) == 0)
			return;
		*ev = (struct kevent){ .kind = KEV_RESULT,
		    .results = results(data) };
		set->n++;
	} else if (strcmp(type, "error") == 0) {
		error_of(ev, str(c, "ename") ?: "", str(c, "evalue") ?: "",
		    json_object_get(c, "traceback"));
		set->n++;
	}
}

/* The error a failed reply stands for, when it is one. */
bool
kevent_reply(const json_t *c, struct kevent *ev)
{
	const char *status = str(c, "status");

	if (status != NULL && strcmp(status, "error") == 0) {
		error_of(ev, str(c, "ename") ?: "Error", str(c, "evalue") ?:
		    "the kernel reported an error (see stderr)",
		    json_object_get(c, "traceback"));
		return true;
	}
	if (status != NULL && strcmp(status, "aborted") == 0) {
		error_of(ev, "ExecutionAborted", "the kernel did not run "
		    "this code", NULL);
		return true;
	}
	return false;
}

void
kevent_clear(struct kevent *ev)
{
	json_decref(ev->results);
	json_decref(ev->error);
	ev->results = ev->error = NULL;
	ev->ename = NULL;
}

void
kevent_set_clear(struct kevent_set *set)
{
	for (size_t i = 0; i < set->n; i++)
		kevent_clear(&set->ev[i]);
	set->n = 0;
}
