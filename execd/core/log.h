/*
 * log.h -- one line per event on stderr, OpenBSD log.c style.
 *
 * Lines read "LEVEL func: message".  log_warn() and fatal() append
 * strerror(errno).  Never pass request bodies, tokens or keys here.
 * Loop thread only (the daemon has no other thread that logs).
 */
#ifndef EXECD_LOG_H
#define EXECD_LOG_H

#include <stdarg.h>

/* NOTICE lines (start and stop) are printed at every level. */
enum log_level {
	LOG_L_NOTICE, LOG_L_ERROR, LOG_L_WARN, LOG_L_INFO, LOG_L_DEBUG
};

void	log_init(enum log_level);
/* A level name or upstream's number; 0 or -EINVAL. */
int	log_level_parse(const char *, enum log_level *);
int	log_enabled(enum log_level);
void	log_msg(enum log_level, const char *func, int with_errno,
	    const char *fmt, ...) __attribute__((format(printf, 4, 5)));
__attribute__((noreturn)) void fatal_msg(const char *func, int with_errno,
	    const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#define log_debug(...)	do { if (log_enabled(LOG_L_DEBUG)) \
	log_msg(LOG_L_DEBUG, __func__, 0, __VA_ARGS__); } while (0)
#define log_notice(...)	log_msg(LOG_L_NOTICE, __func__, 0, __VA_ARGS__)
#define log_info(...)	log_msg(LOG_L_INFO, __func__, 0, __VA_ARGS__)
#define log_warnx(...)	log_msg(LOG_L_WARN, __func__, 0, __VA_ARGS__)
#define log_warn(...)	log_msg(LOG_L_WARN, __func__, 1, __VA_ARGS__)
#define log_errorx(...)	log_msg(LOG_L_ERROR, __func__, 0, __VA_ARGS__)
#define fatal(...)	fatal_msg(__func__, 1, __VA_ARGS__)
#define fatalx(...)	fatal_msg(__func__, 0, __VA_ARGS__)

#endif
