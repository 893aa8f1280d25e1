/* The value of one hexadecimal digit, shared by every decoder of %XX
 * escapes and hex strings (SigV4, S3 XML, store keys, the redactor, the
 * Keychain's output). */
#ifndef NV_HEX_H
#define NV_HEX_H

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

#endif
