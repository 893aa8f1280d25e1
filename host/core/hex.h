/* The value of one hexadecimal digit, shared by every decoder of %XX
 * escapes and hex strings (SigV4, S3 XML, store keys, the redactor, the
 * Keychain's output), and the check of a lowercase hex string (digests). */
#ifndef NV_HEX_H
#define NV_HEX_H

#include <stddef.h>

/* 0..15, or -1 when c is not a hexadecimal digit (either case). */
static inline int nv_hex_value(unsigned char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* 1 when s (may be NULL) is exactly len lowercase hexadecimal digits, as
 * a sha256 is written; 0 otherwise. */
static inline int nv_hex_is_lower(const char *s, size_t len)
{
	size_t i;

	if (!s)
		return 0;
	for (i = 0; i < len; i++)
		if (!((s[i] >= '0' && s[i] <= '9') ||
		      (s[i] >= 'a' && s[i] <= 'f')))
			return 0;
	return s[i] == '\0';
}

#endif
