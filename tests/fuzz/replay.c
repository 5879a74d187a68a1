/*
 * replay.c -- run a fuzz target over its corpus without libFuzzer.
 *
 * Linked with one tests/fuzz/fuzz_<t>.c into replay_<t>, so that every
 * seed and every crash ever found is run again by `make check`, under gcc
 * and the sanitizers (SQLite's fuzzcheck).  Each argument is a file or a
 * directory, read recursively in name order; each counts as one test and
 * gets one line, "PASS replay fuzz_<t> (N inputs)".  The last line is
 * "N passed, N failed".  A target reports a broken invariant by aborting:
 * the input that did it is then named on stderr before the process dies.
 * Nothing here knows what the target tests.
 */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);
/* Sanitizer runtimes call this back before they exit; absent otherwise. */
void	__sanitizer_set_death_callback(void (*)(void)) __attribute__((weak));

static char	 target[64] = "fuzz";
static char	 current[4096];		/* the input being run, for reports */
static int	 passed, failed;

static void	 report_death(void);
static void	 on_fatal(int);
static int	 run_file(const char *, size_t *);
static int	 run_path(const char *, size_t *);
static int	 cmp_names(const void *, const void *);

/* Name the input that killed us, with a summary line for the runner. */
static void
report_death(void)
{
	char line[4096 + 256];
	int n;

	if (current[0] == '\0')
		return;
	n = snprintf(line, sizeof(line), "FAIL replay %s: %s\n"
	    "%d passed, %d failed\n", target, current, passed, failed + 1);
	if (n > 0)
		(void)!write(STDOUT_FILENO, line, (size_t)n < sizeof(line) ?
		    (size_t)n : sizeof(line) - 1);
	current[0] = '\0';
}

/* A crash or abort() in the target: report, then die of the signal. */
static void
on_fatal(int sig)
{
	report_death();
	signal(sig, SIG_DFL);
	raise(sig);
}

/* Run the target once on the contents of path; 0, or -1 if unreadable. */
static int
run_file(const char *path, size_t *count)
{
	FILE *f = fopen(path, "rb");
	struct stat st;
	uint8_t *buf;
	size_t n;

	if (f == NULL || fstat(fileno(f), &st) < 0) {
		fprintf(stderr, "replay: %s: %s\n", path, strerror(errno));
		if (f != NULL)
			fclose(f);
		return -1;
	}
	/* Exactly the file's size, so a sanitizer sees any over-read. */
	n = (size_t)st.st_size;
	buf = malloc(n > 0 ? n : 1);
	if (buf == NULL || fread(buf, 1, n, f) != n) {
		fprintf(stderr, "replay: %s: read failed\n", path);
		free(buf);
		fclose(f);
		return -1;
	}
	fclose(f);
	snprintf(current, sizeof(current), "%s", path);
	LLVMFuzzerTestOneInput(buf, n);
	current[0] = '\0';
	free(buf);
	(*count)++;
	return 0;
}

static int
cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Run every file under path, in name order; 0, or -1 on any error. */
static int
run_path(const char *path, size_t *count)
{
	struct stat st;
	struct dirent *de;
	DIR *d;
	char **names = NULL, *sub;
	size_t n = 0, cap = 0;
	int rc = 0;

	if (stat(path, &st) < 0) {
		fprintf(stderr, "replay: %s: %s\n", path, strerror(errno));
		return -1;
	}
	if (!S_ISDIR(st.st_mode))
		return run_file(path, count);
	if ((d = opendir(path)) == NULL) {
		fprintf(stderr, "replay: %s: %s\n", path, strerror(errno));
		return -1;
	}
	while ((de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 ||
		    strcmp(de->d_name, "..") == 0)
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 64;
			names = realloc(names, cap * sizeof(*names));
			if (names == NULL)
				abort();
		}
		if ((names[n++] = strdup(de->d_name)) == NULL)
			abort();
	}
	closedir(d);
	if (n > 0)
		qsort(names, n, sizeof(*names), cmp_names);
	for (size_t i = 0; i < n; i++) {
		if (asprintf(&sub, "%s/%s", path, names[i]) < 0)
			abort();
		if (run_path(sub, count) < 0)
			rc = -1;
		free(sub);
		free(names[i]);
	}
	free(names);
	return rc;
}

int
main(int argc, char **argv)
{
	const char *base = strrchr(argv[0], '/');
	size_t count;

	base = base != NULL ? base + 1 : argv[0];
	if (strncmp(base, "replay_", 7) == 0)
		snprintf(target, sizeof(target), "fuzz_%s", base + 7);
	else
		snprintf(target, sizeof(target), "%s", base);
	if (argc < 2) {
		fprintf(stderr, "usage: %s corpus-dir-or-file ...\n", base);
		return 2;
	}
	if (__sanitizer_set_death_callback != NULL)
		__sanitizer_set_death_callback(report_death);
	signal(SIGABRT, on_fatal);
	signal(SIGSEGV, on_fatal);
	signal(SIGBUS, on_fatal);
	signal(SIGFPE, on_fatal);
	signal(SIGILL, on_fatal);

	for (int i = 1; i < argc; i++) {
		count = 0;
		if (run_path(argv[i], &count) < 0 || count == 0) {
			printf("FAIL replay %s %s (%zu inputs%s)\n", target,
			    argv[i], count, count == 0 ? ", none found" :
			    ", some unreadable");
			failed++;
		} else if (argc > 2) {
			printf("PASS replay %s %s (%zu inputs)\n", target,
			    argv[i], count);
			passed++;
		} else {
			printf("PASS replay %s (%zu inputs)\n", target, count);
			passed++;
		}
		fflush(stdout);
	}
	printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
