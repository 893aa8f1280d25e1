/* UTF-8 checks for text that leaves navette as JSON (plans, records, the
 * job queue) or as arguments: a byte that is not UTF-8 would make the JSON
 * invalid. Strict, as Lua 5.4's utf8.len: no overlong form, no surrogate
 * (U+D800..U+DFFF), nothing above U+10FFFF. Pure C: no Lua here. */
#ifndef NV_UTF8_H
#define NV_UTF8_H

#include <stddef.h>

#define NV_UTF8_VALID ((size_t)-1)

/* The offset of the first byte of s[0..len) that does not start a valid
 * UTF-8 sequence (a NUL is valid UTF-8: callers that refuse it check it
 * themselves), or NV_UTF8_VALID when all of it is valid. */
size_t nv_utf8_invalid_at(const char *s, size_t len);

/* Writes s[0..len) into out (cap bytes, NUL-terminated) for a message or
 * a record: printable ASCII as it is, every other byte and the backslash
 * as \xNN, shortened with "..." when it does not fit. */
void nv_utf8_show(char *out, size_t cap, const char *s, size_t len);

#endif
