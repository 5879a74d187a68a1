/*
 * log.c -- levelled, line-oriented logging to stderr.
 *
 * Each call writes one whole line with a single write(2), so lines from
 * execd and from anything sharing its stderr never interleave mid-line.
 * Callers choose what to say; what they pass may hold client strings
 * (paths, names, URIs), so every control byte of a message is escaped
 * here, once for all: no client can forge a line or send terminal codes.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "log.h"

static enum log_level cur_level = LOG_L_INFO;
static const char *const names[] = {
	"notice", "error", "warn", "info", "debug"
};

static void	emit(enum log_level, const char *, int, const char *, va_list)
		    __attribute__((format(printf, 4, 0)));
static void	escape(char *, size_t, size_t *, const char *, size_t);

/* Set the most verbose level that is printed. */
void
log_init(enum log_level l)
{
	cur_level = l;
}

/*
 * Parse a level name (error, warn, info, debug) or one of upstream's
 * numbers (0-3 error, 4 warn, 5-6 info, 7 and up debug).
 */
int
log_level_parse(const char *s, enum log_level *out)
{
	char *end;
	long n;

	for (size_t i = LOG_L_ERROR; i < sizeof(names) / sizeof(names[0]);
	    i++) {
		if (strcasecmp(s, names[i]) == 0) {
			*out = (enum log_level)i;
			return 0;
		}
	}
	if (strcasecmp(s, "warning") == 0) {
		*out = LOG_L_WARN;
		return 0;
	}
	errno = 0;
	n = strtol(s, &end, 10);
	if (*s == '\0' || *end != '\0' || errno != 0 || n < 0)
		return -EINVAL;
	*out = n <= 3 ? LOG_L_ERROR : n == 4 ? LOG_L_WARN :
	    n <= 6 ? LOG_L_INFO : LOG_L_DEBUG;
	return 0;
}

/* True when lines of level l are printed. */
int
log_enabled(enum log_level l)
{
	return l <= cur_level;
}

/* Write one log line; the caller's errno is preserved. */
void
log_msg(enum log_level l, const char *func, int with_errno, const char *fmt,
    ...)
{
	va_list ap;
	int saved = errno;

	if (!log_enabled(l))
		return;
	va_start(ap, fmt);
	emit(l, func, with_errno ? saved : 0, fmt, ap);
	va_end(ap);
	errno = saved;
}

/* Log at error level and exit 1: start-up failures, broken invariants. */
void
fatal_msg(const char *func, int with_errno, const char *fmt, ...)
{
	va_list ap;
	int saved = errno;

	va_start(ap, fmt);
	emit(LOG_L_ERROR, func, with_errno ? saved : 0, fmt, ap);
	va_end(ap);
	exit(1);
}

/*
 * Append the n bytes of s to line (of size cap, filled to *len), with
 * every control byte and backslash escaped C-style: whatever a client
 * put in a message, it stays on this line and sends no terminal codes.
 */
static void
escape(char *line, size_t cap, size_t *len, const char *s, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	char e[4];
	size_t k;

	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		k = 0;
		if (c == '\\' || c == '\n' || c == '\r' || c == '\t') {
			e[k++] = '\\';
			e[k++] = c == '\n' ? 'n' : c == '\r' ? 'r' :
			    c == '\t' ? 't' : '\\';
		} else if (c < 0x20 || c == 0x7f) {
			e[k++] = '\\';
			e[k++] = 'x';
			e[k++] = hex[c >> 4];
			e[k++] = hex[c & 15];
		} else
			e[k++] = (char)c;
		if (*len + k > cap)
			return;
		memcpy(line + *len, e, k);
		*len += k;
	}
}

static void
emit(enum log_level l, const char *func, int err, const char *fmt, va_list ap)
{
	char line[2048], msg[2048];
	struct timespec ts;
	struct tm tm;
	size_t n, m;
	int r;

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	n = strftime(line, sizeof(line), "%Y-%m-%dT%H:%M:%S", &tm);
	r = snprintf(line + n, sizeof(line) - n, ".%03ldZ %s %s: ",
	    ts.tv_nsec / 1000000, names[l], func);
	if (r > 0)
		n += (size_t)r;
	r = vsnprintf(msg, sizeof(msg), fmt, ap);
	m = r < 0 ? 0 : (size_t)r < sizeof(msg) ? (size_t)r : sizeof(msg) - 1;
	if (err != 0 && m < sizeof(msg) - 1) {
		r = snprintf(msg + m, sizeof(msg) - m, ": %s", strerror(err));
		if (r > 0)
			m = m + (size_t)r < sizeof(msg) ? m + (size_t)r :
			    sizeof(msg) - 1;
	}
	/* Room for the newline is kept out of the escape's share. */
	if (n < sizeof(line) - 1)
		escape(line, sizeof(line) - 1, &n, msg, m);
	else
		n = sizeof(line) - 1;
	line[n++] = '\n';
	/* One write per line; a failed log write has nowhere to be reported. */
	if (write(STDERR_FILENO, line, n) < 0)
		return;
}
