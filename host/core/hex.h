/* The value of one hexadecimal digit, shared by every decoder of %XX
 * escapes and hex strings (SigV4, S3 XML, store keys, the redactor, the
 * Keychain's output), the %XX escape of one byte for every encoder of
 * URLs, and the check of a value written in lowercase hex (a sha256
 * digest, a token). */
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

/* Writes c as its percent escape, uppercase as RFC 3986 advises ("%2F"),
 * into out[0..2] (no NUL). */
static inline void nv_hex_percent(char out[3], unsigned char c)
{
	static const char digits[] = "0123456789ABCDEF";

	out[0] = '%';
	out[1] = digits[c >> 4];
	out[2] = digits[c & 15];
}

/* 1 when s is exactly len lowercase hexadecimal digits, 0 otherwise (s
 * NULL included). */
static inline int nv_hex_is_lower(const char *s, size_t len)
{
	if (!s)
		return 0;
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];
		if (!(c >= '0' && c <= '9') && !(c >= 'a' && c <= 'f'))
			return 0;
	}
	return s[len] == '\0';
}

#endif
