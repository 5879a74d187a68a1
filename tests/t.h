/*
 * t.h -- the smallest test harness that does the job.
 *
 * A unit test file defines static test functions and lists them in a table
 * handed to T_RUN().  Each check prints the failing expression with its file
 * and line; the runner prints one line per test and, last, the
 * "N passed, N failed" line that CI reads.  Single-threaded; no fork.
 * Temporary directories and files for a test: t_tmp.h.
 */
#ifndef T_H
#define T_H

#include <stdio.h>
#include <string.h>

static int t_fail_;

#define T_OK(e) do { if (!(e)) { t_fail_ = 1; fprintf(stderr, \
	"  %s:%d: check failed: %s\n", __FILE__, __LINE__, #e); } } while (0)
#define T_EQ_INT(a, b) do { long long a_ = (a), b_ = (b); if (a_ != b_) { \
	t_fail_ = 1; fprintf(stderr, "  %s:%d: %s == %lld, expected %lld\n", \
	__FILE__, __LINE__, #a, a_, b_); } } while (0)
#define T_EQ_STR(a, b) do { const char *a_ = (a), *b_ = (b); \
	if (a_ == NULL || b_ == NULL || strcmp(a_, b_) != 0) { t_fail_ = 1; \
	fprintf(stderr, "  %s:%d: %s == \"%s\", expected \"%s\"\n", __FILE__, \
	__LINE__, #a, a_ ? a_ : "(null)", b_ ? b_ : "(null)"); } } while (0)

struct t_case {
	const char	*name;
	void		(*fn)(void);
};

#define T_RUN(cases) t_run_((cases), sizeof(cases) / sizeof((cases)[0]))

static inline int
t_run_(const struct t_case *c, size_t n)
{
	int passed = 0, failed = 0;

	for (size_t i = 0; i < n; i++) {
		t_fail_ = 0;
		c[i].fn();
		printf("%s %s\n", t_fail_ ? "FAIL" : "PASS", c[i].name);
		if (t_fail_)
			failed++;
		else
			passed++;
	}
	printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}

#endif /* T_H */
