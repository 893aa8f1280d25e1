/* Private to the secret scanner (scan.c, scan_literal.c, scan_allow.c,
 * scan_walk.c, scan_binary.c): the state of one scan, the limits the files
 * share, the ASCII classes and the functions one file calls in another. Not a
 * public header: the API is scan.h. */
#ifndef NV_SCAN_INTERNAL_H
#define NV_SCAN_INTERNAL_H

#include <stddef.h>
#include <string.h>

#include "creds/scan.h"

#define PATH_CAP   4096
#define REASON_MAX 256
#define NAME_SHOWN 64 /* bytes of a variable name quoted in a reason */

#define RULE_ALLOWLIST "allowlist"

struct scan_ctx {
	nv_scan_cb cb;
	void *payload;
	const nv_scan_allowlist *al;
	nv_scan_stats *st;
	int stop; /* the callback's value once it asked to stop */
	int full; /* NV_SCAN_MAX_FINDINGS reached */

	/* The file being scanned. */
	const char *path;
	int allowed; /* path matches the allow-list */
	int key_ext; /* .pem/.key/.p12/.pfx: a bare marker is enough */
	int dotenv;
	int code; /* a programming language: bare values are code */
	int lang; /* enum lang (scan_literal.c): how strings interpolate */
	const char *line_start; /* start of the current line */
	const char *line_end;   /* end of the current line, '\r' excluded */
	const char *next_line;  /* start of the next one */
	const char *data_end;   /* end of the file */
	size_t line;            /* 1-based number of the current line */
	size_t line_hits;       /* findings on this line, allowed ones too */
	size_t key_blocks;      /* private-key findings in this file */
	size_t dotenv_values;   /* lines of a .env file setting a value */
	size_t dotenv_line;     /* the first of them */
	char dotenv_name[NAME_SHOWN + 1];
};

/* ASCII classes, independent of the locale. */
static inline int is_digit(int ch)
{
	return ch >= '0' && ch <= '9';
}

static inline int is_alpha(int ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z');
}

static inline int is_alnum(int ch)
{
	return is_alpha(ch) || is_digit(ch);
}

static inline int is_b64(int ch)
{
	return is_alnum(ch) || ch == '+' || ch == '/' || ch == '=';
}

/* Characters of a variable or key name: FOO_BAR, api-token, cfg.secret. */
static inline int is_name(int ch)
{
	return is_alnum(ch) || ch == '_' || ch == '-' || ch == '.';
}

static inline int is_blank(int ch)
{
	return ch == ' ' || ch == '\t';
}

static inline int is_quote(int ch)
{
	return ch == '"' || ch == '\'' || ch == '`';
}

static inline int lower(int ch)
{
	return (ch >= 'A' && ch <= 'Z') ? ch - 'A' + 'a' : ch;
}

/* 1 when s[0..n) starts with lit, ignoring ASCII case. */
static inline int ci_prefix(const char *s, size_t n, const char *lit)
{
	size_t i;

	for (i = 0; lit[i]; i++)
		if (i >= n || lower((unsigned char)s[i]) != lit[i])
			return 0;
	return 1;
}

/* 1 when s[0..n) contains lit (lowercase), ignoring ASCII case. */
static inline int ci_contains(const char *s, size_t n, const char *lit)
{
	size_t i, l = strlen(lit);

	for (i = 0; i + l <= n; i++)
		if (ci_prefix(s + i, n - i, lit))
			return 1;
	return 0;
}

static inline int has_suffix(const char *s, const char *suffix)
{
	size_t n = strlen(s), l = strlen(suffix), i;

	if (l > n)
		return 0;
	for (i = 0; i < l; i++)
		if (lower((unsigned char)s[n - l + i]) != suffix[i])
			return 0;
	return 1;
}

static inline int scan_done(const struct scan_ctx *c)
{
	return c->stop || c->full;
}

/* scan.c */

/* Reports one finding (or counts it as allowed). Returns nonzero when the
 * scan must stop. */
int scan_report(struct scan_ctx *c, size_t line, const char *rule,
		const char *reason, const char *value, size_t value_len);

/* Values that stand for a secret without being one. */
int scan_is_placeholder(const char *v, size_t n);

/* Scans one file. data is NULL when the caller did not read it because
 * size is over the cap. */
int scan_file(struct scan_ctx *c, const char *path, const char *data,
	      size_t size);

/* stats, or local zeroed when stats is NULL. */
nv_scan_stats *scan_stats_or(nv_scan_stats *stats, nv_scan_stats *local);

/* scan_literal.c: the rules that judge a written-out value */

int scan_is_code_file(const char *base);
/* The file's enum lang (private to scan_literal.c). */
int scan_lang_of(const char *base, int dotenv);
int scan_detect_assignment(struct scan_ctx *c, const char *w, size_t n,
			   size_t limit);
int scan_detect_url(struct scan_ctx *c, const char *w, size_t n, size_t limit);
int scan_dotenv_sets(const char *p, size_t n, const char **name,
		     size_t *name_len);

/* scan_binary.c: names that hold text, UTF-16 */

#define RULE_NUL_IN_TEXT "nul-in-text"

enum { SCAN_NOT_UTF16, SCAN_UTF16LE, SCAN_UTF16BE };

int scan_is_text_name(const char *base);
int scan_utf16_kind(const unsigned char *d, size_t n, size_t *skip);
int scan_utf16_decode(const unsigned char *d, size_t n, int kind, char **out,
		      size_t *out_len);

/* scan_allow.c */

int scan_allowlist_load(struct scan_ctx *c, nv_scan_allowlist **out,
			const char *text, size_t len, nv_err *err);

#endif
