/*
 * relay -- the least a user-space HTTP proxy can do, as a baseline for the
 * /proxy download row of bench/run.sh.
 *
 *   relay LISTEN_PORT BACKEND_PORT
 *
 * Serves one connection at a time on 127.0.0.1:LISTEN_PORT: reads the
 * request head, sends it to 127.0.0.1:BACKEND_PORT with "Connection:
 * close" added, then moves the backend's answer to the client through a
 * pipe with splice(2), blocking, until the backend closes.  No parsing,
 * no event loop, no limits: what is left is the cost of the hop itself
 * (a receive and a send over loopback per byte), which execd's /proxy
 * pays as well.  Runs until killed.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define HEAD_MAX	8192
#define PIPE_SIZE	(256 << 10)

static const char close_hdr[] = "Connection: close\r\n\r\n";

static struct sockaddr_in
loopback(int port)
{
	struct sockaddr_in a = { .sin_family = AF_INET,
	    .sin_port = htons((uint16_t)port),
	    .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };

	return a;
}

/* Read up to the end of the head; returns its length without the last
 * CRLF, or -1. */
static ssize_t
read_head(int fd, char *buf, size_t cap)
{
	size_t len = 0;
	ssize_t n;
	char *end;

	while (len < cap - 1) {
		if ((n = read(fd, buf + len, cap - 1 - len)) <= 0)
			return -1;
		len += (size_t)n;
		buf[len] = '\0';
		if ((end = strstr(buf, "\r\n\r\n")) != NULL)
			return end + 2 - buf;
	}
	return -1;
}

static void
serve(int c, int backend_port, int pipe_fd[2])
{
	char head[HEAD_MAX + sizeof(close_hdr)];
	struct sockaddr_in a = loopback(backend_port);
	ssize_t hl, n, k;
	int b;

	if ((hl = read_head(c, head, HEAD_MAX)) < 0)
		return;
	memcpy(head + hl, close_hdr, sizeof(close_hdr) - 1);
	hl += (ssize_t)sizeof(close_hdr) - 1;
	if ((b = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0)
		return;
	if (connect(b, (struct sockaddr *)&a, sizeof(a)) < 0 ||
	    write(b, head, (size_t)hl) != hl) {
		close(b);
		return;
	}
	while ((n = splice(b, NULL, pipe_fd[1], NULL, PIPE_SIZE,
	    SPLICE_F_MOVE)) > 0)
		for (; n > 0; n -= k)
			if ((k = splice(pipe_fd[0], NULL, c, NULL, (size_t)n,
			    SPLICE_F_MOVE)) <= 0)
				goto out;
out:
	close(b);
}

int
main(int argc, char **argv)
{
	struct sockaddr_in a;
	int l, c, one = 1, pipe_fd[2];

	if (argc != 3) {
		fprintf(stderr, "usage: relay LISTEN_PORT BACKEND_PORT\n");
		return 2;
	}
	a = loopback(atoi(argv[1]));
	if ((l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0 ||
	    setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
	    bind(l, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(l, 16) < 0) {
		perror("relay: listen");
		return 1;
	}
	for (;;) {
		if ((c = accept4(l, NULL, NULL, SOCK_CLOEXEC)) < 0)
			continue;
		/* A pipe per connection: one cut short leaves bytes in it. */
		if (pipe2(pipe_fd, O_CLOEXEC) == 0) {
			(void)fcntl(pipe_fd[1], F_SETPIPE_SZ, PIPE_SIZE);
			serve(c, atoi(argv[2]), pipe_fd);
			close(pipe_fd[0]);
			close(pipe_fd[1]);
		}
		close(c);
	}
}
