/*
 * fs_regex.h -- a POSIX extended regular expression matcher whose cost
 * is linear in the text: no backtracking, no backreferences.
 *
 * Backs fs_grep.  The dialect is glibc's ERE in the C locale, byte by
 * byte: | * + ? {m} {m,} {m,n} {,n}, ( ), [ ] with ranges, [^ ], the
 * [:classes:], [=c=] and [.c.], . ^ $, and the GNU escapes \w \W \s \S
 * \b \B \< \> \` \'; any other escaped character stands for itself.
 * Backreferences (\1 to \9) are refused: no matcher runs them in bounded
 * time.  A compiled pattern has at most FS_REGEX_MAX_PROG instructions
 * (counted repetitions are expanded), so matching n bytes costs at most
 * about n * FS_REGEX_MAX_PROG steps.  POSIX only, no logging.  A compiled
 * pattern holds its own scratch space: one thread at a time per pattern.
 */
#ifndef FS_REGEX_H
#define FS_REGEX_H

#include <stddef.h>

#define FS_REGEX_ICASE		0x01	/* ASCII letters match either case */
#define FS_REGEX_MAX_LEN	4096	/* bytes of a pattern */
#define FS_REGEX_MAX_PROG	4000	/* instructions once compiled */
#define FS_REGEX_MAX_DEPTH	64	/* nested groups */
#define FS_REGEX_DUP_MAX	255	/* largest {m,n} bound */

struct fs_regex;

/*
 * Compile pattern.  0 with *out set, or -EINVAL with a message in err
 * (a syntax error, a backreference, or a pattern too large once
 * expanded: the message says which).
 */
int	fs_regex_compile(const char *pattern, unsigned flags,
	    struct fs_regex **out, char *err, size_t errlen);
/*
 * Called every FS_REGEX_CHECK bytes of a text (on the matching thread):
 * 0 to go on, or a negative errno to stop the match with it.
 */
typedef int fs_regex_check_cb(void *arg);
#define FS_REGEX_CHECK	4096

/*
 * Whether the n bytes at s hold a match (1) or not (0), or check's error;
 * a NUL byte ends the text early.  ^ and $ are the ends of the text.
 * check may be NULL.
 */
int	fs_regex_match(struct fs_regex *, const char *s, size_t n,
	    fs_regex_check_cb *check, void *arg);
/* Instructions in the compiled program (a cost measure). */
size_t	fs_regex_size(const struct fs_regex *);
void	fs_regex_free(struct fs_regex *);	/* NULL ok */

#endif
