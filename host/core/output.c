/* The output module (see output.h). Writes are unbuffered beyond stdio's own
 * so that a job log followed by `navette logs --follow` appears promptly. */
#include "core/output.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/buf.h"

static nv_out_filter_fn out_filter;
static nv_out_sink_fn out_sink;
static void *out_sink_payload;

void nv_out_set_filter(nv_out_filter_fn filter)
{
	out_filter = filter;
}

void nv_out_set_sink(nv_out_sink_fn sink, void *payload)
{
	fflush(stdout);
	fflush(stderr);
	out_sink = sink;
	out_sink_payload = sink ? payload : NULL;
}

bool nv_out_sink_is(nv_out_sink_fn sink, void *payload)
{
	return out_sink == sink && out_sink_payload == payload;
}

static FILE *stream_file(int stream)
{
	return stream == NV_OUT_STDERR ? stderr : stdout;
}

static void emit_raw(int stream, const char *buf, size_t len)
{
	FILE *f = stream_file(stream);

	if (out_sink) {
		if (len)
			out_sink(stream, buf, len, out_sink_payload);
		return;
	}

	if (len)
		fwrite(buf, 1, len, f);
	if (stream == NV_OUT_STDERR || (len && buf[len - 1] == '\n'))
		fflush(f);
}

/* Length of the valid UTF-8 sequence at s (lead byte c), 0 if invalid
 * or cut short; *cp gets its code point. */
static size_t utf8_char(const unsigned char *s, size_t len, uint32_t *cp)
{
	unsigned c = s[0];
	size_t n;
	unsigned lo = 0x80, hi = 0xbf;

	if (c >= 0xc2 && c <= 0xdf) {
		n = 2;
		*cp = c & 0x1f;
	} else if (c >= 0xe0 && c <= 0xef) {
		n = 3;
		*cp = c & 0x0f;
		if (c == 0xe0)
			lo = 0xa0; /* overlong */
		else if (c == 0xed)
			hi = 0x9f; /* surrogates */
	} else if (c >= 0xf0 && c <= 0xf4) {
		n = 4;
		*cp = c & 0x07;
		if (c == 0xf0)
			lo = 0x90; /* overlong */
		else if (c == 0xf4)
			hi = 0x8f; /* past U+10FFFF */
	} else {
		return 0;
	}
	if (len < n)
		return 0;
	for (size_t k = 1; k < n; k++) {
		unsigned b = s[k];
		if (b < (k == 1 ? lo : 0x80) || b > (k == 1 ? hi : 0xbf))
			return 0;
		*cp = *cp << 6 | (b & 0x3f);
	}
	return n;
}

/* Code points a terminal acts on: C1 controls, separators, bidi. */
static int term_control(uint32_t cp)
{
	return (cp >= 0x80 && cp <= 0x9f) || cp == 0x2028 || cp == 0x2029 ||
	       (cp >= 0x202a && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069);
}

size_t nv_out_term_char(const char *s, size_t len, char esc[NV_OUT_ESCAPE_MAX],
			size_t *shown)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *u = (const unsigned char *)s;
	unsigned c = u[0];
	uint32_t cp = 0;
	size_t n;

	*shown = 0;
	if (c >= 0x80) {
		n = utf8_char(u, len, &cp);
		if (n && !term_control(cp))
			return n;
		if (n) {
			*shown = (size_t)snprintf(esc, NV_OUT_ESCAPE_MAX,
						  "\\u%04x", (unsigned)cp);
			return n;
		}
	} else if ((c >= 0x20 && c != 0x7f) || c == '\t' || c == '\n') {
		return 1;
	}
	esc[0] = '\\';
	esc[1] = 'x';
	esc[2] = hex[c >> 4];
	esc[3] = hex[c & 15];
	*shown = 4;
	return 1;
}

/* emit_raw() with every character a terminal would act on escaped. */
static void emit_escaped(int stream, const char *buf, size_t len)
{
	size_t i = 0, start = 0;

	while (i < len) {
		char esc[NV_OUT_ESCAPE_MAX];
		size_t shown,
			n = nv_out_term_char(buf + i, len - i, esc, &shown);
		if (shown) {
			if (i > start)
				emit_raw(stream, buf + start, i - start);
			emit_raw(stream, esc, shown);
			start = i + n;
		}
		i += n;
	}
	emit_raw(stream, buf + start, len - start);
}

static void write_through(int stream, const char *buf, size_t len,
			  nv_out_emit_fn emit)
{
	if (out_filter)
		out_filter(stream, buf, len, emit);
	else
		emit(stream, buf, len);
}

void nv_out_write(int stream, const char *buf, size_t len)
{
	write_through(stream, buf, len,
		      stream == NV_OUT_STDERR ? emit_escaped : emit_raw);
}

void nv_out_write_raw(int stream, const char *buf, size_t len)
{
	write_through(stream, buf, len, emit_raw);
}

void nv_out_vprintf(int stream, const char *fmt, va_list ap)
{
	char small[1024], *text;
	int n = nv_vformat(&text, small, sizeof(small), fmt, ap);

	if (n < 0)
		return;
	if (!text) {
		nv_out_write(stream, small, sizeof(small) - 1);
		return;
	}
	nv_out_write(stream, text, (size_t)n);
	if (text != small)
		free(text);
}

void nv_out_printf(int stream, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	nv_out_vprintf(stream, fmt, ap);
	va_end(ap);
}

bool nv_out_tty(int stream)
{
	if (out_sink)
		return false;
	return isatty(stream == NV_OUT_STDERR ? STDERR_FILENO : STDOUT_FILENO);
}

bool nv_out_color(int stream)
{
	const char *no_color = getenv("NO_COLOR");
	const char *term = getenv("TERM");

	if (no_color && *no_color)
		return false;
	if (term && strcmp(term, "dumb") == 0)
		return false;
	return nv_out_tty(stream);
}

void nv_out_flush(void)
{
	fflush(stdout);
	fflush(stderr);
}
