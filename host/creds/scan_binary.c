/* Files the secret scanner cannot read line by line: which names promise
 * text (so that a NUL byte in one is refused rather than taken for a
 * binary format), and UTF-16 text, recognised by its byte order mark or
 * by its ASCII characters' alternating NUL bytes and decoded to UTF-8 so
 * that the line rules read it like any text file. Pure C; the raw scan of
 * binary files for token shapes is in scan.c. */
#include "creds/scan.h"
#include "creds/scan_internal.h"

#include <stdlib.h>
#include <string.h>

/* The one list of names that hold text. A programming language's file
 * (scan_is_code_file()) and a .env file are text too. */
int scan_is_text_name(const char *base)
{
	static const char *const exts[] = {
		".txt",    ".text",    ".md",      ".rst",        ".adoc",
		".csv",    ".tsv",     ".json",    ".jsonc",      ".json5",
		".ndjson", ".yaml",    ".yml",     ".toml",       ".ini",
		".cfg",    ".conf",    ".cnf",     ".properties", ".env",
		".xml",    ".html",    ".htm",     ".sh",         ".bash",
		".zsh",    ".fish",    ".ksh",     ".ps1",        ".bat",
		".cmd",    ".mk",      ".tf",      ".tfvars",     ".hcl",
		".sql",    ".graphql", ".proto",   ".gradle",     ".sbt",
		".plist",  ".service", ".desktop", ".rc",
	};
	static const char *const names[] = {
		".env",          ".netrc",      ".npmrc",   ".pypirc",
		".pgpass",       ".gitconfig",  "Makefile", "Dockerfile",
		"Containerfile", "credentials", "config",
	};
	size_t i;

	if (strncmp(base, ".env.", 5) == 0 || scan_is_code_file(base))
		return 1;
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (strcmp(base, names[i]) == 0)
			return 1;
	for (i = 0; i < sizeof(exts) / sizeof(exts[0]); i++)
		if (has_suffix(base, exts[i]))
			return 1;
	return 0;
}

/* UTF-16 by its byte order mark, or by its ASCII characters: in the first
 * NV_SCAN_BINARY_PROBE bytes, three code units in four of a NUL byte and
 * another on the same side (the high byte of "A" is 0). Sets *skip to the
 * mark's length. */
int scan_utf16_kind(const unsigned char *d, size_t n, size_t *skip)
{
	size_t i, pairs, le = 0, be = 0;

	*skip = 0;
	if (n >= 2 && d[0] == 0xff && d[1] == 0xfe &&
	    !(n >= 4 && d[2] == 0 && d[3] == 0)) { /* not UTF-32LE's */
		*skip = 2;
		return SCAN_UTF16LE;
	}
	if (n >= 2 && d[0] == 0xfe && d[1] == 0xff) {
		*skip = 2;
		return SCAN_UTF16BE;
	}
	pairs = (n < NV_SCAN_BINARY_PROBE ? n : NV_SCAN_BINARY_PROBE) / 2;
	if (pairs < 2)
		return SCAN_NOT_UTF16;
	for (i = 0; i < pairs; i++) {
		unsigned char a = d[2 * i], b = d[2 * i + 1];

		le += a != 0 && b == 0;
		be += a == 0 && b != 0;
	}
	if (le * 4 >= pairs * 3)
		return SCAN_UTF16LE;
	if (be * 4 >= pairs * 3)
		return SCAN_UTF16BE;
	return SCAN_NOT_UTF16;
}

/* Appends code point cp as UTF-8 at out; returns the bytes written. */
static size_t put_utf8(char *out, unsigned long cp)
{
	if (cp < 0x80) {
		out[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		out[0] = (char)(0xc0 | (cp >> 6));
		out[1] = (char)(0x80 | (cp & 0x3f));
		return 2;
	}
	if (cp < 0x10000) {
		out[0] = (char)(0xe0 | (cp >> 12));
		out[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
		out[2] = (char)(0x80 | (cp & 0x3f));
		return 3;
	}
	out[0] = (char)(0xf0 | (cp >> 18));
	out[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
	out[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
	out[3] = (char)(0x80 | (cp & 0x3f));
	return 4;
}

/* Decodes d[0..n) as UTF-16 of byte order kind into a buffer of at most
 * 3 * (n / 2) bytes (a code unit gives 3 bytes at most, a surrogate pair
 * 4): *out is the caller's to free. A lone surrogate becomes U+FFFD, an
 * odd last byte is dropped. Returns 0, or -1 when memory is short. */
int scan_utf16_decode(const unsigned char *d, size_t n, int kind, char **out,
		      size_t *out_len)
{
	size_t i, units = n / 2, o = 0;
	char *buf = malloc(units * 3 + 1);

	*out = NULL;
	*out_len = 0;
	if (!buf)
		return -1;
	for (i = 0; i < units; i++) {
		unsigned long u, lo;

		u = kind == SCAN_UTF16LE
			    ? (unsigned long)d[2 * i] |
				      ((unsigned long)d[2 * i + 1] << 8)
			    : ((unsigned long)d[2 * i] << 8) |
				      (unsigned long)d[2 * i + 1];
		if (u >= 0xd800 && u <= 0xdbff && i + 1 < units) {
			lo = kind == SCAN_UTF16LE
				     ? (unsigned long)d[2 * i + 2] |
					       ((unsigned long)d[2 * i + 3]
						<< 8)
				     : ((unsigned long)d[2 * i + 2] << 8) |
					       (unsigned long)d[2 * i + 3];
			if (lo >= 0xdc00 && lo <= 0xdfff) {
				u = 0x10000 + ((u - 0xd800) << 10) +
				    (lo - 0xdc00);
				i++;
			} else {
				u = 0xfffd;
			}
		} else if (u >= 0xd800 && u <= 0xdfff) {
			u = 0xfffd;
		}
		o += put_utf8(buf + o, u);
	}
	buf[o] = '\0';
	*out = buf;
	*out_len = o;
	return 0;
}
