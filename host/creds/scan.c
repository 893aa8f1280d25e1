/* Secret scanning of a commit's tree, a folder or one buffer (see scan.h for
 * the rules and the contract). The scanner is deliberately simple: a few
 * hand-written matchers over bounded windows of each line, no regex engine,
 * so that its cost is linear in the input and its behaviour is easy to read.
 * It errs on the side of reporting: a false alarm costs one allow-list line
 * with a reason, a missed key costs a rotation. To keep this file from
 * tripping its own rules, the markers it looks for are never written out
 * whole in it.
 *
 * This file holds what every rule shares (the report, placeholders), the
 * rules on markers and token shapes, and the reading of one file line by
 * line. The rules that judge a written-out value are in scan_literal.c,
 * the allow-list in scan_allow.c, the walks of a commit's tree and of a
 * folder in scan_walk.c; scan_internal.h is what they share. */
#include "creds/scan.h"
#include "creds/scan_internal.h"
#include "creds/token_shapes.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int scan_lines(struct scan_ctx *c, const char *data, size_t len);

#define WINDOW_OVERLAP 512 /* longest token found across a window edge */
#define PREVIEW_MIN    20  /* shorter values get no preview at all */

double nv_scan_entropy(const char *s, size_t len)
{
	size_t count[256] = {0};
	double h = 0.0;
	size_t i;

	if (len == 0)
		return 0.0;
	for (i = 0; i < len; i++)
		count[(unsigned char)s[i]]++;
	for (i = 0; i < 256; i++) {
		double p;

		if (!count[i])
			continue;
		p = (double)count[i] / (double)len;
		h -= p * log2(p);
	}
	return h;
}

/* Values that stand for a secret without being one. */
int scan_is_placeholder(const char *v, size_t n)
{
	static const char *const words[] = {
		"changeme",   "change_me",   "change-me", "replaceme",
		"replace_me", "placeholder", "example",   "redacted",
		"dummy",      "your_",       "your-",     "****",
		"...",
	};
	size_t i;

	if (n == 0)
		return 1;
	if (v[0] == '<' && v[n - 1] == '>')
		return 1;
	/* {{ template }}, %(name)s; $VAR is an expansion only where the
	 * file's language expands it (see dialect()) */
	if ((n >= 2 && v[0] == '{' && v[1] == '{') ||
	    (n >= 2 && v[0] == '%' && v[1] == '('))
		return 1;
	for (i = 0; i < sizeof(words) / sizeof(words[0]); i++)
		if (ci_contains(v, n, words[i]))
			return 1;
	/* xxxx or XXXX, not a chance xXx inside a long random key */
	for (i = 0; i + 4 <= n; i++)
		if ((v[i] == 'x' || v[i] == 'X') && v[i + 1] == v[i] &&
		    v[i + 2] == v[i] && v[i + 3] == v[i])
			return 1;
	return 0;
}

/* "ABCD…WXYZ" for values long enough that 8 characters do not give them
 * away, "" otherwise. */
static void mask(char *out, size_t cap, const char *v, size_t n)
{
	size_t i;

	out[0] = '\0';
	if (!v || n < PREVIEW_MIN)
		return;
	for (i = 0; i < 4; i++)
		if ((unsigned char)v[i] < 0x21 || (unsigned char)v[i] > 0x7e ||
		    (unsigned char)v[n - 4 + i] < 0x21 ||
		    (unsigned char)v[n - 4 + i] > 0x7e)
			return;
	snprintf(out, cap, "%.4s\xe2\x80\xa6%.4s", v, v + n - 4);
}

/* Reports one finding (or counts it as allowed). Returns nonzero when the
 * scan must stop. */
int scan_report(struct scan_ctx *c, size_t line, const char *rule,
		const char *reason, const char *value, size_t value_len)
{
	nv_scan_finding f;
	char preview[32];
	int rc;

	if (scan_done(c))
		return 1;
	c->line_hits++;
	if (c->allowed && strcmp(rule, RULE_ALLOWLIST) != 0) {
		c->st->allowed++;
		return 0;
	}
	if (c->st->findings >= NV_SCAN_MAX_FINDINGS) {
		c->st->truncated = 1;
		c->full = 1;
		return 1;
	}
	mask(preview, sizeof(preview), value, value_len);
	f.path = c->path;
	f.line = line;
	f.rule = rule;
	f.reason = reason;
	f.preview = preview;
	c->st->findings++;
	if (c->cb) {
		rc = c->cb(&f, c->payload);
		if (rc) {
			c->stop = rc;
			return 1;
		}
	}
	return 0;
}

