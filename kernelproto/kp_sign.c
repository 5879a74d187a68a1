/*
 * kp_sign.c -- HMAC-SHA256 signatures of Jupyter messages.
 *
 * This file computes and checks the hex digest carried in the frame after
 * <IDS|MSG>, over the four serialised JSON parts, with OpenSSL 3's EVP_MAC
 * (the HMAC_CTX API is deprecated there).  It knows nothing of frames or
 * JSON (kp_wire.c) nor of where the key comes from (kp_connfile.c).  A
 * check decodes the given hex into bytes without branching on the digits
 * and compares with CRYPTO_memcmp, so its running time does not tell a
 * forger how many leading bytes were right.
 */
#include <errno.h>

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/params.h>

#include "kp_sign.h"

#define MAC_LEN	32	/* bytes of SHA-256 output */

static int	 mac(const unsigned char *, size_t, const struct kp_part *,
		    size_t, unsigned char *);
static unsigned	 unhex(unsigned char, unsigned *);

/* The raw HMAC-SHA256 of the parts under key into out (MAC_LEN bytes). */
static int
mac(const unsigned char *key, size_t keylen, const struct kp_part *parts,
    size_t nparts, unsigned char *out)
{
	static char digest[] = "SHA256";
	OSSL_PARAM params[2];
	EVP_MAC *m;
	EVP_MAC_CTX *ctx = NULL;
	size_t len = 0;
	int rc = -EIO;

	if ((m = EVP_MAC_fetch(NULL, "HMAC", NULL)) == NULL)
		return -EIO;
	if ((ctx = EVP_MAC_CTX_new(m)) == NULL)
		goto out;
	params[0] = OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST,
	    digest, 0);
	params[1] = OSSL_PARAM_construct_end();
	if (EVP_MAC_init(ctx, key, keylen, params) != 1)
		goto out;
	for (size_t i = 0; i < nparts; i++) {
		/* An empty part adds nothing; its pointer may be NULL. */
		if (parts[i].n > 0 &&
		    EVP_MAC_update(ctx, parts[i].p, parts[i].n) != 1)
			goto out;
	}
	if (EVP_MAC_final(ctx, out, &len, MAC_LEN) != 1 || len != MAC_LEN)
		goto out;
	rc = 0;
out:
	EVP_MAC_CTX_free(ctx);
	EVP_MAC_free(m);
	return rc;
}

/*
 * The value of hex digit c in either case; ORs 1 into *bad when c is not
 * one.  Comparisons and masks only, no branch on c.
 */
static unsigned
unhex(unsigned char c, unsigned *bad)
{
	unsigned d = (unsigned)c - '0';
	unsigned l = ((unsigned)c | 0x20) - 'a';
	unsigned isd = d < 10, isl = l < 6;

	*bad |= (isd | isl) ^ 1;
	return (d & (0u - isd)) | ((l + 10) & (0u - isl));
}

/* Lowercase hex HMAC-SHA256 of the parts into out; "" for an empty key. */
int
kp_sign(const unsigned char *key, size_t keylen,
    const struct kp_part *parts, size_t nparts, char *out)
{
	static const char hex[] = "0123456789abcdef";
	unsigned char raw[MAC_LEN];
	int rc;

	if (keylen == 0) {
		out[0] = '\0';
		return 0;
	}
	if ((rc = mac(key, keylen, parts, nparts, raw)) < 0)
		return rc;
	for (size_t i = 0; i < MAC_LEN; i++) {
		out[2 * i] = hex[raw[i] >> 4];
		out[2 * i + 1] = hex[raw[i] & 0x0f];
	}
	out[KP_SIG_HEXLEN] = '\0';
	return 0;
}

/* Whether sig is the parts' signature; constant time in sig's digits. */
bool
kp_sign_check(const unsigned char *key, size_t keylen,
    const struct kp_part *parts, size_t nparts, const char *sig,
    size_t siglen)
{
	unsigned char want[MAC_LEN], got[MAC_LEN];
	const unsigned char *s = (const unsigned char *)sig;
	unsigned bad = 0;
	bool ok;

	if (keylen == 0)
		return siglen == 0;
	/* The length is public (it is on the wire); the digits are not. */
	if (siglen != KP_SIG_HEXLEN || sig == NULL)
		return false;
	for (size_t i = 0; i < MAC_LEN; i++)
		got[i] = (unsigned char)(unhex(s[2 * i], &bad) << 4 |
		    unhex(s[2 * i + 1], &bad));
	if (mac(key, keylen, parts, nparts, want) < 0)
		return false;
	ok = (CRYPTO_memcmp(want, got, MAC_LEN) == 0) & (bad == 0);
	OPENSSL_cleanse(want, sizeof(want));
	return ok;
}
