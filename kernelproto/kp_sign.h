/*
 * kp_sign.h -- HMAC-SHA256 message signatures (the only scheme we speak).
 *
 * The signature covers the four serialised JSON parts, in order: header,
 * parent_header, metadata, content.  An empty key means "no signing", as
 * Jupyter allows: the signature is then the empty string.  Pure; any
 * thread.
 */
#ifndef KP_SIGN_H
#define KP_SIGN_H

#include <stdbool.h>
#include <stddef.h>

#define KP_SIG_HEXLEN	64

struct kp_part {
	const void	*p;
	size_t		 n;
};

/*
 * Hex HMAC-SHA256 of the parts under key into out (65 bytes, NUL-ended;
 * "" when keylen is 0).  0 or -EIO if OpenSSL failed.
 */
int	kp_sign(const unsigned char *key, size_t keylen,
	    const struct kp_part *parts, size_t nparts, char *out);

/*
 * Whether sig (siglen bytes, hex, either case) is the signature of the
 * parts.  Constant time in the signature's content (CRYPTO_memcmp).  With
 * an empty key, only an empty signature is valid.
 */
bool	kp_sign_check(const unsigned char *key, size_t keylen,
	    const struct kp_part *parts, size_t nparts, const char *sig,
	    size_t siglen);

#endif