/* ---- private keys ---------------------------------------------------- */

/* Length of a private-key armor line starting at s, or 0. The words are
 * assembled at run time (see the file comment). */
static size_t key_marker(const char *s, size_t n)
{
	static const char *const kinds[] = {
		"", "RSA ", "EC ", "DSA ", "OPENSSH ", "ENCRYPTED ", "PGP ",
	};
	static const char dashes[] = "-----";
	static const char begin[] = "BEGIN ";
	static const char what[] = "PRIVATE KEY";
	size_t k, i = 5 + 6;

	if (n < i || memcmp(s, dashes, 5) != 0 || memcmp(s + 5, begin, 6) != 0)
		return 0;
	for (k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
		size_t kl = strlen(kinds[k]), j = i + kl;

		if (n < j + 11 || memcmp(s + i, kinds[k], kl) != 0 ||
		    memcmp(s + j, what, 11) != 0)
			continue;
		j += 11;
		if (n - j >= 6 && memcmp(s + j, " BLOCK", 6) == 0)
			j += 6;
		if (n - j >= 5 && memcmp(s + j, dashes, 5) == 0)
			return j + 5;
	}
	return 0;
}

/* Length of the run of base64 characters at s. */
static size_t b64_run(const char *s, const char *end)
{
	const char *p = s;

	while (p < end && is_b64((unsigned char)*p))
		p++;
	return (size_t)(p - s);
}

/* 1 when the lines from p on look like the body of an armored key: a few
 * blank or "Header: value" lines, then base64. */
static int key_body_follows(const char *p, const char *end)
{
	int n;

	for (n = 0; n < 4 && p < end; n++) {
		const char *le = memchr(p, '\n', (size_t)(end - p));
		const char *q = p, *h;

		if (!le)
			le = end;
		while (q < le && is_blank((unsigned char)*q))
			q++;
		if (q < le && is_quote((unsigned char)*q))
			q++;
		if (b64_run(q, le) >= 16)
			return 1;
		for (h = q;
		     h < le && (is_alpha((unsigned char)*h) || *h == '-'); h++)
			;
		if (!(q == le || (q + 1 == le && *q == '\r') ||
		      (h > q && h < le && *h == ':')))
			return 0;
		p = le + 1;
	}
	return 0;
}

static int detect_private_key(struct scan_ctx *c, const char *w, size_t n,
			      size_t limit)
{
	size_t i, m;

	for (i = 0; i < limit; i++) {
		const char *after, *le = c->line_end;
		int hit;

		if (w[i] != '-' || !(m = key_marker(w + i, n - i)))
			continue;
		after = w + i + m;
		while (after < le && is_blank((unsigned char)*after))
			after++;
		/* The marker alone on its line, or followed by a "\n" escape
		 * inside a string, with base64 after it: a key, not code that
		 * merely names the marker. */
		if (after == le)
			hit = key_body_follows(c->next_line, c->data_end);
		else if (le - after >= 2 && after[0] == '\\' && after[1] == 'n')
			hit = b64_run(after + 2, le) >= 16;
		else
			hit = 0;
		if (!hit && !c->key_ext)
			continue;
		c->key_blocks++;
		if (scan_report(c, c->line, "private-key", "private key block",
				NULL, 0))
			return 1;
		i += m - 1;
	}
	return 0;
}

/* ---- AWS --------------------------------------------------------------- */

/* The access key id is a token shape (detect_tokens()). */
static int detect_aws(struct scan_ctx *c, const char *w, size_t n, size_t limit)
{
	static const char *const secret_words[] = {"secret_access_key",
						   "secretaccesskey"};
	size_t i, j, k;

	/* The secret: 40 base64 characters after its key name. */
	for (k = 0; k < 2; k++) {
		size_t kl = strlen(secret_words[k]);

		for (i = 0; i + kl <= n && i < limit; i++) {
			if (!ci_prefix(w + i, n - i, secret_words[k]))
				continue;
			for (j = i + kl; j < n;) {
				size_t run = b64_run(w + j, w + n);

				/* '=' only pads the end: "key=VALUE" */
				if (run == 0 || w[j] == '=') {
					j++;
					continue;
				}
				if (run == 40 &&
				    (j + run < n || w + n == c->line_end) &&
				    !scan_is_placeholder(w + j, run) &&
				    nv_scan_entropy(w + j, run) >= 3.0)
					return scan_report(
						c, c->line,
						"aws-secret-access-key",
						"AWS secret access key", w + j,
						run);
				j += run;
			}
		}
	}
	return 0;
}

