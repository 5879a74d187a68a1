/*
 * startping -- the small client bench/run.sh needs, in C so that its own
 * start-up cost does not hide what it measures.
 *
 *   startping port
 *       print a free TCP port on 127.0.0.1 (bind port 0, read it back).
 *   startping wait PORT PATH TIMEOUT_MS
 *       poll GET PATH until it answers 200; exit 1 on timeout.
 *   startping get PORT PATH N
 *       N sequential GETs, one connection each; exit 1 unless all are 200.
 *   startping start RUNS PORT PATH -- ARGV...
 *       RUNS times: fork/exec ARGV, poll connect + GET PATH until 200,
 *       SIGTERM it and reap it.  Prints "median_us min_us max_us bad_exits",
 *       where bad_exits counts runs whose process did not exit 0.
 *
 * A response counts when its status line says 200 and its header block has
 * been read in full; the client closes first, so no TIME_WAIT is left on the
 * server's port and the next run can bind it again.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define POLL_GAP_NS 100000L /* 0.1 ms between attempts */
#define RUN_TIMEOUT_MS 5000
#define STOP_TIMEOUT_MS 5000

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void nap(long ns)
{
	struct timespec ts = {0, ns};

	while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
		;
}

static int parse_port(const char *s)
{
	char *end;
	long v = strtol(s, &end, 10);

	if (*s == '\0' || *end != '\0' || v < 1 || v > 65535) {
		fprintf(stderr, "startping: bad port '%s'\n", s);
		exit(2);
	}
	return (int)v;
}

static long parse_num(const char *s)
{
	char *end;
	long v = strtol(s, &end, 10);

	if (*s == '\0' || *end != '\0' || v < 1) {
		fprintf(stderr, "startping: bad number '%s'\n", s);
		exit(2);
	}
	return v;
}

/*
 * One GET on a new connection.  Returns 1 on a 200 whose headers arrived
 * before deadline_ns, 0 on any other answer, -1 when nothing is listening
 * yet (connection refused or reset) or the deadline passed.
 */
static int get_once(int port, const char *path, int64_t deadline_ns)
{
	struct sockaddr_in sa;
	char req[512], buf[4096];
	size_t got = 0;
	int fd, one = 1, rc = -1;

	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	memset(&sa, 0, sizeof sa);
	sa.sin_family = AF_INET;
	sa.sin_port = htons((uint16_t)port);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0)
		goto out;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	snprintf(req, sizeof req,
		 "GET %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n\r\n", path, port);
	if (send(fd, req, strlen(req), MSG_NOSIGNAL) != (ssize_t)strlen(req))
		goto out;
	for (;;) {
		struct pollfd pfd = {fd, POLLIN, 0};
		int64_t left = (deadline_ns - now_ns()) / 1000000;
		ssize_t n;

		if (left < 0)
			goto out;
		if (poll(&pfd, 1, (int)left + 1) <= 0)
			continue;
		n = recv(fd, buf + got, sizeof buf - 1 - got, 0);
		if (n <= 0)
			goto out; /* closed or reset before a full header */
		got += (size_t)n;
		buf[got] = '\0';
		if (strstr(buf, "\r\n\r\n") != NULL || got == sizeof buf - 1)
			break;
	}
	rc = (strncmp(buf, "HTTP/1.", 7) == 0 && strncmp(buf + 8, " 200", 4) == 0)
		     ? 1
		     : 0;
out:
	close(fd);
	return rc;
}

/* Poll until a 200; returns ns waited, or -1 on timeout or a non-200. */
static int64_t wait_200(int port, const char *path, int64_t t0, long timeout_ms,
			pid_t child)
{
	int64_t deadline = t0 + (int64_t)timeout_ms * 1000000;

	while (now_ns() < deadline) {
		int r = get_once(port, path, deadline);

		if (r == 1)
			return now_ns() - t0;
		if (r == 0) {
			fprintf(stderr, "startping: GET %s: not 200\n", path);
			return -1;
		}
		if (child > 0 && waitpid(child, NULL, WNOHANG) == child) {
			fprintf(stderr, "startping: process exited before answering\n");
			return -2;
		}
		nap(POLL_GAP_NS);
	}
	fprintf(stderr, "startping: no 200 on port %d within %ld ms\n", port,
		timeout_ms);
	return -1;
}

