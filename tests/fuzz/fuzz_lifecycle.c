/*
 * fuzz_lifecycle.c -- fuzz target for lifecycle hook configurations and
 * cron schedules (execd/domain/lifecycle.c).
 *
 * The input is a configuration (OPENSANDBOX_LIFECYCLE's text, JSON or
 * TOML); it is also tried, as a C string, as a schedule.  Invariants,
 * any break aborts: a refusal says why in UTF-8; an accepted
 * configuration has commands whose first item is not blank, positive
 * timeouts, periodic names that are trimmed, not blank and unique, and
 * reads back from its own JSON and from its own TOML (the saved form)
 * the same; an accepted schedule's next time, in UTC, lies after the
 * time asked and falls on a minute, hour, day and month the schedule
 * names.
 */
#include <ctype.h>
#include <errno.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "../../execd/domain/lifecycle.h"
#include "fz.h"

static void
check_hook(const struct lifecycle_hook *h)
{
	const char *s;

	CHECK(h->argv != NULL && h->argv[0] != NULL);
	for (s = h->argv[0]; isspace((unsigned char)*s); s++)
		;
	CHECK(*s != '\0');
	CHECK(h->timeout_s > 0);
}

static void
check_cron(const char *s)
{
	struct lifecycle_cron c;
	char err[256] = "";
	int64_t t0 = 1767225600, t;
	struct tm tm;
	time_t tt;

	if (lifecycle_cron_parse(s, &c, err, sizeof(err)) < 0) {
		CHECK(err[0] != '\0' && fz_utf8(err, strlen(err)));
		return;
	}
	c.utc = true;
	t = lifecycle_cron_next(&c, t0);
	CHECK(t == -1 || t > t0);
	if (t < 0 || c.every_s > 0) {
		CHECK(c.every_s == 0 || t == t0 + (int64_t)c.every_s);
		return;
	}
	tt = (time_t)t;
	CHECK(gmtime_r(&tt, &tm) != NULL);
	CHECK(tm.tm_sec == 0);
	CHECK(c.min & (1ULL << tm.tm_min));
	CHECK(c.hour & (1U << tm.tm_hour));
	CHECK(c.month & (1U << (tm.tm_mon + 1)));
	CHECK((c.dom & (1U << tm.tm_mday)) || (c.dow & (1U << tm.tm_wday)));
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct lifecycle *l, *again;
	char err[512] = "", *s;
	json_t *v, *w;
	int rc;

	if (size > (1 << 16))
		return 0;
	rc = lifecycle_parse_text((const char *)data, size, &l, err,
	    sizeof(err));
	CHECK(rc == 0 || rc == -EINVAL);
	if (rc < 0) {
		CHECK(err[0] != '\0' && fz_utf8(err, strlen(err)));
	} else {
		if (l->pre_start != NULL)
			check_hook(l->pre_start);
		for (size_t i = 0; i < l->nperiodic; i++) {
			const char *n = l->periodic[i].name;

			check_hook(&l->periodic[i]);
			CHECK(*n != '\0' && !isspace((unsigned char)n[0]) &&
			    !isspace((unsigned char)n[strlen(n) - 1]));
			for (size_t j = 0; j < i; j++)
				CHECK(strcmp(l->periodic[j].name, n) != 0);
		}
		v = lifecycle_json(l);
		CHECK(lifecycle_parse(v, &again, err, sizeof(err)) == 0);
		w = lifecycle_json(again);
		CHECK(json_equal(v, w));
		json_decref(w);
		lifecycle_free(again);
		s = lifecycle_toml(l);
		CHECK(lifecycle_parse_text(s, strlen(s), &again, err,
		    sizeof(err)) == 0);
		w = lifecycle_json(again);
		CHECK(json_equal(v, w));
		free(s);
		json_decref(v);
		json_decref(w);
		lifecycle_free(again);
		lifecycle_free(l);
	}
	if ((s = strndup((const char *)data, size)) == NULL)
		abort();
	check_cron(s);
	free(s);
	return 0;
}
