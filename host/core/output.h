/* The one output module: everything the CLI prints passes through here, so
 * a filter (the redactor) has a single place to sit. Colour is used only on
 * a terminal and never when NO_COLOR is set or TERM is "dumb".
 *
 * stderr carries messages (errors, warnings, notes, progress), and these
 * quote user input: recipe and job names, keys, paths, server replies. So
 * every byte written to stderr through nv_out_write() shows the characters
 * a terminal would act on as visible escapes (nv_out_term_char()): no
 * recipe or server can move the cursor, retitle the window or hide text.
 * navette's own styles and line erasing go through nv_out_write_raw().
 * stdout carries data (logs, objects, JSON) and is written as it is. */
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
/* Like nv_out_write() (the filter applies) but never escaped: only for
 * control sequences navette itself writes (a style, "\r\33[K"). */
void nv_out_write_raw(int stream, const char *buf, size_t len);

/* Longest visible escape of one character ("\u202e"). */
#define NV_OUT_ESCAPE_MAX 8

/* How a terminal-bound message shows the character at s[0..len), len > 0.
 * Returns its length in bytes. *shown gets 0 when it is shown as it is;
 * else the length of the escape written to esc: "\xNN" for C0 controls
 * other than tab and newline, DEL and each byte that is not part of valid
 * UTF-8 (a lone 0x9b is a CSI to an 8-bit terminal); "\uNNNN" for the C1
 * controls U+0080..U+009F, the line and paragraph separators and the
 * bidirectional embeddings, overrides and isolates. */
size_t nv_out_term_char(const char *s, size_t len, char esc[NV_OUT_ESCAPE_MAX],
			size_t *shown);
/* Adds s[0..len) to a Lua string buffer with every character a terminal
 * acts on shown as its escape (nv_out_term_char()). In out_lua.c, the one
 * file of this module that speaks Lua. */
struct luaL_Buffer;
void nv_out_add_escaped(struct luaL_Buffer *b, const char *s, size_t len);

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