/* ---- well-known token shapes -------------------------------------------- */

/* The shapes are creds/token_shapes.c's table, which the log redactor
 * masks too. A finding refuses a run, so the scanner also leaves out what
 * only stands for a token (placeholders, EXAMPLE keys, low entropy) and a
 * JWT header too long to decide on; masking such a value costs nothing. A
 * token is measured over its whole line, not the window, so a long one
 * across a window's edge is still seen whole. */
static int detect_tokens(struct scan_ctx *c, const char *w, size_t n,
			 size_t limit)
{
	const nv_token_shape *t;
	nv_token_run run;
	size_t i, len, rest = (size_t)(c->line_end - w);
	const unsigned char *starts = nv_token_starts();

	(void)n;
	for (i = 0; i < limit; i++) {
		const char *s = w + i;
		int prev = s > c->line_start ? (unsigned char)s[-1] : -1;
		size_t pl;

		if (!starts[(unsigned char)*s] ||
		    (prev >= 0 && (is_alnum(prev) || prev == '_')))
			continue;
		if (nv_token_match((const unsigned char *)s, rest - i, prev, 1,
				   &t, &len, &run) != NV_TOKEN_FOUND)
			continue;
		pl = strlen(t->prefix);
		if (t->charset != NV_TOKEN_JWT &&
		    (scan_is_placeholder(s + pl, len - pl) ||
		     nv_scan_entropy(s, len) < 3.0))
			continue;
		if (scan_report(c, c->line, t->rule, t->reason, s, len))
			return 1;
		i += len - 1;
	}
	return 0;
}

/* ---- binary files ------------------------------------------------------- */

/* A binary file (a NUL byte among its first bytes) has no lines to read:
 * only what is a secret by its form alone is looked for, over the raw
 * bytes, a private key block (its marker followed by base64) and the token
 * shapes, with the placeholder and entropy tests of the text rules. The
 * line and assignment rules would be noise there. A finding names the
 * byte where it starts. */
#define RAW_KEY_LOOKAHEAD 4096 /* bytes read after a key marker */

static int raw_report(struct scan_ctx *c, const char *rule, const char *what,
		      size_t at, const char *value, size_t value_len)
{
	char reason[REASON_MAX];

	snprintf(reason, sizeof(reason), "%s in a binary file, at byte %zu",
		 what, at);
	return scan_report(c, 0, rule, reason, value, value_len);
}

static int scan_raw(struct scan_ctx *c, const char *data, size_t size)
{
	const unsigned char *d = (const unsigned char *)data;
	const nv_token_shape *t;
	nv_token_run run;
	size_t i, m, len;

	for (i = 0; i < size; i++) {
		int prev = i ? d[i - 1] : -1;

		if (d[i] == '-' && (m = key_marker(data + i, size - i))) {
			const char *after = data + i + m, *end = data + size;
			const char *look =
				(size_t)(end - after) > RAW_KEY_LOOKAHEAD
					? after + RAW_KEY_LOOKAHEAD
					: end;
			int hit = c->key_ext;

			if (after < look && *after == '\r')
				after++;
			if (after < look && *after == '\n')
				hit = hit || key_body_follows(after + 1, look);
			else if (look - after >= 2 && after[0] == '\\' &&
				 after[1] == 'n')
				hit = hit || b64_run(after + 2, look) >= 16;
			if (hit && raw_report(c, "private-key",
					      "private key block", i, NULL, 0))
				return 1;
			if (hit)
				c->key_blocks++;
			i += m - 1;
			continue;
		}
		if (!nv_token_may_start(d[i]) ||
		    (prev >= 0 && (is_alnum(prev) || prev == '_')))
			continue;
		if (nv_token_match(d + i, size - i, prev, 1, &t, &len, &run) !=
		    NV_TOKEN_FOUND)
			continue;
		m = strlen(t->prefix);
		if (t->charset != NV_TOKEN_JWT &&
		    (scan_is_placeholder(data + i + m, len - m) ||
		     nv_scan_entropy(data + i, len) < 3.0))
			continue;
		if (raw_report(c, t->rule, t->reason, i, data + i, len))
			return 1;
		i += len - 1;
	}
	return 0;
}