/* SIGTERM, then SIGKILL after STOP_TIMEOUT_MS; returns the wait status. */
static int stop_child(pid_t pid)
{
	int64_t deadline = now_ns() + (int64_t)STOP_TIMEOUT_MS * 1000000;
	int st = 0;

	kill(pid, SIGTERM);
	for (;;) {
		pid_t r = waitpid(pid, &st, WNOHANG);

		if (r == pid || (r < 0 && errno != EINTR))
			return st;
		if (now_ns() > deadline) {
			fprintf(stderr, "startping: pid %d ignored SIGTERM, killing\n",
				(int)pid);
			kill(pid, SIGKILL);
			waitpid(pid, &st, 0);
			return -1;
		}
		nap(1000000);
	}
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x > y) - (x < y);
}

static int cmd_port(void)
{
	struct sockaddr_in sa;
	socklen_t len = sizeof sa;
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	memset(&sa, 0, sizeof sa);
	sa.sin_family = AF_INET;
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof sa) != 0 ||
	    getsockname(fd, (struct sockaddr *)&sa, &len) != 0) {
		perror("startping: port");
		return 1;
	}
	printf("%d\n", ntohs(sa.sin_port));
	close(fd);
	return 0;
}

static int cmd_start(long runs, int port, const char *path, char **argv)
{
	int64_t *t = calloc((size_t)runs, sizeof *t);
	long i, bad = 0;
	int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);

	if (t == NULL || devnull < 0) {
		perror("startping");
		return 1;
	}
	for (i = 0; i < runs; i++) {
		int64_t t0 = now_ns();
		pid_t pid = fork();
		int st;

		if (pid < 0) {
			perror("startping: fork");
			return 1;
		}
		if (pid == 0) {
			dup2(devnull, 0);
			dup2(devnull, 1);
			dup2(devnull, 2);
			execv(argv[0], argv);
			_exit(127);
		}
		t[i] = wait_200(port, path, t0, RUN_TIMEOUT_MS, pid);
		if (t[i] < 0) {
			if (t[i] != -2)
				stop_child(pid);
			fprintf(stderr, "startping: run %ld of %s failed\n", i + 1,
				argv[0]);
			return 1;
		}
		st = stop_child(pid);
		if (!(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0))
			bad++;
	}
	qsort(t, (size_t)runs, sizeof *t, cmp_i64);
	printf("%lld %lld %lld %ld\n",
	       (long long)((runs % 2) ? t[runs / 2]
				      : (t[runs / 2 - 1] + t[runs / 2]) / 2) /
		       1000,
	       (long long)t[0] / 1000, (long long)t[runs - 1] / 1000, bad);
	free(t);
	return 0;
}

static void usage(void)
{
	fprintf(stderr,
		"usage: startping port\n"
		"       startping wait PORT PATH TIMEOUT_MS\n"
		"       startping get PORT PATH N\n"
		"       startping start RUNS PORT PATH -- ARGV...\n");
	exit(2);
}

int main(int argc, char **argv)
{
	signal(SIGPIPE, SIG_IGN);
	if (argc >= 2 && strcmp(argv[1], "port") == 0)
		return cmd_port();
	if (argc == 5 && strcmp(argv[1], "wait") == 0)
		return wait_200(parse_port(argv[2]), argv[3], now_ns(),
				parse_num(argv[4]), 0) < 0;
	if (argc == 5 && strcmp(argv[1], "get") == 0) {
		int port = parse_port(argv[2]);
		long i, n = parse_num(argv[4]);

		for (i = 0; i < n; i++)
			if (get_once(port, argv[3],
				     now_ns() + (int64_t)RUN_TIMEOUT_MS * 1000000) !=
			    1) {
				fprintf(stderr, "startping: GET %ld of %ld failed\n",
					i + 1, n);
				return 1;
			}
		return 0;
	}
	if (argc >= 7 && strcmp(argv[1], "start") == 0 &&
	    strcmp(argv[5], "--") == 0)
		return cmd_start(parse_num(argv[2]), parse_port(argv[3]), argv[4],
				 argv + 6);
	usage();
	return 2;
}
