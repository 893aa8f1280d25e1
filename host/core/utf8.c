/* Strict UTF-8 validation (see utf8.h). */
#include "core/utf8.h"

#include <stdio.h>
#include <string.h>

size_t nv_utf8_invalid_at(const char *s, size_t len)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0;

	while (i < len) {
		unsigned c = p[i], n, cp;

		if (c < 0x80) {
			i++;
			continue;
		}
		if (c >= 0xc2 && c <= 0xdf)
			n = 1, cp = c & 0x1f;
		else if (c >= 0xe0 && c <= 0xef)
			n = 2, cp = c & 0x0f;
		else if (c >= 0xf0 && c <= 0xf4)
			n = 3, cp = c & 0x07;
		else
			return i; /* a continuation byte, 0xc0/0xc1, 0xf5.. */
		if (len - i <= n)
			return i; /* cut short */
		for (unsigned k = 1; k <= n; k++) {
			if ((p[i + k] & 0xc0) != 0x80)
				return i;
			cp = (cp << 6) | (p[i + k] & 0x3f);
		}
		if ((n == 2 &&
		     (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) ||
		    (n == 3 && (cp < 0x10000 || cp > 0x10ffff)))
			return i; /* overlong, a surrogate, beyond U+10FFFF */
		i += n + 1;
	}
	return NV_UTF8_VALID;
}

void nv_utf8_show(char *out, size_t cap, const char *s, size_t len)
{
	size_t o = 0, i;

	if (cap == 0)
		return;
	for (i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];
		size_t need = c >= 0x20 && c < 0x7f && c != '\\' ? 1 : 4;
		if (o + need + 4 > cap) /* room for "..." and the NUL */
			break;
		if (need == 1)
			out[o++] = (char)c;
		else
			o += (size_t)snprintf(out + o, cap - o, "\\x%02x", c);
	}
	if (i < len && o + 4 <= cap) {
		memcpy(out + o, "...", 3);
		o += 3;
	}
	out[o < cap ? o : cap - 1] = '\0';
}