/* A text file in UTF-16: decoded to UTF-8, then read line by line like any
 * text (its lines are the same). */
static int scan_utf16(struct scan_ctx *c, const char *data, size_t size,
		      int kind, size_t skip)
{
	char *text, reason[REASON_MAX];
	size_t len;
	int rc;

	if (scan_utf16_decode((const unsigned char *)data + skip, size - skip,
			      kind, &text, &len) < 0) {
		snprintf(reason, sizeof(reason),
			 "UTF-16 text that could not be decoded (out of "
			 "memory): it was not scanned");
		return scan_report(c, 0, RULE_NUL_IN_TEXT, reason, NULL, 0);
	}
	c->st->files++;
	rc = scan_lines(c, text, len);
	free(text);
	return rc;
}

/* ---- files ------------------------------------------------------------- */

static int scan_line(struct scan_ctx *c, const char *p, size_t n)
{
	size_t off = 0;

	if (c->dotenv) {
		const char *name;
		size_t name_len;

		if (scan_dotenv_sets(p, n, &name, &name_len)) {
			if (!c->dotenv_values++) {
				c->dotenv_line = c->line;
				snprintf(c->dotenv_name, sizeof(c->dotenv_name),
					 "%.*s",
					 (int)(name_len > NAME_SHOWN
						       ? NAME_SHOWN
						       : name_len),
					 name);
			}
		}
	}
	/* Long lines (minified code, data) are scanned in windows that
	 * overlap, so a token across an edge is still seen whole; a match
	 * is reported by the window where it starts, before the overlap. */
	do {
		size_t wn = n - off, limit;

		if (wn > NV_SCAN_LINE_WINDOW) {
			wn = NV_SCAN_LINE_WINDOW;
			limit = NV_SCAN_LINE_WINDOW - WINDOW_OVERLAP;
		} else {
			limit = wn;
		}
		if (detect_private_key(c, p + off, wn, limit) ||
		    detect_aws(c, p + off, wn, limit) ||
		    detect_tokens(c, p + off, wn, limit))
			return 1;
		if (!c->dotenv && c->line_hits == 0 &&
		    scan_detect_assignment(c, p + off, wn, limit))
			return 1;
		if (!c->dotenv && c->line_hits == 0 &&
		    scan_detect_url(c, p + off, wn, limit))
			return 1;
		off += limit;
	} while (off < n);
	return 0;
}

static int scan_lines(struct scan_ctx *c, const char *data, size_t len)
{
	const char *p = data, *end = data + len;

	c->data_end = end;
	c->line = 0;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *le = nl ? nl : end;

		c->line++;
		c->line_hits = 0;
		if (le > p && le[-1] == '\r')
			le--;
		c->line_start = p;
		c->line_end = le;
		c->next_line = nl ? nl + 1 : end;
		if (scan_line(c, p, (size_t)(le - p)))
			return 1;
		p = nl ? nl + 1 : end;
	}
	return 0;
}

static const char *base_name(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash ? slash + 1 : path;
}

static int is_key_file_name(const char *base)
{
	static const char *const names[] = {
		"id_rsa",     "id_dsa",      "id_ecdsa",
		"id_ed25519", "id_ecdsa_sk", "id_ed25519_sk",
	};
	size_t i;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (strcmp(base, names[i]) == 0)
			return 1;
	return 0;
}

static int is_dotenv_name(const char *base)
{
	if (strcmp(base, ".env") == 0)
		return 1;
	if (strncmp(base, ".env.", 5) != 0)
		return 0;
	return !has_suffix(base, ".example") && !has_suffix(base, ".sample") &&
	       !has_suffix(base, ".template");
}

/* A DER SEQUENCE with a long-form length: how PKCS#12 files start. */
static int looks_der(const char *data, size_t len)
{
	unsigned char l;

	if (len < 4 || (unsigned char)data[0] != 0x30)
		return 0;
	l = (unsigned char)data[1];
	return (l & 0x80) && (l & 0x7f) >= 1 && (l & 0x7f) <= 4;
}

/* 1 when data was read and holds only blanks and line ends. */
static int is_blank_data(const char *data, size_t size)
{
	size_t i;

	if (!data)
		return 0;
	for (i = 0; i < size; i++)
		if (!is_blank((unsigned char)data[i]) && data[i] != '\n' &&
		    data[i] != '\r')
			return 0;
	return 1;
}

