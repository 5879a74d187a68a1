/*
 * t_cmdlog.c -- unit tests for cmdlog.c, a command's event history.
 *
 * Each test writes a history into a fresh temporary directory (in
 * $TMPDIR, else /tmp), reads it back through readers and checks the exact
 * bytes and return codes; the directory is removed afterwards.  Covered:
 * replay from the start and from a number, waiting for more and being
 * told, the end; an event larger than a read; rotation keeping the first
 * file and the last two; a reader told what it missed (history_gap) when
 * the files it needed are gone, and one that keeps reading a file removed
 * under it; files kept while a reader needs them, up to the lag; a reader
 * outliving its log; the size of what is kept, in memory and in files.
 */
#include <dirent.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../execd/domain/cmdlog.h"
#include "../../execd/transport/feed.h"
#include "../t.h"
#include "../t_tmp.h"

static size_t	 nfiles(const char *);
static char	*event(uint64_t seq, const char *text);
static void	 counted(struct cmdlog_reader *, void *);
static int	 pull_all(struct cmdlog_reader *, struct buf *, size_t);
static bool	 consecutive(const char *, uint64_t, uint64_t);
static bool	 walk(const char *, uint64_t, uint64_t, int *);
static void	 append_range(struct cmdlog *, uint64_t, uint64_t);

/* Entries in dir. */
static size_t
nfiles(const char *dir)
{
	struct dirent *e;
	DIR *d = opendir(dir);
	size_t n = 0;

	while (d != NULL && (e = readdir(d)) != NULL)
		if (e->d_name[0] != '.')
			n++;
	if (d != NULL)
		closedir(d);
	return n;
}

/* One event as outstream writes it (static buffer). */
static char *
event(uint64_t seq, const char *text)
{
	static char buf[4096];

	snprintf(buf, sizeof(buf), "{\"type\":\"stdout\",\"text\":\"%s\","
	    "\"timestamp\":1,\"seq\":%llu}\n\n", text,
	    (unsigned long long)seq);
	return buf;
}

static void
counted(struct cmdlog_reader *r, void *arg)
{
	(*(int *)arg)++;
}

/* Pull until the reader waits or ends; its last answer. */
static int
pull_all(struct cmdlog_reader *r, struct buf *out, size_t chunk)
{
	int rc;

	while ((rc = cmdlog_reader_pull(r, out, chunk)) == FEED_MORE)
		;
	return rc;
}

static void
test_replay_wait_end(void)
{
	char *dir = t_tmpdir(), prefix[4200], *e;
	struct cmdlog *l = NULL;
	struct cmdlog_reader *a, *b;
	struct buf all, out;
	int notes = 0;

	snprintf(prefix, sizeof(prefix), "%s/cmd", dir);
	T_EQ_INT(cmdlog_new(prefix, 1 << 20, 1 << 20, &l), 0);
	T_OK(l != NULL);
	buf_init(&all);
	buf_init(&out);
	for (uint64_t i = 1; i <= 3; i++) {
		e = event(i, i == 2 ? "two" : "x");
		buf_adds(&all, e);
		T_EQ_INT(cmdlog_append(l, e, strlen(e)), 0);
	}
	a = cmdlog_reader_new(l, 0, counted, &notes);
	b = cmdlog_reader_new(l, 2, NULL, NULL);
	T_EQ_INT(cmdlog_readers(l), 2);
	T_EQ_INT(pull_all(a, &out, 65536), FEED_WAIT);
	T_EQ_STR(out.p, all.p);
	T_EQ_INT(cmdlog_reader_last(a), 3);
	buf_drain(&out, out.len);
	T_EQ_INT(pull_all(b, &out, 65536), FEED_WAIT);
	T_EQ_STR(out.p, event(3, "x"));
	buf_drain(&out, out.len);
	/* More, then the end: readers are told each time. */
	e = event(4, "four");
	T_EQ_INT(cmdlog_append(l, e, strlen(e)), 0);
	T_EQ_INT(notes, 1);
	T_EQ_INT(pull_all(a, &out, 65536), FEED_WAIT);
	T_EQ_STR(out.p, event(4, "four"));
	buf_drain(&out, out.len);
	cmdlog_end(l);
	T_EQ_INT(notes, 2);
	T_EQ_INT(cmdlog_append(l, e, strlen(e)), -EPIPE);
	T_EQ_INT(pull_all(a, &out, 65536), FEED_END);
	T_EQ_INT(out.len, 0);
	T_EQ_INT(pull_all(b, &out, 65536), FEED_END);
	T_EQ_STR(out.p, event(4, "four"));
	buf_drain(&out, out.len);
	/* After the end, from past the last event: nothing, and the end. */
	cmdlog_reader_free(b);
	b = cmdlog_reader_new(l, 4, NULL, NULL);
	T_EQ_INT(pull_all(b, &out, 65536), FEED_END);
	T_EQ_INT(out.len, 0);
	cmdlog_reader_free(a);
	cmdlog_reader_free(b);
	T_EQ_INT(cmdlog_readers(l), 0);
	/* A history this small never reaches the disk. */
	T_EQ_INT(nfiles(dir), 0);
	cmdlog_free(l);
	T_EQ_INT(nfiles(dir), 0);
	buf_reset(&all);
	buf_reset(&out);
	t_tmpdir_free(dir);
}

