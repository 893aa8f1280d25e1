/* The one output module: everything the CLI prints passes through here, so
 * a filter (the redactor) has a single place to sit. Colour is used only on
 * a terminal and never when NO_COLOR is set or TERM is "dumb". */
#ifndef NV_OUTPUT_H
#define NV_OUTPUT_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>

enum nv_out_stream { NV_OUT_STDOUT = 1, NV_OUT_STDERR = 2 };

/* A filter rewrites a chunk before it is written (e.g. masks secrets). It
 * calls emit() with the bytes to write, any number of times. */
typedef void (*nv_out_emit_fn)(int stream, const char *buf, size_t len);
typedef void (*nv_out_filter_fn)(int stream, const char *buf, size_t len,
				 nv_out_emit_fn emit);

void nv_out_set_filter(nv_out_filter_fn filter);

/* Where the filtered bytes go instead of stdout and stderr (an embedding
 * host's output callback); NULL: back to the standard streams. While a
 * sink is set nothing is a terminal and no colour is used. */
typedef void (*nv_out_sink_fn)(int stream, const char *buf, size_t len,
			       void *payload);
void nv_out_set_sink(nv_out_sink_fn sink, void *payload);
/* Whether sink/payload is the one in place. */
bool nv_out_sink_is(nv_out_sink_fn sink, void *payload);

void nv_out_write(int stream, const char *buf, size_t len);
void nv_out_printf(int stream, const char *fmt, ...)
#if defined(__GNUC__)
	__attribute__((format(printf, 2, 3)))
#endif
	;
void nv_out_vprintf(int stream, const char *fmt, va_list ap)
#if defined(__GNUC__)
	__attribute__((format(printf, 2, 0)))
#endif
	;

/* Whether styles (ANSI colour) may be used on this stream. */
bool nv_out_color(int stream);
/* Whether the stream is a terminal (progress lines, etc.). */
bool nv_out_tty(int stream);

/* Flushes both streams (before fork/exec and at exit). */
void nv_out_flush(void);

#endif