/* The one dotenv finding of a .env file, once its lines are read. */
static int scan_dotenv_report(struct scan_ctx *c)
{
	char reason[REASON_MAX];

	if (!c->dotenv_values)
		return 0;
	snprintf(reason, sizeof(reason),
		 ".env file sets %zu value%s (first: %s); "
		 "commit a .env.example instead",
		 c->dotenv_values, c->dotenv_values == 1 ? "" : "s",
		 c->dotenv_name);
	return scan_report(c, c->dotenv_line, "dotenv", reason, NULL, 0);
}

/* Scans one file. data is NULL when the caller did not read it because
 * size is over the cap. Text is read line by line; UTF-16 text is decoded
 * first; a binary file (a NUL byte among its first NV_SCAN_BINARY_PROBE
 * bytes) is searched for what is a secret by its form alone, and refused
 * when its name promises text. */
int scan_file(struct scan_ctx *c, const char *path, const char *data,
	      size_t size)
{
	const char *base = base_name(path);
	int pkcs12 = has_suffix(base, ".p12") || has_suffix(base, ".pfx");
	size_t probe =
		size < NV_SCAN_BINARY_PROBE ? size : NV_SCAN_BINARY_PROBE;
	size_t skip = 0;
	int utf16 = SCAN_NOT_UTF16;
	char reason[REASON_MAX];

	if (scan_done(c))
		return 1;
	c->path = path;
	c->allowed = nv_scan_allowlist_match(c->al, path) != NULL;
	c->key_ext =
		pkcs12 || has_suffix(base, ".pem") || has_suffix(base, ".key");
	c->dotenv = is_dotenv_name(base);
	c->code = scan_is_code_file(base);
	c->lang = scan_lang_of(base, c->dotenv);
	c->key_blocks = 0;
	c->dotenv_values = 0;
	c->line_end = c->next_line = c->data_end = NULL;

	if (!data || size > NV_SCAN_MAX_FILE_SIZE) {
		c->st->skipped_large++;
	} else if (pkcs12 && looks_der(data, size)) {
		c->st->skipped_binary++;
		if (scan_report(c, 0, "pkcs12", "PKCS#12 key store", NULL, 0))
			return 1;
	} else if ((utf16 = scan_utf16_kind((const unsigned char *)data, size,
					    &skip)) != SCAN_NOT_UTF16) {
		/* the raw bytes too: a binary format may look like UTF-16 */
		if (scan_utf16(c, data, size, utf16, skip) ||
		    scan_raw(c, data, size))
			return 1;
		if (scan_dotenv_report(c))
			return 1;
	} else if (memchr(data, '\0', probe)) {
		c->st->skipped_binary++;
		if (scan_is_text_name(base)) {
			snprintf(reason, sizeof(reason),
				 "NUL bytes in a file named like text: it "
				 "cannot be scanned as text; save it as UTF-8 "
				 "(or UTF-16 with a byte order mark), or "
				 "exempt it in %s with a reason",
				 NV_SCAN_ALLOW_FILE);
			if (scan_report(c, 0, RULE_NUL_IN_TEXT, reason, NULL,
					0))
				return 1;
		}
		if (scan_raw(c, data, size))
			return 1;
	} else {
		c->st->files++;
		if (scan_lines(c, data, size))
			return 1;
		if (scan_dotenv_report(c))
			return 1;
	}
	/* An empty (or blank) file named like a key holds none: test
	 * fixtures of SSH tools have them. */
	if (is_key_file_name(base) && c->key_blocks == 0 &&
	    !is_blank_data(data, size) &&
	    scan_report(c, 0, "private-key-file",
			"file named like an SSH private key", NULL, 0))
		return 1;
	return 0;
}

nv_scan_stats *scan_stats_or(nv_scan_stats *stats, nv_scan_stats *local)
{
	if (stats)
		return stats;
	memset(local, 0, sizeof(*local));
	return local;
}

int nv_scan_buffer(const nv_scan_allowlist *al, const char *path,
		   const char *data, size_t len, nv_scan_cb cb, void *payload,
		   nv_scan_stats *stats)
{
	struct scan_ctx c;
	nv_scan_stats local;

	memset(&c, 0, sizeof(c));
	c.cb = cb;
	c.payload = payload;
	c.al = al;
	c.st = scan_stats_or(stats, &local);
	scan_file(&c, path ? path : "", data, len);
	return c.stop;
}
