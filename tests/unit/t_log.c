/*
 * t_log.c -- log lines: one line per call, whatever the message holds.
 */
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include "../../execd/core/log.h"
#include "../t.h"

/* Log "word s tail" with stderr sent to a file; what was written. */
static char *
logged(const char *word, const char *s, const char *tail)
{
	static char out[4096];
	char path[] = "/tmp/t_log.XXXXXX";
	int fd, saved;
	ssize_t n;

	fd = mkstemp(path);
	T_OK(fd >= 0);
	unlink(path);
	saved = dup(STDERR_FILENO);
	dup2(fd, STDERR_FILENO);
	log_msg(LOG_L_INFO, "t", 0, "%s%s%s", word, s, tail);
	dup2(saved, STDERR_FILENO);
	close(saved);
	n = pread(fd, out, sizeof(out) - 1, 0);
	close(fd);
	out[n > 0 ? n : 0] = '\0';
	return out;
}

/* The text after "info t: " on the one line. */
static const char *
message(const char *line)
{
	const char *m = strstr(line, " info t: ");

	return m != NULL ? m + 9 : "";
}

/* A client's newline cannot start a line of its own. */
static void
t_newline_is_escaped(void)
{
	const char *out = logged("signal ",
	    "X\n2099-01-01T00:00:00.000Z crit forged: log line", " ignored");

	T_EQ_STR(message(out), "signal X\\n2099-01-01T00:00:00.000Z crit "
	    "forged: log line ignored\n");
	T_OK(strchr(out, '\n') == out + strlen(out) - 1);
}

/* Escape sequences and carriage returns reach no terminal. */
static void
t_control_bytes_are_escaped(void)
{
	const char *out = logged("GET ", "/\x1b[2J\rx\x7f\ty", " 401");

	T_EQ_STR(message(out), "GET /\\x1b[2J\\rx\\x7f\\ty 401\n");
}

/* A backslash is escaped too, so an escape in the log is always ours. */
static void
t_backslash_is_escaped(void)
{
	T_EQ_STR(message(logged("path ", "a\\nb", "")), "path a\\\\nb\n");
}

/* UTF-8 and other bytes above 0x7f pass as they are. */
static void
t_utf8_passes(void)
{
	T_EQ_STR(message(logged("file ", "caf\xc3\xa9 \xff", "")),
	    "file caf\xc3\xa9 \xff\n");
}

/* A message longer than a line is cut, and still ends the line. */
static void
t_long_message_is_one_line(void)
{
	char big[6000];
	const char *out;

	memset(big, '\n', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	out = logged("", big, "");
	T_OK(strlen(out) > 1000);
	T_OK(strchr(out, '\n') == out + strlen(out) - 1);
}

int
main(void)
{
	static const struct t_case cases[] = {
		{ "newline_is_escaped", t_newline_is_escaped },
		{ "control_bytes_are_escaped", t_control_bytes_are_escaped },
		{ "backslash_is_escaped", t_backslash_is_escaped },
		{ "utf8_passes", t_utf8_passes },
		{ "long_message_is_one_line", t_long_message_is_one_line },
	};

	log_init(LOG_L_INFO);
	return T_RUN(cases);
}
