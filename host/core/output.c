/* The output module (see output.h). Writes are unbuffered beyond stdio's own
 * so that a job log followed by `navette logs --follow` appears promptly. */
#include "core/output.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

void nv_out_write(int stream, const char *buf, size_t len)
{
	if (out_filter)
		out_filter(stream, buf, len, emit_raw);
	else
		emit_raw(stream, buf, len);
}

void nv_out_vprintf(int stream, const char *fmt, va_list ap)
{
	char small[1024];
	va_list copy;
	int n;

	va_copy(copy, ap);
	n = vsnprintf(small, sizeof(small), fmt, copy);
	va_end(copy);
	if (n < 0)
		return;
	if ((size_t)n < sizeof(small)) {
		nv_out_write(stream, small, (size_t)n);
		return;
	}
	char *big = malloc((size_t)n + 1);
	if (!big) {
		nv_out_write(stream, small, sizeof(small) - 1);
		return;
	}
	vsnprintf(big, (size_t)n + 1, fmt, ap);
	nv_out_write(stream, big, (size_t)n);
	free(big);
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
