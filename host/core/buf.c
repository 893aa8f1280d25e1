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

int nv_vformat(char **text, char *small, size_t cap, const char *fmt,
	       va_list ap)
{
	va_list copy;
	int n;

	*text = small;
	va_copy(copy, ap);
	n = vsnprintf(small, cap, fmt, copy);
	va_end(copy);
	if (n < 0 || (size_t)n < cap)
		return n;
	*text = malloc((size_t)n + 1);
	if (*text)
		vsnprintf(*text, (size_t)n + 1, fmt, ap);
	return n;
}

int nv_buf_printf(nv_buf *b, const char *fmt, ...)
{
	char small[512], *text;
	va_list ap;
	int n, rc;

	va_start(ap, fmt);
	n = nv_vformat(&text, small, sizeof(small), fmt, ap);
	va_end(ap);
	if (n < 0)
		return -1;
	if (!text) {
		b->failed = 1;
		return -1;
	}
	rc = nv_buf_append(b, text, (size_t)n);
	if (text != small)
		free(text);
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
