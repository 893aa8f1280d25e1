/* The bounded buffer (see buf.h). */
#include "core/buf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void nv_buf_init(nv_buf *b, size_t max)
{
	memset(b, 0, sizeof(*b));
	b->max = max;
}

void nv_buf_free(nv_buf *b)
{
	free(b->data);
	memset(b, 0, sizeof(*b));
}

int nv_buf_append(nv_buf *b, const void *data, size_t len)
{
	if (b->failed)
		return -1;
	if (len > b->max - b->len) {
		b->failed = 1;
		return -1;
	}
	if (b->len + len + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 256;
		while (cap < b->len + len + 1)
			cap *= 2;
		char *p = realloc(b->data, cap);
		if (!p) {
			b->failed = 1;
			return -1;
		}
		b->data = p;
		b->cap = cap;
	}
	memcpy(b->data + b->len, data, len);
	b->len += len;
	b->data[b->len] = '\0';
	return 0;
}

int nv_buf_puts(nv_buf *b, const char *s)
{
	return nv_buf_append(b, s, strlen(s));
}

int nv_buf_printf(nv_buf *b, const char *fmt, ...)
{
	char small[512];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(small, sizeof(small), fmt, ap);
	va_end(ap);
	if (n < 0)
		return -1;
	if ((size_t)n < sizeof(small))
		return nv_buf_append(b, small, (size_t)n);
	char *big = malloc((size_t)n + 1);
	if (!big) {
		b->failed = 1;
		return -1;
	}
	va_start(ap, fmt);
	vsnprintf(big, (size_t)n + 1, fmt, ap);
	va_end(ap);
	int rc = nv_buf_append(b, big, (size_t)n);
	free(big);
	return rc;
}

int nv_buf_sh_quote(nv_buf *b, const char *s)
{
	nv_buf_puts(b, "'");
	for (const char *p = s; *p; p++) {
		if (*p == '\'')
			nv_buf_puts(b, "'\\''");
		else
			nv_buf_append(b, p, 1);
	}
	return nv_buf_puts(b, "'");
}