static void
test_event_larger_than_a_read(void)
{
	char *dir = t_tmpdir(), prefix[4200], big[3000], *e;
	struct cmdlog *l = NULL;
	struct cmdlog_reader *r;
	struct buf out, want;

	snprintf(prefix, sizeof(prefix), "%s/cmd", dir);
	T_EQ_INT(cmdlog_new(prefix, 1 << 20, 1 << 20, &l), 0);
	memset(big, 'b', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	buf_init(&out);
	buf_init(&want);
	e = event(1, "a");
	buf_adds(&want, e);
	T_EQ_INT(cmdlog_append(l, e, strlen(e)), 0);
	e = event(2, big);
	buf_adds(&want, e);
	T_EQ_INT(cmdlog_append(l, e, strlen(e)), 0);
	cmdlog_end(l);
	r = cmdlog_reader_new(l, 0, NULL, NULL);
	/* Reads of 16 bytes: every event still comes whole. */
	T_EQ_INT(cmdlog_reader_pull(r, &out, 16), FEED_MORE);
	T_EQ_STR(out.p, event(1, "a"));
	T_EQ_INT(pull_all(r, &out, 16), FEED_END);
	T_EQ_INT(out.len, want.len);
	T_OK(memcmp(out.p, want.p, want.len) == 0);
	T_EQ_INT(cmdlog_reader_last(r), 2);
	cmdlog_reader_free(r);
	cmdlog_free(l);
	buf_reset(&out);
	buf_reset(&want);
	t_tmpdir_free(dir);
}

/* The events of out from seq first on, each "x<seq>", and nothing else. */
static bool
consecutive(const char *p, uint64_t first, uint64_t last)
{
	char *e;

	for (uint64_t i = first; i <= last; i++) {
		char text[32];

		snprintf(text, sizeof(text), "x%llu", (unsigned long long)i);
		e = event(i, text);
		if (strncmp(p, e, strlen(e)) != 0)
			return false;
		p += strlen(e);
	}
	return *p == '\0';
}

/*
 * out holds events first..last, each "x<seq>", where history_gap events
 * may stand for runs of them ("events A to B were not kept"); *gaps counts
 * those.  True if so, exactly.
 */
static bool
walk(const char *p, uint64_t first, uint64_t last, int *gaps)
{
	static const char gap[] = "{\"type\":\"history_gap\",\"text\":"
	    "\"events ";
	unsigned long long a, b;
	char text[32], *e, *end;
	uint64_t i = first;

	*gaps = 0;
	while (*p != '\0') {
		if (strncmp(p, gap, sizeof(gap) - 1) == 0) {
			if (sscanf(p + sizeof(gap) - 1, "%llu to %llu", &a,
			    &b) != 2 || a != i || b < a)
				return false;
			(*gaps)++;
			i = b + 1;
			if ((end = strstr(p, "}\n\n")) == NULL ||
			    memmem(p, (size_t)(end - p), "\"seq\"", 5) != NULL)
				return false;
			p = end + 3;
			continue;
		}
		snprintf(text, sizeof(text), "x%llu", (unsigned long long)i);
		e = event(i, text);
		if (i > last || strncmp(p, e, strlen(e)) != 0)
			return false;
		p += strlen(e);
		i++;
	}
	return i == last + 1;
}

static void
test_rotation_and_gap(void)
{
	static const char head[] = "{\"type\":\"history_gap\",\"text\":"
	    "\"events 5 to ";
	char *dir = t_tmpdir(), prefix[4200], text[32], *e;
	struct cmdlog *l = NULL;
	struct cmdlog_reader *early = NULL, *late;
	struct buf out;
	int gaps;

	snprintf(prefix, sizeof(prefix), "%s/cmd", dir);
	/*
	 * Files of 200 bytes; an event is 53 bytes (seq 1-9) or 55.  A file
	 * is cut once it has 200: 1-4, 5-8, 9-12, ... 33-36, 37-40.  No lag:
	 * readers keep nothing from being removed.
	 */
	T_EQ_INT(cmdlog_new(prefix, 600, 0, &l), 0);
	buf_init(&out);
	for (uint64_t i = 1; i <= 40; i++) {
		snprintf(text, sizeof(text), "x%llu", (unsigned long long)i);
		e = event(i, text);
		T_EQ_INT(cmdlog_append(l, e, strlen(e)), 0);
		T_OK(nfiles(dir) <= 3);
		if (i != 6)
			continue;
		/* A reader from 4 on: it has file 1 open after a pull. */
		early = cmdlog_reader_new(l, 4, NULL, NULL);
		T_EQ_INT(cmdlog_reader_pull(early, &out, 65536), FEED_MORE);
		T_OK(consecutive(out.p, 5, 6));
		buf_drain(&out, out.len);
	}
	cmdlog_end(l);
	/* Kept: the first file and the last two. */
	T_EQ_INT(nfiles(dir), 3);
	/* A late reader from the start: the head, told, the tail. */
	late = cmdlog_reader_new(l, 0, NULL, NULL);
	T_EQ_INT(pull_all(late, &out, 65536), FEED_END);
	T_OK(strstr(out.p, head) == out.p + 4 * strlen(event(1, "x1")));
	T_OK(strstr(out.p, "events 5 to 32 were not kept: a command keeps "
	    "about 600 bytes of its events, the first and the latest\","
	    "\"timestamp\":") != NULL);
	T_OK(walk(out.p, 1, 40, &gaps));
	T_EQ_INT(gaps, 1);
	buf_drain(&out, out.len);
	/* From a number kept in the head, or in the tail: no gap. */
	cmdlog_reader_free(late);
	late = cmdlog_reader_new(l, 2, NULL, NULL);
	T_EQ_INT(cmdlog_reader_pull(late, &out, 65536), FEED_MORE);
	T_OK(consecutive(out.p, 3, 4));
	buf_drain(&out, out.len);
	cmdlog_reader_free(late);
	late = cmdlog_reader_new(l, 37, NULL, NULL);
	T_EQ_INT(pull_all(late, &out, 65536), FEED_END);
	T_OK(consecutive(out.p, 38, 40));
	buf_drain(&out, out.len);
	/*
	 * The early reader still reads file 1, removed under it, to its end
	 * (7 and 8); file 2 is gone too and was never opened, so it is told
	 * what it missed there, then goes on with the oldest kept after.
	 */
	T_EQ_INT(pull_all(early, &out, 65536), FEED_END);
	T_OK(strncmp(out.p, event(7, "x7"), strlen(event(7, "x7"))) == 0);
	T_OK(strstr(out.p, "\"text\":\"events 9 to 32 ") != NULL);
	T_OK(walk(out.p, 7, 40, &gaps));
	T_EQ_INT(gaps, 1);
	cmdlog_reader_free(early);
	cmdlog_reader_free(late);
	cmdlog_free(l);
	T_EQ_INT(nfiles(dir), 0);
	buf_reset(&out);
	t_tmpdir_free(dir);
}

/* Append events first..last, each "x<seq>". */
static void
append_range(struct cmdlog *l, uint64_t first, uint64_t last)
{
	char text[32], *e;

	for (uint64_t i = first; i <= last; i++) {
		snprintf(text, sizeof(text), "x%llu", (unsigned long long)i);
		e = event(i, text);
		T_EQ_INT(cmdlog_append(l, e, strlen(e)), 0);
	}
}

static void
test_files_wait_for_readers(void)
{
	char *dir = t_tmpdir(), prefix[4200];
	struct cmdlog *l = NULL;
	struct cmdlog_reader *r, *stuck;
	struct buf out;
	int gaps;

	snprintf(prefix, sizeof(prefix), "%s/cmd", dir);
	/* Files of 200 bytes (files as above); lag 1000: 5 after file 0. */
	T_EQ_INT(cmdlog_new(prefix, 600, 1000, &l), 0);
	buf_init(&out);
	r = cmdlog_reader_new(l, 0, NULL, NULL);
	append_range(l, 1, 24);
	/* r has read nothing: files 0-5 all stay (6 files, lag not passed). */
	T_EQ_INT(nfiles(dir), 6);
	/* It reads everything, without a gap; the files go behind it. */
	T_EQ_INT(pull_all(r, &out, 65536), FEED_WAIT);
	T_OK(consecutive(out.p, 1, 24));
	buf_drain(&out, out.len);
	T_EQ_INT(nfiles(dir), 3);
	/*
	 * A reader that reads nothing holds files only up to the lag; one
	 * that keeps up is not disturbed.
	 */
	stuck = cmdlog_reader_new(l, 0, NULL, NULL);
	for (uint64_t i = 25; i <= 60; i++) {
		append_range(l, i, i);
		T_EQ_INT(pull_all(r, &out, 65536), FEED_WAIT);
	}
	T_OK(consecutive(out.p, 25, 60));
	buf_drain(&out, out.len);
	T_EQ_INT(nfiles(dir), 6);	/* file 0 and 5 more */
	cmdlog_end(l);
	T_EQ_INT(pull_all(r, &out, 65536), FEED_END);
	T_EQ_INT(out.len, 0);
	T_EQ_INT(pull_all(stuck, &out, 65536), FEED_END);
	T_OK(walk(out.p, 1, 60, &gaps));
	T_EQ_INT(gaps, 1);
	T_OK(strstr(out.p, "\"events 5 to ") != NULL);
	cmdlog_reader_free(stuck);
	T_EQ_INT(nfiles(dir), 3);
	cmdlog_reader_free(r);
	cmdlog_free(l);
	T_EQ_INT(nfiles(dir), 0);
	buf_reset(&out);
	t_tmpdir_free(dir);
}

static void
test_reader_outlives_its_log(void)
{
	char *dir = t_tmpdir(), prefix[4200], *e, *big;
	struct cmdlog *l = NULL;
	struct cmdlog_reader *r;
	struct buf out;
	int notes = 0;

	snprintf(prefix, sizeof(prefix), "%s/cmd", dir);
	T_EQ_INT(cmdlog_new(prefix, 1 << 20, 1 << 20, &l), 0);
	e = event(1, "x1");
	T_EQ_INT(cmdlog_append(l, e, strlen(e)), 0);
	r = cmdlog_reader_new(l, 0, counted, &notes);
	cmdlog_free(l);
	T_EQ_INT(notes, 1);
	buf_init(&out);
	T_EQ_INT(cmdlog_reader_pull(r, &out, 65536), FEED_END);
	T_EQ_INT(out.len, 0);
	cmdlog_reader_free(r);
	T_EQ_INT(nfiles(dir), 0);
	/*
	 * A directory that does not exist: nothing fails while the history
	 * fits in memory, and the write that needs a file says why.
	 */
	snprintf(prefix, sizeof(prefix), "%s/no/such/dir/cmd", dir);
	T_EQ_INT(cmdlog_new(prefix, 1 << 20, 1 << 20, &l), 0);
	e = event(1, "small");
	T_EQ_INT(cmdlog_append(l, e, strlen(e)), 0);
	big = malloc(70000);
	memset(big, 'x', 69999);
	big[69999] = '\0';
	T_EQ_INT(cmdlog_append(l, big, strlen(big)), -ENOENT);
	free(big);
	cmdlog_free(l);
	buf_reset(&out);
	t_tmpdir_free(dir);
}

/* Bytes of the files in dir. */
static uint64_t
dir_bytes(const char *dir)
{
	char path[8192];
	struct dirent *e;
	struct stat st;
	DIR *d = opendir(dir);
	uint64_t n = 0;

	while (d != NULL && (e = readdir(d)) != NULL) {
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		if (e->d_name[0] != '.' && stat(path, &st) == 0)
			n += (uint64_t)st.st_size;
	}
	if (d != NULL)
		closedir(d);
	return n;
}

/* cmdlog_size: the events in memory, then the files kept, after trims. */
static void
test_size(void)
{
	char *dir = t_tmpdir(), prefix[4200], text[32], *e;
	struct cmdlog *l = NULL;
	uint64_t mem = 0;

	snprintf(prefix, sizeof(prefix), "%s/cmd", dir);
	T_EQ_INT(cmdlog_new(prefix, 600, 0, &l), 0);
	T_EQ_INT(cmdlog_size(l), 0);
	for (uint64_t i = 1; i <= 40; i++) {
		snprintf(text, sizeof(text), "x%llu", (unsigned long long)i);
		e = event(i, text);
		T_EQ_INT(cmdlog_append(l, e, strlen(e)), 0);
		if (nfiles(dir) == 0) {		/* still in memory */
			mem += strlen(e);
			T_EQ_INT(cmdlog_size(l), mem);
		} else {
			T_EQ_INT(cmdlog_size(l), dir_bytes(dir));
		}
	}
	T_OK(mem > 0);
	T_EQ_INT(nfiles(dir), 3);	/* file 0 and the last two */
	cmdlog_end(l);
	T_EQ_INT(cmdlog_size(l), dir_bytes(dir));
	T_OK(cmdlog_size(l) > 0 && cmdlog_size(l) < 40 * 53);
	cmdlog_free(l);
	t_tmpdir_free(dir);
}

int
main(void)
{
	static const struct t_case cases[] = {
		{ "replay_wait_end", test_replay_wait_end },
		{ "event_larger_than_a_read", test_event_larger_than_a_read },
		{ "rotation_and_gap", test_rotation_and_gap },
		{ "files_wait_for_readers", test_files_wait_for_readers },
		{ "reader_outlives_its_log", test_reader_outlives_its_log },
		{ "size", test_size },
	};

	return T_RUN(cases);
}
