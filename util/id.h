/*
 * id.h -- the project's one generator of ids: random version 4 UUIDs,
 * written as 32 lowercase hex digits (id_hex: message, kernel, session
 * and command ids) or with the dashes of RFC 4122 (id_uuid: terminal
 * ids).  Each API keeps the form its clients parse; both come from
 * id_random.
 *
 * The bytes are the kernel's (getrandom without blocking, else
 * /dev/urandom, as libuuid takes them); a machine that has neither
 * cannot make ids and aborts, as must.h does.  Ids name objects: they are
 * unique, not secret.  Any thread.
 */
#ifndef ID_H
#define ID_H

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/random.h>
#include <unistd.h>

#define ID_HEX_LEN	32	/* id_hex's digits, without the NUL */
#define ID_UUID_LEN	36	/* id_uuid's characters, without the NUL */

/* n random bytes from fd (reads until done); 0 or -1. */
static inline int
id_read_(int fd, unsigned char *p, size_t n)
{
	ssize_t r;

	while (n > 0) {
		if ((r = read(fd, p, n)) < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		p += r;
		n -= (size_t)r;
	}
	return 0;
}

/* 16 random bytes with the version (4) and variant bits of RFC 4122. */
static inline void
id_random(unsigned char u[16])
{
	ssize_t r;
	int fd;

	do
		r = getrandom(u, 16, GRND_NONBLOCK);
	while (r < 0 && errno == EINTR);
	if (r != 16) {
		/* Not yet seeded at boot, or no getrandom: as libuuid. */
		if ((fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC)) < 0)
			abort();
		if (id_read_(fd, u, 16) < 0)
			abort();
		close(fd);
	}
	u[6] = (unsigned char)((u[6] & 0x0f) | 0x40);
	u[8] = (unsigned char)((u[8] & 0x3f) | 0x80);
}

/* A fresh id as 32 lowercase hex digits and a NUL. */
static inline void
id_hex(char out[ID_HEX_LEN + 1])
{
	static const char hex[] = "0123456789abcdef";
	unsigned char u[16];

	id_random(u);
	for (size_t i = 0; i < sizeof(u); i++) {
		out[2 * i] = hex[u[i] >> 4];
		out[2 * i + 1] = hex[u[i] & 0x0f];
	}
	out[ID_HEX_LEN] = '\0';
}

/* A fresh id as a lowercase UUID with dashes (8-4-4-4-12) and a NUL. */
static inline void
id_uuid(char out[ID_UUID_LEN + 1])
{
	static const char hex[] = "0123456789abcdef";
	unsigned char u[16];
	size_t o = 0;

	id_random(u);
	for (size_t i = 0; i < sizeof(u); i++) {
		if (i == 4 || i == 6 || i == 8 || i == 10)
			out[o++] = '-';
		out[o++] = hex[u[i] >> 4];
		out[o++] = hex[u[i] & 0x0f];
	}
	out[ID_UUID_LEN] = '\0';
}

#endif
