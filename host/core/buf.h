/* A growing byte buffer with a hard size cap (STYLE rule 6): appends past
 * the cap fail instead of growing without bound. */
#ifndef NV_BUF_H
#define NV_BUF_H

#include <stdarg.h>
#include <stddef.h>

typedef struct nv_buf {
	char *data; /* NUL-terminated when len > 0 */
	size_t len;
	size_t cap;
	size_t max; /* hard limit on len */
	int failed; /* an append hit the cap or ran out of memory */
} nv_buf;

void nv_buf_init(nv_buf *b, size_t max);
void nv_buf_free(nv_buf *b);
int nv_buf_append(nv_buf *b, const void *data, size_t len);
int nv_buf_puts(nv_buf *b, const char *s);
int nv_buf_printf(nv_buf *b, const char *fmt, ...)
#if defined(__GNUC__)
	__attribute__((format(printf, 2, 3)))
#endif
	;
/* Formats fmt into small (cap bytes) when it fits, else into a malloc'd
 * buffer; *text is the one used (the caller frees it when it is not
 * small), NULL when that allocation failed (small then holds the text cut
 * to cap - 1 bytes). Returns the length, or -1 when fmt cannot be
 * formatted. ap is left unused. */
int nv_vformat(char **text, char *small, size_t cap, const char *fmt,
	       va_list ap)
#if defined(__GNUC__)
	__attribute__((format(printf, 4, 0)))
#endif
	;
/* Appends s quoted for POSIX sh: 'it'\''s'. */
int nv_buf_sh_quote(nv_buf *b, const char *s);

#endif
