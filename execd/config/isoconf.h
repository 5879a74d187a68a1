/*
 * isoconf.h -- the isolation configuration file (--isolation-config,
 * upstream's TOML; docs/isolation.md): what of it maps onto execd's own
 * options, what is refused, and what is only warned about.
 */
#ifndef EXECD_ISOCONF_H
#define EXECD_ISOCONF_H

#include <stdbool.h>
#include <stddef.h>

#define ISOCONF_WARNINGS	8

struct isoconf {
	char		*upper_root;	/* NULL: not in the file */
	bool		 has_upper_max;
	unsigned long long upper_max;	/* upper_max_bytes */
	bool		 has_diff_max;
	unsigned long long diff_max;	/* diff_max_bytes */
	bool		 has_allowed;
	char		**allowed;	/* allowed_writable, nallowed of them */
	size_t		 nallowed;
	char		*caps;		/* [hardening] keep_capabilities, as
					   --capabilities's list; NULL: none */
	/* "FILE:LINE: ..." for what the file sets that execd does not do
	 * (logged at start). */
	char		 warn[ISOCONF_WARNINGS][320];
	size_t		 nwarn;
};

/*
 * Read path into c (zeroed first).  0, or -EINVAL with "PATH:LINE: why"
 * in err (a key of another type, a value out of range, an unknown key
 * or table, a setting execd cannot honour); -errno when the file cannot
 * be read.
 */
int	isoconf_load(const char *path, struct isoconf *c, char *err,
	    size_t errlen);
/* The same, of the text s[0..n), named path in messages. */
int	isoconf_parse(const char *path, const char *s, size_t n,
	    struct isoconf *c, char *err, size_t errlen);
void	isoconf_free(struct isoconf *c);

#endif
