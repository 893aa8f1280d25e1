/* Secret scanning of a commit's tree, a folder or one buffer (see scan.h for
 * the rules and the contract). The scanner is deliberately simple: a few
 * hand-written matchers over bounded windows of each line, no regex engine,
 * so that its cost is linear in the input and its behaviour is easy to read.
 * It errs on the side of reporting: a false alarm costs one allow-list line
 * with a reason, a missed key costs a rotation. To keep this file from
 * tripping its own rules, the markers it looks for are never written out
 * whole in it. */
#include "creds/scan.h"
#include "creds/token_shapes.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include <git2.h>

#include "core/hex.h"

#ifndef O_CLOEXEC
#define O_CLOEXEC 0
#endif

#define PATH_CAP        4096
#define WINDOW_OVERLAP  512 /* longest token found across a window edge */
#define REASON_MAX      256
#define PREVIEW_MIN     20 /* shorter values get no preview at all */
#define NAME_SHOWN      64 /* bytes of a variable name quoted in a reason */
#define MIN_SECRET_LEN  16
#define MIN_ENTROPY     3.5
#define GLOB_MAX        1024
#define GLOB_MAX_SEGS   64
#define PATH_MAX_SEGS   256
#define DIR_MAX_ENTRIES 100000

static const char RULE_ALLOWLIST[] = "allowlist";

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
	int lang; /* enum lang: how its strings interpolate */
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
static int is_digit(int ch)
{
	return ch >= '0' && ch <= '9';
}

static int is_alpha(int ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z');
}

static int is_alnum(int ch)
{
	return is_alpha(ch) || is_digit(ch);
}

static int is_b64(int ch)
{
	return is_alnum(ch) || ch == '+' || ch == '/' || ch == '=';
}

/* Characters of a variable or key name: FOO_BAR, api-token, cfg.secret. */
static int is_name(int ch)
{
	return is_alnum(ch) || ch == '_' || ch == '-' || ch == '.';
}

static int is_blank(int ch)
{
	return ch == ' ' || ch == '\t';
}

static int is_quote(int ch)
{
	return ch == '"' || ch == '\'' || ch == '`';
}

static int lower(int ch)
{
	return (ch >= 'A' && ch <= 'Z') ? ch - 'A' + 'a' : ch;
}

/* 1 when s[0..n) starts with lit, ignoring ASCII case. */
static int ci_prefix(const char *s, size_t n, const char *lit)
{
	size_t i;

	for (i = 0; lit[i]; i++)
		if (i >= n || lower((unsigned char)s[i]) != lit[i])
			return 0;
	return 1;
}

/* 1 when s[0..n) contains lit (lowercase), ignoring ASCII case. */
static int ci_contains(const char *s, size_t n, const char *lit)
{
	size_t i, l = strlen(lit);

	for (i = 0; i + l <= n; i++)
		if (ci_prefix(s + i, n - i, lit))
			return 1;
	return 0;
}

static int has_suffix(const char *s, const char *suffix)
{
	size_t n = strlen(s), l = strlen(suffix), i;

	if (l > n)
		return 0;
	for (i = 0; i < l; i++)
		if (lower((unsigned char)s[n - l + i]) != suffix[i])
			return 0;
	return 1;
}

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
static int is_placeholder(const char *v, size_t n)
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

/* The text after an assignment reads the secret from elsewhere. */
static int is_reference(const char *s, size_t n)
{
	static const char *const words[] = {
		"environ",   "getenv",   "process.env", "env[",
		"env.fetch", "secrets.", "vault(",      "keyring.",
	};
	size_t i;

	for (i = 0; i < sizeof(words) / sizeof(words[0]); i++)
		if (ci_contains(s, n, words[i]))
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

static int scan_done(const struct scan_ctx *c)
{
	return c->stop || c->full;
}

/* Reports one finding (or counts it as allowed). Returns nonzero when the
 * scan must stop. */
static int report(struct scan_ctx *c, size_t line, const char *rule,
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
		if (report(c, c->line, "private-key", "private key block", NULL,
			   0))
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
				    !is_placeholder(w + j, run) &&
				    nv_scan_entropy(w + j, run) >= 3.0)
					return report(c, c->line,
						      "aws-secret-access-key",
						      "AWS secret access key",
						      w + j, run);
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

	(void)n;
	for (i = 0; i < limit; i++) {
		const char *s = w + i;
		int prev = s > c->line_start ? (unsigned char)s[-1] : -1;
		size_t pl;

		if (!nv_token_may_start((unsigned char)*s) ||
		    (prev >= 0 && (is_alnum(prev) || prev == '_')))
			continue;
		if (nv_token_match((const unsigned char *)s, rest - i, prev, 1,
				   &t, &len, &run) != NV_TOKEN_FOUND)
			continue;
		pl = strlen(t->prefix);
		if (t->charset != NV_TOKEN_JWT &&
		    (is_placeholder(s + pl, len - pl) ||
		     nv_scan_entropy(s, len) < 3.0))
			continue;
		if (report(c, c->line, t->rule, t->reason, s, len))
			return 1;
		i += len - 1;
	}
	return 0;
}

/* ---- name = "literal" ---------------------------------------------------- */

/* Only a literal can leak a secret: a value computed at run time (a field,
 * a call, a variable, an interpolated string) holds none in the tree. So the
 * rule reads the value the way the file's language does, keeps only what is
 * written out whole, and then asks whether it looks random. */

static const char *const secret_names[] = {
	"client_secret", "private_key", "api_key", "apikey",
	"password",      "passwd",      "secret",  "token",
};

static int is_ident(int ch)
{
	return is_alnum(ch) || ch == '_';
}

/* Files in a programming language: there an unquoted value is an expression
 * (s->token_exp = fresh->expires_at), never a literal. In the other files
 * (configuration, shell, .env, documents) an unquoted value is a literal
 * unless it expands something. */
static int is_code_file(const char *base)
{
	static const char *const exts[] = {
		".c",      ".h",     ".cc",      ".cpp",  ".cxx",    ".hpp",
		".hh",     ".hxx",   ".m",       ".mm",   ".go",     ".rs",
		".py",     ".pyi",   ".pyx",     ".js",   ".mjs",    ".cjs",
		".jsx",    ".ts",    ".tsx",     ".mts",  ".cts",    ".rb",
		".rake",   ".lua",   ".java",    ".kt",   ".kts",    ".scala",
		".groovy", ".swift", ".cs",      ".php",  ".pl",     ".pm",
		".dart",   ".ex",    ".exs",     ".erl",  ".hs",     ".ml",
		".jl",     ".zig",   ".nim",     ".vala", ".coffee", ".vue",
		".svelte", ".tcl",   ".gemspec",
	};
	static const char *const names[] = {"Rakefile", "Gemfile",
					    "Vagrantfile", "Podfile"};
	size_t i;

	for (i = 0; i < sizeof(exts) / sizeof(exts[0]); i++)
		if (has_suffix(base, exts[i]))
			return 1;
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (strcmp(base, names[i]) == 0)
			return 1;
	return 0;
}

/* How a file's strings fill in parts at run time. Each language expands
 * its own forms only, and only in the strings that expand: "q7$Lr9..." is
 * a literal in Python, '$x' is one in shell, "{x}" is one outside an
 * f-string. The flags below name the forms; dialect() picks them for a
 * language and a kind of string. */
enum lang {
	LANG_CONFIG, /* YAML, JSON, TOML, INI, XML, documents: tools expand */
	LANG_DOTENV, /* .env: ${X}, and $X where X reads as a variable */
	LANG_SHELL,
	LANG_MAKE,
	LANG_BATCH,
	LANG_PERL,
	LANG_PHP,
	LANG_JS,     /* `${x}` in template literals only */
	LANG_DOLLAR, /* Kotlin, Groovy, Scala: "$x ${x}" */
	LANG_DART,   /* '$x' and "$x" */
	LANG_HCL,    /* Terraform: "${x}" "%{x}" */
	LANG_RUBY,   /* Ruby, CoffeeScript, Elixir, Crystal: "#{x}" */
	LANG_PYTHON, /* f"{x}", "{x}".format(), "%s" % x */
	LANG_CSHARP, /* $"{x}", "{0}" */
	LANG_RUST,   /* format strings: "{x}" "{}" */
	LANG_SWIFT,  /* "\(x)" */
	LANG_CODE,   /* C, C++, Go, Java, Lua...: printf forms only */
};

#define IP_TEMPLATE      0x0001u /* {{ x }} {% x %} <%= x %> @X@ */
#define IP_DOLLAR        0x0002u /* $x $1 $@ {$x} */
#define IP_DOLLAR_VAR    0x0004u /* $X_2, $db_host: a variable's name */
#define IP_DOLLAR_BRACE  0x0008u /* ${x} */
#define IP_DOLLAR_PAREN  0x0010u /* $(x) */
#define IP_BACKTICK      0x0020u /* `cmd` */
#define IP_HASH_BRACE    0x0040u /* #{x} */
#define IP_BRACE         0x0080u /* {x} {} {0} {x:>8} {x!r} */
#define IP_BRACE_NUM     0x0100u /* {} {0} */
#define IP_PRINTF        0x0200u /* %s %-8d %(x)s */
#define IP_PRINTF_NAMED  0x0400u /* %(x)s */
#define IP_PERCENT_BRACE 0x0800u /* %{x} %<x>s */
#define IP_PERCENT_VAR   0x1000u /* %X% */
#define IP_AT_VAR        0x2000u /* @x (Perl) */
#define IP_SWIFT         0x4000u /* \(x) */
/* ${NAME} and ${NAME:-x} with NAME a variable's name: a placeholder in
 * any file (string.Template, envsubst, Spring, compose), never a piece of
 * a generated key. */
#define IP_DOLLAR_BRACE_VAR 0x8000u

static enum lang lang_of(const char *base, int dotenv)
{
	static const struct {
		const char *ext;
		enum lang lang;
	} exts[] = {
		{".sh", LANG_SHELL},      {".bash", LANG_SHELL},
		{".zsh", LANG_SHELL},     {".ksh", LANG_SHELL},
		{".bats", LANG_SHELL},    {".mk", LANG_MAKE},
		{".make", LANG_MAKE},     {".am", LANG_MAKE},
		{".bat", LANG_BATCH},     {".cmd", LANG_BATCH},
		{".pl", LANG_PERL},       {".pm", LANG_PERL},
		{".php", LANG_PHP},       {".js", LANG_JS},
		{".mjs", LANG_JS},        {".cjs", LANG_JS},
		{".jsx", LANG_JS},        {".ts", LANG_JS},
		{".tsx", LANG_JS},        {".mts", LANG_JS},
		{".cts", LANG_JS},        {".vue", LANG_JS},
		{".svelte", LANG_JS},     {".kt", LANG_DOLLAR},
		{".kts", LANG_DOLLAR},    {".groovy", LANG_DOLLAR},
		{".gradle", LANG_DOLLAR}, {".scala", LANG_DOLLAR},
		{".dart", LANG_DART},     {".tf", LANG_HCL},
		{".tfvars", LANG_HCL},    {".hcl", LANG_HCL},
		{".rb", LANG_RUBY},       {".rake", LANG_RUBY},
		{".gemspec", LANG_RUBY},  {".coffee", LANG_RUBY},
		{".ex", LANG_RUBY},       {".exs", LANG_RUBY},
		{".cr", LANG_RUBY},       {".py", LANG_PYTHON},
		{".pyi", LANG_PYTHON},    {".pyx", LANG_PYTHON},
		{".cs", LANG_CSHARP},     {".rs", LANG_RUST},
		{".swift", LANG_SWIFT},
	};
	static const struct {
		const char *name;
		enum lang lang;
	} names[] = {
		{"Makefile", LANG_MAKE},    {"makefile", LANG_MAKE},
		{"GNUmakefile", LANG_MAKE}, {"Dockerfile", LANG_SHELL},
		{"Rakefile", LANG_RUBY},    {"Gemfile", LANG_RUBY},
		{"Vagrantfile", LANG_RUBY}, {"Podfile", LANG_RUBY},
	};
	size_t i;

	if (dotenv)
		return LANG_DOTENV;
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (strcmp(base, names[i].name) == 0)
			return names[i].lang;
	for (i = 0; i < sizeof(exts) / sizeof(exts[0]); i++)
		if (has_suffix(base, exts[i].ext))
			return exts[i].lang;
	return is_code_file(base) ? LANG_CODE : LANG_CONFIG;
}

/* The forms that fill in a string of language lang opened by quote ('"',
 * '\'', '`', or 0 for an unquoted value) after the string prefix pre
 * (f, $, r...). format: the string is the receiver of .format(). */
static unsigned dialect(enum lang lang, int quote, const char *pre,
			size_t pre_len, int format)
{
	unsigned f = IP_TEMPLATE | IP_DOLLAR_BRACE_VAR;
	int single = quote == '\'';
	int raw = pre_len &&
		  (memchr(pre, 'r', pre_len) || memchr(pre, 'R', pre_len));
	int fstring = pre_len &&
		      (memchr(pre, 'f', pre_len) || memchr(pre, 'F', pre_len));
	int dollar_pre = pre_len && memchr(pre, '$', pre_len);

	switch (lang) {
	case LANG_CONFIG:
		return f | IP_DOLLAR_VAR | IP_DOLLAR_BRACE | IP_DOLLAR_PAREN |
		       IP_PRINTF_NAMED | IP_PERCENT_VAR;
	case LANG_DOTENV:
		return single ? f : f | IP_DOLLAR_VAR | IP_DOLLAR_BRACE;
	case LANG_SHELL:
		/* '...' expands nothing, but inside a here-document it
		 * does: $NAME still counts there, $Lr9vZk2 does not. */
		f |= IP_PRINTF;
		return single ? f | IP_DOLLAR_VAR
			      : f | IP_DOLLAR | IP_DOLLAR_BRACE |
					IP_DOLLAR_PAREN | IP_BACKTICK;
	case LANG_MAKE:
		return f | IP_DOLLAR | IP_DOLLAR_BRACE | IP_DOLLAR_PAREN;
	case LANG_BATCH: return f | IP_PERCENT_VAR;
	case LANG_PERL:
		f |= IP_PRINTF;
		return single ? f : f | IP_DOLLAR | IP_DOLLAR_BRACE | IP_AT_VAR;
	case LANG_PHP:
		f |= IP_PRINTF;
		return single ? f : f | IP_DOLLAR | IP_DOLLAR_BRACE;
	case LANG_JS:
		f |= IP_PRINTF;
		return quote == '`' ? f | IP_DOLLAR_BRACE : f;
	case LANG_DOLLAR:
		f |= IP_PRINTF | IP_BRACE_NUM;
		return quote == '"' ? f | IP_DOLLAR | IP_DOLLAR_BRACE : f;
	case LANG_DART: return raw ? f : f | IP_DOLLAR | IP_DOLLAR_BRACE;
	case LANG_HCL: return f | IP_DOLLAR_BRACE | IP_PERCENT_BRACE;
	case LANG_RUBY:
		/* #{x} in '...' too: a line of a here-document or of a
		 * %Q{} string looks single-quoted to this reader. */
		return f | IP_PRINTF | IP_PERCENT_BRACE | IP_HASH_BRACE;
	case LANG_PYTHON:
		f |= IP_PRINTF;
		return fstring || format ? f | IP_BRACE : f;
	case LANG_CSHARP: return f | (dollar_pre ? IP_BRACE : IP_BRACE_NUM);
	case LANG_RUST: return f | IP_BRACE;
	case LANG_SWIFT: return f | IP_PRINTF | IP_SWIFT;
	case LANG_CODE: return f | IP_PRINTF | IP_BRACE_NUM;
	}
	return f;
}

/* Length of a printf conversion at v[0] == '%' (%s, %-8d, %.3f, %lu,
 * %(name)s), or 0. Only lower-case conversions: "%2F" in a URL is not
 * one. */
static size_t printf_conversion(const char *v, size_t n)
{
	static const char flags[] = "-+ #0", mods[] = "hlqjzt",
			  convs[] = "sdiuxfgecpvqro";
	size_t i = 1;

	if (i < n && v[i] == '(') {
		while (i < n && v[i] != ')' && i < 64)
			i++;
		if (i >= n || v[i] != ')')
			return 0;
		i++;
	}
	while (i < n && v[i] && strchr(flags, v[i]))
		i++;
	while (i < n && is_digit((unsigned char)v[i]))
		i++;
	if (i < n && v[i] == '.')
		for (i++; i < n && is_digit((unsigned char)v[i]); i++)
			;
	while (i < n && v[i] && strchr(mods, v[i]))
		i++;
	return i < n && v[i] && strchr(convs, v[i]) ? i + 1 : 0;
}

/* Length of the bracketed part opened at v[0] (v[0] is open), up to its
 * matching close, or to the end when it is not closed on this line. */
static size_t bracketed(const char *v, size_t n, char open, char close)
{
	size_t i, depth = 0;

	for (i = 0; i < n; i++) {
		if (v[i] == open)
			depth++;
		else if (v[i] == close && --depth == 0)
			return i + 1;
	}
	return n;
}

/* Length of the run up to and including the first occurrence of the two
 * characters a b from v[from], or n when there is none. */
static size_t until_pair(const char *v, size_t n, size_t from, char a, char b)
{
	size_t i;

	for (i = from; i + 1 < n; i++)
		if (v[i] == a && v[i + 1] == b)
			return i + 2;
	return n;
}

static size_t ident_run(const char *v, size_t n)
{
	size_t i = 0;

	while (i < n && is_ident((unsigned char)v[i]))
		i++;
	return i;
}

/* 1 for a name that reads as a variable's (PORT, TOKEN_PORT, CI_TOKEN2,
 * db_host, home): one case, parts between underscores made of letters and
 * then digits. Zk8qP2 and Lr9vZk2 are pieces of a password. */
static int var_like(const char *v, size_t n)
{
	size_t i, upper = 0, lower_n = 0;
	int digit = 0;

	if (n == 0 || is_digit((unsigned char)v[0]))
		return 0;
	for (i = 0; i < n; i++) {
		int ch = (unsigned char)v[i];

		if (ch == '_') {
			digit = 0;
		} else if (is_digit(ch)) {
			digit = 1;
		} else {
			if (digit)
				return 0;
			if (ch >= 'A' && ch <= 'Z')
				upper++;
			else
				lower_n++;
		}
	}
	return !(upper && lower_n);
}

/* Length of a part filled in at run time starting at v[0] under the forms
 * f, or 0. */
static size_t span_at(unsigned f, const char *v, size_t n)
{
	int nx = n > 1 ? (unsigned char)v[1] : 0;
	size_t j;

	switch (v[0]) {
	case '$':
		if (nx == '{' && (f & IP_DOLLAR_BRACE))
			return 1 + bracketed(v + 1, n - 1, '{', '}');
		if (nx == '{' && (f & IP_DOLLAR_BRACE_VAR) &&
		    (j = 2 + ident_run(v + 2, n - 2)) < n &&
		    var_like(v + 2, j - 2) && v[j] && strchr("}:-?=+", v[j]))
			return 1 + bracketed(v + 1, n - 1, '{', '}');
		if (nx == '(' && (f & IP_DOLLAR_PAREN))
			return 1 + bracketed(v + 1, n - 1, '(', ')');
		if ((f & IP_DOLLAR) &&
		    (is_ident(nx) || (nx && strchr("@*#?!$-", nx))))
			return 1 + (is_ident(nx) ? ident_run(v + 1, n - 1) : 1);
		if ((f & IP_DOLLAR_VAR) && (is_alpha(nx) || nx == '_') &&
		    var_like(v + 1, (j = ident_run(v + 1, n - 1))))
			return 1 + j;
		return 0;
	case '{':
		if ((f & IP_TEMPLATE) && nx == '{')
			return until_pair(v, n, 2, '}', '}');
		if ((f & IP_TEMPLATE) && nx == '%')
			return until_pair(v, n, 2, '%', '}');
		if ((f & IP_DOLLAR) && nx == '$')
			return bracketed(v, n, '{', '}');
		if (f & (IP_BRACE | IP_BRACE_NUM)) {
			for (j = 1;
			     j < n && j < 64 &&
			     ((f & IP_BRACE) ? (is_ident((unsigned char)v[j]) ||
						v[j] == '.' || v[j] == '[' ||
						v[j] == ']')
					     : is_digit((unsigned char)v[j]));
			     j++)
				;
			if (j < n && v[j] == '}')
				return j + 1;
			if ((f & IP_BRACE) && j < n &&
			    (v[j] == ':' || v[j] == '!')) {
				while (j < n && j < 64 && v[j] != '}')
					j++;
				if (j < n && v[j] == '}')
					return j + 1;
			}
		}
		return 0;
	case '#':
		return nx == '{' && (f & IP_HASH_BRACE)
			       ? 1 + bracketed(v + 1, n - 1, '{', '}')
			       : 0;
	case '<':
		return nx == '%' && (f & IP_TEMPLATE)
			       ? until_pair(v, n, 2, '%', '>')
			       : 0;
	case '%':
		if ((f & IP_PRINTF) || ((f & IP_PRINTF_NAMED) && nx == '(')) {
			j = printf_conversion(v, n);
			if (j)
				return j;
		}
		if ((f & IP_PERCENT_BRACE) && nx == '{')
			return 1 + bracketed(v + 1, n - 1, '{', '}');
		if ((f & IP_PERCENT_BRACE) && nx == '<') {
			for (j = 2; j < n && is_ident((unsigned char)v[j]); j++)
				;
			return j < n && v[j] == '>'
				       ? j + 1 + printf_conversion(v + j, n - j)
				       : 0;
		}
		if ((f & IP_PERCENT_VAR) && (is_alpha(nx) || nx == '_')) {
			j = 1 + ident_run(v + 1, n - 1);
			return j < n && v[j] == '%' ? j + 1 : 0;
		}
		return 0;
	case '@':
		j = 1 + ident_run(v + 1, n - 1);
		if ((f & IP_TEMPLATE) && j > 1 && j < n && v[j] == '@')
			return j + 1;
		return (f & IP_AT_VAR) && (is_alpha(nx) || nx == '_') ? j : 0;
	case '\\':
		return nx == '(' && (f & IP_SWIFT)
			       ? 1 + bracketed(v + 1, n - 1, '(', ')')
			       : 0;
	case '`':
		if (!(f & IP_BACKTICK))
			return 0;
		for (j = 1; j < n && v[j] != '`'; j++)
			;
		return j < n ? j + 1 : n;
	}
	return 0;
}

/* Reads v[0..n) under the forms f: returns how many parts are filled in
 * at run time, and the longest run of literal text between them in
 * *run_start and *run_len (the whole value when there is none). */
static size_t literal_run(unsigned f, const char *v, size_t n,
			  size_t *run_start, size_t *run_len)
{
	size_t i = 0, start = 0, spans = 0, len;

	*run_start = 0;
	*run_len = 0;
	while (i < n) {
		len = span_at(f, v + i, n - i);
		if (!len) {
			/* an escaped character is literal: \$HOME */
			i += (v[i] == '\\' && i + 1 < n) ? 2 : 1;
			continue;
		}
		if (i - start > *run_len) {
			*run_start = start;
			*run_len = i - start;
		}
		spans++;
		i += len;
		start = i;
	}
	if (n - start > *run_len) {
		*run_start = start;
		*run_len = n - start;
	}
	return spans;
}

/* 1 when v reads as words (an identifier, a file name, a path, a media
 * type) rather than random characters: split at separators, at case
 * changes and between letters and digits, its words average three
 * characters or more and its letters hold vowels as words do. A random key
 * splits every two characters or so and has few vowels; all-hex values are
 * never words. */
/* 0 separator, 1 lower-case letter, 2 upper-case letter, 3 digit. */
static int char_class(int ch)
{
	if (is_digit(ch))
		return 3;
	if (ch >= 'a' && ch <= 'z')
		return 1;
	return ch >= 'A' && ch <= 'Z' ? 2 : 0;
}

/* 1 for set-password-custom, admin/password_change_form.html, X-Api-Key:
 * two or more parts between separators, each of letters alone, all of one
 * case or capitalised. A random key with separators has digits or mixed
 * case in its parts. */
static int words_between_separators(const char *v, size_t n)
{
	size_t i = 0, parts = 0;

	while (i < n) {
		size_t start = i, upper = 0;

		while (i < n && is_alpha((unsigned char)v[i])) {
			upper += char_class((unsigned char)v[i]) == 2;
			i++;
		}
		if (i - start < 2 ||
		    !(upper == 0 || upper == i - start ||
		      (upper == 1 && char_class((unsigned char)v[start]) == 2)))
			return 0;
		parts++;
		if (i < n && (!v[i] || !strchr("-_./:", v[i])))
			return 0;
		i++;
	}
	return parts >= 2;
}

static int reads_as_words(const char *v, size_t n)
{
	size_t i, alnum = 0, words = 0, letters = 0, vowels = 0;
	int prev = 0, hex_only = 1, digits = 0;

	/* Identifiers, paths, slugs and media types are made of these; a
	 * chosen password has other punctuation (SummerVacation2024!). */
	for (i = 0; i < n; i++)
		if (!is_alnum((unsigned char)v[i]) &&
		    (!v[i] || !strchr("_.-/:+", v[i])))
			return 0;
	for (i = 0; i < n; i++) {
		int ch = (unsigned char)v[i], cls = char_class(ch);
		int next = i + 1 < n ? char_class((unsigned char)v[i + 1]) : 0;

		if (!cls) {
			prev = 0;
			continue;
		}
		alnum++;
		if (cls == 3) {
			digits = 1;
		} else {
			letters++;
			if (strchr("aeiou", lower(ch)))
				vowels++;
			if (lower(ch) > 'f')
				hex_only = 0;
		}
		/* A word starts after a separator, between letters and
		 * digits, at an upper-case letter after a lower-case one
		 * (tokenName) and at the last capital of a run followed by
		 * lower case (HTTPServer). */
		if (prev == 0 || (cls == 3) != (prev == 3) ||
		    (cls == 2 && prev == 1) ||
		    (cls == 2 && prev == 2 && next == 1))
			words++;
		prev = cls;
	}
	if (alnum == 0)
		return 1;
	if (hex_only && digits)
		return 0;
	return (alnum >= 3 * words && vowels * 10 >= letters * 3) ||
	       words_between_separators(v, n);
}

/* 1 when at least half of v steps to the next character (ABCDEFGH,
 * 01234567, abcdef...): a value made up for an example or a test, never a
 * generated key. */
static int is_sequence(const char *v, size_t n)
{
	size_t i, steps = 0;

	for (i = 0; i + 1 < n; i++)
		if ((unsigned char)v[i + 1] == (unsigned char)v[i] + 1)
			steps++;
	return steps * 2 >= n;
}

/* 1 for a.b_2.c: names joined by dots, each starting with a letter or
 * '_', the first one without digits (settings.SECRET_KEY_2,
 * self.cfg.token_v2): a reference. A random token with dots in it has
 * digits before its first dot. */
static int is_dotted_name(const char *v, size_t n)
{
	size_t i, first = 0;

	for (i = 0; i < n; i++) {
		if (v[i] != '.')
			continue;
		if (i + 1 >= n ||
		    !(is_alpha((unsigned char)v[i + 1]) || v[i + 1] == '_'))
			return 0;
		if (!first)
			first = i;
	}
	for (i = 0; i < first; i++)
		if (!is_alpha((unsigned char)v[i]) && v[i] != '_')
			return 0;
	return first > 0;
}

/* A value of a configuration or shell file, unquoted (or what is left of
 * it between expansions), that is not a literal: an expression, a YAML tag
 * (!vault), alias (*x), anchor (&x) or block (| >), a flow collection, a dotted
 * name (self.config.api_token). */
static int bare_is_not_literal(const char *v, size_t n)
{
	size_t i;
	int digit = 0, other = 0;

	if (v[0] && strchr("!*&|>[{(", v[0]))
		return 1;
	for (i = 0; i < n; i++) {
		int ch = (unsigned char)v[i];

		if (ch == '(' || ch == '[' || ch == '{')
			return 1;
		if (ch == '-' && i + 1 < n && v[i + 1] == '>')
			return 1;
		if (ch == ':' && i + 1 < n && v[i + 1] == ':')
			return 1;
		if (is_digit(ch))
			digit = 1;
		else if (!is_alpha(ch) && ch != '_' && ch != '.')
			other = 1;
	}
	return !other && (!digit || is_dotted_name(v, n));
}

/* 1 for a stored password hash: crypt's $id$salt$hash ($6$, $2b$,
 * $argon2id$), Django's algorithm$iterations$salt$hash (pbkdf2_sha256$,
 * sha1$), LDAP's {SSHA}. A server keeps these; they open nothing, and
 * fixtures of web frameworks are full of them. */
static int is_password_hash(const char *v, size_t n)
{
	static const char *const algos[] = {
		"sha", "md5", "pbkdf2", "argon", "crypt", "bcrypt", "scrypt"};
	size_t i, k, id, dollars = 0;

	if (n > 2 && v[0] == '{') {
		for (i = 1; i < n && i < 16 && is_alnum((unsigned char)v[i]);
		     i++)
			;
		return i > 1 && i < n && v[i] == '}' &&
		       (ci_prefix(v + 1, n - 1, "ssha") ||
			ci_prefix(v + 1, n - 1, "sha") ||
			ci_prefix(v + 1, n - 1, "smd5") ||
			ci_prefix(v + 1, n - 1, "md5") ||
			ci_prefix(v + 1, n - 1, "crypt"));
	}
	for (i = 0; i < n; i++)
		dollars += v[i] == '$';
	if (dollars < 2)
		return 0;
	i = v[0] == '$';
	for (id = i; i < n && i < id + 24 &&
		     (is_ident((unsigned char)v[i]) || v[i] == '-');
	     i++)
		;
	if (i >= n || v[i] != '$' || i == id)
		return 0;
	if (v[0] == '$')
		return i - id <= 8 || ci_contains(v + id, i - id, "argon");
	for (k = 0; k < sizeof(algos) / sizeof(algos[0]); k++)
		if (ci_contains(v + id, i - id, algos[k]))
			return 1;
	return 0;
}

/* 1 when v[0..n), written out whole, looks like a generated secret: one
 * run of characters (no blanks: prose), not a URL (url-credentials reads
 * those), not words, not a made-up run of the alphabet, and random
 * enough. *h receives its entropy. */
static int looks_random(const char *v, size_t n, double *h)
{
	size_t i;

	*h = 0.0;
	if (n < MIN_SECRET_LEN || is_placeholder(v, n) ||
	    is_password_hash(v, n))
		return 0;
	for (i = 0; i < n; i++)
		if (is_blank((unsigned char)v[i]))
			return 0;
	if (ci_contains(v, n, "://") || reads_as_words(v, n) ||
	    is_sequence(v, n))
		return 0;
	*h = nv_scan_entropy(v, n);
	return *h >= MIN_ENTROPY;
}

/* The end of a string literal opened by the quote at v[0] (the index of
 * the closing quote, or n when the line ends first). */
static size_t string_end(const char *v, size_t n)
{
	size_t j = 1;

	while (j < n && v[j] != v[0]) {
		if (v[j] == '\\' && j + 1 < n)
			j++;
		j++;
	}
	return j;
}

/* Length of a string prefix at v (b r u f rb f" L u8 @ $ ...) directly
 * followed by a quote, or 0. */
static size_t string_prefix(const char *v, size_t n)
{
	size_t i = 0;

	while (i < n && i < 3 && v[i] && strchr("rRbBuUfFL8@$", v[i]))
		i++;
	return i > 0 && i < n && (v[i] == '"' || v[i] == '\'') ? i : 0;
}

/* After "name:" in code, a type may come before the value: Rust
 * "TOKEN: &str = ...", TypeScript "token: string = ...", Python
 * "token: str = ...". Returns the index after the '=', or 0. */
static size_t after_type(const char *w, size_t n, size_t j)
{
	size_t k = j;

	while (k < n && (is_ident((unsigned char)w[k]) ||
			 (w[k] && strchr("&<>'[]:. *|?,", w[k]))))
		k++;
	if (k == j || k >= n || w[k] != '=' ||
	    (k + 1 < n && (w[k + 1] == '=' || w[k + 1] == '>')))
		return 0;
	return k + 1;
}

/* 1 when the text before w[s] ends with "#define" and blanks: C's
 * "#define API_TOKEN "..."" assigns without an operator. */
static int after_define(const char *w, size_t s)
{
	size_t k = s;

	while (k > 0 && is_blank((unsigned char)w[k - 1]))
		k--;
	return k >= 7 && memcmp(w + k - 7, "#define", 7) == 0 && k < s;
}

/* The quote of a string literal opened earlier on the line that w[j] is
 * inside, or 0 (a guess: the line may continue a string or a comment):
 * there "name=value" is text, as in "host=db password=..." or
 * "?access_token=...". */
static int in_string_at(const char *w, size_t j)
{
	size_t k;
	char q = 0;

	for (k = 0; k < j; k++) {
		if (q && w[k] == '\\')
			k++;
		else if (q && w[k] == q)
			q = 0;
		else if (!q && is_quote((unsigned char)w[k]))
			q = w[k];
	}
	return (unsigned char)q;
}

/* Looks for an assignment of a literal to a secret-like name at w[i];
 * *next receives where to go on. Returns nonzero when the scan must
 * stop. */
static int check_assignment(struct scan_ctx *c, const char *w, size_t n,
			    size_t i, size_t word_len, size_t *next)
{
	size_t s = i, j = i + word_len, skip, vstart, vlen, name_end, p;
	size_t pre_len = 0, run_start, run_len;
	char reason[REASON_MAX];
	int quoted = 0, expression = c->code, quote = 0, format = 0;
	int embedded = 0; /* text inside a string of code */
	unsigned forms;
	double h;

	while (s > 0 && is_name((unsigned char)w[s - 1]))
		s--;
	while (j < n && is_name((unsigned char)w[j]))
		j++;
	*next = name_end = j;
	/* C's "char api_token[] = ..." / "[64] =" */
	if (c->code && j < n && w[j] == '[') {
		for (p = j + 1; p < n && p < j + 16 && w[p] != ']'; p++)
			;
		if (p < n && w[p] == ']')
			j = p + 1;
	}
	/* "name": / 'name' = / ["name"] = */
	for (skip = 0; skip < 2 && j < n &&
		       (is_quote((unsigned char)w[j]) || w[j] == ']');
	     skip++)
		j++;
	while (j < n && is_blank((unsigned char)w[j]))
		j++;
	if (j >= n)
		return 0;
	if (w[j] == '=') {
		if (j + 1 < n && w[j + 1] == '=')
			return 0; /* a comparison */
		j += (j + 1 < n && w[j + 1] == '>') ? 2 : 1;
	} else if (w[j] == ':') {
		if (j + 1 < n && w[j + 1] == ':')
			return 0;
		j += (j + 1 < n && w[j + 1] == '=') ? 2 : 1;
		if (c->code) {
			size_t t = j;

			while (t < n && is_blank((unsigned char)w[t]))
				t++;
			if (t < n && !is_quote((unsigned char)w[t]) &&
			    !string_prefix(w + t, n - t) &&
			    (p = after_type(w, n, t)) != 0)
				j = p;
		}
	} else if (!(c->code && (w[j] == '"' || w[j] == '\'') &&
		     after_define(w, s))) {
		return 0;
	}
	while (j < n && is_blank((unsigned char)w[j]))
		j++;
	if (j >= n)
		return 0;
	/* In code, an unquoted value is an expression, unless the
	 * assignment is itself text inside a string. */
	if (expression && (quote = in_string_at(w, j)) != 0) {
		expression = 0;
		embedded = 1;
	}
	pre_len = string_prefix(w + j, n - j);
	j += pre_len;
	if (is_quote((unsigned char)w[j])) {
		size_t e = string_end(w + j, n - j);
		static const char fmt[] = ".format(";

		/* In shell and configuration files `...` runs a command. */
		if (w[j] == '`' && !expression)
			return 0;
		quoted = 1;
		quote = w[j];
		vstart = j + 1;
		j += e;
		format = j < n && n - j - 1 >= sizeof(fmt) - 1 &&
			 memcmp(w + j + 1, fmt, sizeof(fmt) - 1) == 0;
	} else {
		if (expression)
			return 0;
		/* Inside a string of code an escape (\n) ends the text. */
		vstart = j;
		while (j < n && !is_blank((unsigned char)w[j]) &&
		       !is_quote((unsigned char)w[j]) && w[j] != ',' &&
		       w[j] != ';' && w[j] != ')' && w[j] != '}' &&
		       !(c->code && w[j] == '\\'))
			j++;
	}
	vlen = j - vstart;
	*next = j > *next ? j : *next;
	if (vlen < MIN_SECRET_LEN || is_placeholder(w + vstart, vlen) ||
	    is_reference(w + vstart, vlen))
		return 0;
	for (p = vstart; p < vstart + vlen; p++)
		if (is_blank((unsigned char)w[p]))
			return 0;
	if (!quoted && w[vstart] && strchr("!*&|>[{(", w[vstart]))
		return 0; /* a YAML tag, alias, block; an expression */
	if (is_password_hash(w + vstart, vlen))
		return 0; /* $6$rounds=5000$...: $rounds is no expansion */
	/* What the language fills in at run time holds no secret; the text
	 * around it may, when a long random run is left. */
	forms = dialect((enum lang)c->lang, quote,
			quoted ? w + vstart - 1 - pre_len : NULL, pre_len,
			format);
	/* Text inside a string of code (a command line, a DSN, a query,
	 * a line of Ruby) is in a language of its own: what tools and
	 * templates expand counts too. */
	if (embedded)
		forms |= dialect(LANG_CONFIG, 0, NULL, 0, 0) | IP_HASH_BRACE |
			 IP_PRINTF;
	if (literal_run(forms, w + vstart, vlen, &run_start, &run_len)) {
		vstart += run_start;
		vlen = run_len;
	}
	if (vlen < MIN_SECRET_LEN ||
	    (!quoted && bare_is_not_literal(w + vstart, vlen)))
		return 0;
	if (!looks_random(w + vstart, vlen, &h))
		return 0;
	snprintf(reason, sizeof(reason),
		 "high-entropy literal (%.1f bits/char) assigned to '%.*s'", h,
		 (int)(name_end - s > NAME_SHOWN ? NAME_SHOWN : name_end - s),
		 w + s);
	return report(c, c->line, "secret-assignment", reason, w + vstart,
		      vlen);
}

static int detect_assignment(struct scan_ctx *c, const char *w, size_t n,
			     size_t limit)
{
	size_t i = 0, k, next;

	while (i < limit) {
		int ch = lower((unsigned char)w[i]), matched = 0;

		if (ch == 'c' || ch == 'p' || ch == 'a' || ch == 's' ||
		    ch == 't') {
			for (k = 0;
			     k < sizeof(secret_names) / sizeof(secret_names[0]);
			     k++) {
				size_t before = c->line_hits;

				if (!ci_prefix(w + i, n - i, secret_names[k]))
					continue;
				if (check_assignment(c, w, n, i,
						     strlen(secret_names[k]),
						     &next))
					return 1;
				if (c->line_hits > before)
					return 0; /* one per line is enough */
				matched = 1;
				break;
			}
		}
		i = matched && next > i ? next : i + 1;
	}
	return 0;
}

/* ---- credentials inside a URL ------------------------------------------ */

/* A URL carries a secret in two places: the password of its userinfo
 * (scheme://user:PASSWORD@host) and the values of credential parameters of
 * its query (?token=, &sig=, &key=...). Both are read here, the rest of the
 * URL (host, path) is not a secret. Slack's incoming webhooks carry theirs
 * in the path. */

/* Stands for a password in documentation and examples. changeme and the
 * like count too (is_placeholder): a weak default in a committed example
 * is far more often a slot to fill than a live password, and this rule is
 * for written-out credentials that work. */
static int url_password_placeholder(const char *v, size_t n)
{
	static const char *const words[] = {
		"password", "passwd", "pass", "pwd", "secret", "pw",   "xxx",
		"***",      "token",  "foo",  "bar", "test",   "user", "apikey",
	};
	size_t i;

	for (i = 0; i < sizeof(words) / sizeof(words[0]); i++)
		if (strlen(words[i]) == n && ci_prefix(v, n, words[i]))
			return 1;
	return is_placeholder(v, n);
}

/* 1 when a URL part holds something filled in at run time, in any of the
 * forms a language or a tool uses: $X ${x} $(x) {x} #{x} %s <x> `x`. */
static int url_part_filled_in(const char *v, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		if (v[i] && strchr("${}<>`", v[i]))
			return 1;
		if (v[i] == '%' && i + 1 < n && strchr("s(dv", v[i + 1]) &&
		    v[i + 1])
			return 1;
	}
	return 0;
}

/* Characters that end a URL written in text or code. */
static int url_end(int ch)
{
	return is_blank(ch) || is_quote(ch) || ch == '<' || ch == '>' ||
	       ch == '\\' || ch == ')' || ch == ']' || ch == ',' || ch == ';';
}

/* 1 when a query parameter's name asks for a credential: token,
 * access_token, key, api_key, secret, sig, signature, password, pass,
 * pwd, auth. */
static int url_secret_param(const char *v, size_t n)
{
	static const char *const tails[] = {
		"token",    "key",    "secret", "sig", "signature",
		"password", "passwd", "pass",   "pwd", "auth",
	};
	size_t i, l;

	for (i = 0; i < sizeof(tails) / sizeof(tails[0]); i++) {
		l = strlen(tails[i]);
		if (n >= l && ci_prefix(v + n - l, l, tails[i]))
			return 1;
	}
	return 0;
}

/* Slack incoming webhook: hooks.slack.com/services/T.../B.../SECRET. */
static size_t slack_webhook(const char *v, size_t n)
{
	static const char host[] = "hooks.slack.com/services/";
	size_t i = sizeof(host) - 1, part, start;

	if (n < i || memcmp(v, host, i) != 0)
		return 0;
	for (part = 0; part < 3; part++) {
		start = i;
		while (i < n && is_alnum((unsigned char)v[i]))
			i++;
		if (i - start < (part == 2 ? 16u : 6u))
			return 0;
		if (part < 2) {
			if (i >= n || v[i] != '/')
				return 0;
			i++;
		}
	}
	return is_placeholder(v + start, i - start) ? 0 : i;
}

/* Decodes the percent-encoding of v[0..n) into out (cap bytes, cap > 0);
 * returns the decoded length, or 0 when it does not fit. */
static size_t percent_decode(char *out, size_t cap, const char *v, size_t n)
{
	size_t i, o = 0;

	for (i = 0; i < n; i++) {
		int hi, lo;

		if (o >= cap)
			return 0;
		if (v[i] == '%' && i + 2 < n &&
		    (hi = nv_hex_value((unsigned char)v[i + 1])) >= 0 &&
		    (lo = nv_hex_value((unsigned char)v[i + 2])) >= 0) {
			out[o++] = (char)(hi * 16 + lo);
			i += 2;
		} else {
			out[o++] = v[i];
		}
	}
	return o;
}

/* 1 for a word and a number (secret123, Hunter2, mypassword): how
 * examples and tests write a password. A short random password splits
 * into more parts (akdoajoRc3Pm), so reads_as_words() is too wide here. */
static int word_and_number(const char *v, size_t n)
{
	size_t i = 0, upper = 0;

	while (i < n && is_alpha((unsigned char)v[i]))
		upper += char_class((unsigned char)v[i++]) == 2;
	if (i == 0 || !(upper == 0 || upper == i ||
			(upper == 1 && char_class((unsigned char)v[0]) == 2)))
		return 0;
	while (i < n && is_digit((unsigned char)v[i]))
		i++;
	return i == n;
}

/* 1 when the userinfo password p[0..n) (as written in the URL) is one
 * worth reporting. */
static int url_password_reported(const char *p, size_t n)
{
	char plain[256];
	size_t pl;

	if (url_part_filled_in(p, n) ||
	    (pl = percent_decode(plain, sizeof(plain), p, n)) < 8)
		return 0;
	return !url_password_placeholder(plain, pl) &&
	       !word_and_number(plain, pl) &&
	       !words_between_separators(plain, pl) &&
	       !is_sequence(plain, pl) && nv_scan_entropy(plain, pl) >= 3.0;
}

static int detect_url(struct scan_ctx *c, const char *w, size_t n, size_t limit)
{
	size_t i, a, e, at, colon, q, k;
	char reason[REASON_MAX];
	double h;

	for (i = 0; i + 3 <= n && i < limit; i++) {
		if (w[i] != ':' || w[i + 1] != '/' || w[i + 2] != '/' ||
		    i == 0 || !is_alnum((unsigned char)w[i - 1]))
			continue;
		a = i + 3;
		for (e = a; e < n && !url_end((unsigned char)w[e]); e++)
			;
		/* userinfo: up to the last '@' before the path */
		for (at = 0, k = a;
		     k < e && w[k] != '/' && w[k] != '?' && w[k] != '#'; k++)
			if (w[k] == '@')
				at = k;
		if ((k = slack_webhook(w + a, e - a)) != 0) {
			if (report(c, c->line, "slack-webhook",
				   "Slack incoming webhook URL", w + a, k))
				return 1;
			i = a + k - 1;
			continue;
		}
		/* A host filled in at run time (%HOSTIP, ${DB_HOST}) makes
		 * the URL a template, and its password an example. */
		if (at && at + 1 < e && !strchr("%${<@", w[at + 1])) {
			for (colon = a; colon < at && w[colon] != ':'; colon++)
				;
			if (colon < at &&
			    url_password_reported(w + colon + 1,
						  at - colon - 1)) {
				snprintf(reason, sizeof(reason),
					 "password in a URL's userinfo");
				return report(c, c->line, "url-credentials",
					      reason, w + colon + 1,
					      at - colon - 1);
			}
		}
		/* query: name=value pairs after '?' */
		for (q = a; q < e && w[q] != '?'; q++)
			;
		while (q < e) {
			size_t ns = q + 1, ne, vs, ve;

			for (ne = ns; ne < e && w[ne] != '=' && w[ne] != '&';
			     ne++)
				;
			if (ne >= e || w[ne] != '=') {
				q = ne;
				continue;
			}
			vs = ne + 1;
			for (ve = vs; ve < e && w[ve] != '&' && w[ve] != '#';
			     ve++)
				;
			if (url_secret_param(w + ns, ne - ns) &&
			    !url_part_filled_in(w + vs, ve - vs) &&
			    looks_random(w + vs, ve - vs, &h)) {
				snprintf(reason, sizeof(reason),
					 "high-entropy value (%.1f bits/char) "
					 "of the URL parameter '%.*s'",
					 h,
					 (int)(ne - ns > NAME_SHOWN ? NAME_SHOWN
								    : ne - ns),
					 w + ns);
				return report(c, c->line, "url-credentials",
					      reason, w + vs, ve - vs);
			}
			q = ve;
		}
		i = e > i ? e - 1 : i;
	}
	return 0;
}

/* ---- .env files --------------------------------------------------------- */

/* 1 when the line sets NAME=value with a value that is not a placeholder;
 * *name and *name_len receive the name. */
static int dotenv_sets(const char *p, size_t n, const char **name,
		       size_t *name_len)
{
	size_t i = 0, ns, vs, ve, run_start, run_len;
	int quote = 0;
	double h;

	while (i < n && is_blank((unsigned char)p[i]))
		i++;
	if (n - i > 7 && memcmp(p + i, "export", 6) == 0 &&
	    is_blank((unsigned char)p[i + 6])) {
		i += 7;
		while (i < n && is_blank((unsigned char)p[i]))
			i++;
	}
	ns = i;
	if (i >= n || !(is_alpha((unsigned char)p[i]) || p[i] == '_'))
		return 0;
	while (i < n && is_name((unsigned char)p[i]))
		i++;
	*name = p + ns;
	*name_len = i - ns;
	while (i < n && is_blank((unsigned char)p[i]))
		i++;
	if (i >= n || p[i] != '=')
		return 0;
	i++;
	while (i < n && is_blank((unsigned char)p[i]))
		i++;
	if (i < n && is_quote((unsigned char)p[i])) {
		char q = p[i];

		quote = q;
		vs = ++i;
		while (i < n && p[i] != q)
			i++;
		ve = i;
	} else {
		vs = i;
		while (i < n && !(p[i] == '#' && i > vs &&
				  is_blank((unsigned char)p[i - 1])))
			i++;
		ve = i;
		while (ve > vs && is_blank((unsigned char)p[ve - 1]))
			ve--;
	}
	/* A value made of expansions (URL=http://$HOST:$PORT) sets
	 * nothing of its own, unless a long random run is left between
	 * them. Zk8$qP2vLm9 expands nothing: qP2vLm9 is no variable. */
	if (is_placeholder(p + vs, ve - vs) ||
	    is_password_hash(p + vs, ve - vs))
		return 0;
	if (!literal_run(dialect(LANG_DOTENV, quote, NULL, 0, 0), p + vs,
			 ve - vs, &run_start, &run_len))
		return 1;
	return looks_random(p + vs + run_start, run_len, &h);
}

/* ---- files ------------------------------------------------------------- */

static int scan_line(struct scan_ctx *c, const char *p, size_t n)
{
	size_t off = 0;

	if (c->dotenv) {
		const char *name;
		size_t name_len;

		if (dotenv_sets(p, n, &name, &name_len)) {
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
		    detect_assignment(c, p + off, wn, limit))
			return 1;
		if (!c->dotenv && c->line_hits == 0 &&
		    detect_url(c, p + off, wn, limit))
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

/* Scans one file. data is NULL when the caller did not read it because
 * size is over the cap. */
static int scan_file(struct scan_ctx *c, const char *path, const char *data,
		     size_t size)
{
	const char *base = base_name(path);
	int pkcs12 = has_suffix(base, ".p12") || has_suffix(base, ".pfx");
	char reason[REASON_MAX];

	if (scan_done(c))
		return 1;
	c->path = path;
	c->allowed = nv_scan_allowlist_match(c->al, path) != NULL;
	c->key_ext =
		pkcs12 || has_suffix(base, ".pem") || has_suffix(base, ".key");
	c->dotenv = is_dotenv_name(base);
	c->code = is_code_file(base);
	c->lang = (int)lang_of(base, c->dotenv);
	c->key_blocks = 0;
	c->dotenv_values = 0;
	c->line_end = c->next_line = c->data_end = NULL;

	if (!data || size > NV_SCAN_MAX_FILE_SIZE) {
		c->st->skipped_large++;
	} else if (pkcs12 && looks_der(data, size)) {
		c->st->skipped_binary++;
		if (report(c, 0, "pkcs12", "PKCS#12 key store", NULL, 0))
			return 1;
	} else if (memchr(data, '\0',
			  size < NV_SCAN_BINARY_PROBE ? size
						      : NV_SCAN_BINARY_PROBE)) {
		c->st->skipped_binary++;
	} else {
		c->st->files++;
		if (scan_lines(c, data, size))
			return 1;
		if (c->dotenv_values) {
			snprintf(reason, sizeof(reason),
				 ".env file sets %zu value%s (first: %s); "
				 "commit a .env.example instead",
				 c->dotenv_values,
				 c->dotenv_values == 1 ? "" : "s",
				 c->dotenv_name);
			if (report(c, c->dotenv_line, "dotenv", reason, NULL,
				   0))
				return 1;
		}
	}
	/* An empty (or blank) file named like a key holds none: test
	 * fixtures of SSH tools have them. */
	if (is_key_file_name(base) && c->key_blocks == 0 &&
	    !is_blank_data(data, size) &&
	    report(c, 0, "private-key-file",
		   "file named like an SSH private key", NULL, 0))
		return 1;
	return 0;
}

static nv_scan_stats *stats_or(nv_scan_stats *stats, nv_scan_stats *local)
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
	c.st = stats_or(stats, &local);
	scan_file(&c, path ? path : "", data, len);
	return c.stop;
}

/* ---- allow-list --------------------------------------------------------- */

struct allow_entry {
	char *glob;
	char *reason;
};

struct nv_scan_allowlist {
	struct allow_entry *e;
	size_t n;
};

void nv_scan_allowlist_free(nv_scan_allowlist *al)
{
	size_t i;

	if (!al)
		return;
	for (i = 0; i < al->n; i++) {
		free(al->e[i].glob);
		free(al->e[i].reason);
	}
	free(al->e);
	free(al);
}

/* Splits s in place on '/'; returns the number of parts, or 0 when there
 * are more than max or an empty one. */
static size_t split_path(char *s, char **parts, size_t max)
{
	size_t n = 0;
	char *p = s;

	for (;;) {
		char *slash = strchr(p, '/');

		if (n == max)
			return 0;
		parts[n++] = p;
		if (!slash)
			break;
		*slash = '\0';
		p = slash + 1;
	}
	for (max = 0; max < n; max++)
		if (!parts[max][0])
			return 0;
	return n;
}

/* Whole-path glob match, component by component: "**" matches any number
 * of components, other components go to fnmatch. Dynamic programming over
 * (pattern part, path part), so the cost is bounded whatever the stars. */
static int glob_match(const char *glob, const char *path)
{
	char gbuf[GLOB_MAX + 4], pbuf[PATH_CAP];
	char *gp[GLOB_MAX_SEGS], *pp[PATH_MAX_SEGS];
	unsigned char row[PATH_MAX_SEGS + 1], next[PATH_MAX_SEGS + 1];
	size_t gn, pn, i, j;

	if (strlen(glob) >= sizeof(gbuf) || strlen(path) >= sizeof(pbuf))
		return 0;
	memcpy(gbuf, glob, strlen(glob) + 1);
	memcpy(pbuf, path, strlen(path) + 1);
	gn = split_path(gbuf, gp, GLOB_MAX_SEGS);
	pn = split_path(pbuf, pp, PATH_MAX_SEGS);
	if (!gn || !pn)
		return 0;
	/* next[j]: parts gp[i+1..] match pp[j..] */
	for (j = 0; j <= pn; j++)
		next[j] = j == pn;
	for (i = gn; i-- > 0;) {
		int any = strcmp(gp[i], "**") == 0;

		row[pn] = any ? next[pn] : 0;
		for (j = pn; j-- > 0;) {
			if (any)
				row[j] = next[j] || row[j + 1];
			else
				row[j] = next[j + 1] &&
					 fnmatch(gp[i], pp[j], 0) == 0;
		}
		memcpy(next, row, pn + 1);
	}
	return next[0];
}

const char *nv_scan_allowlist_match(const nv_scan_allowlist *al,
				    const char *path)
{
	size_t i;

	if (!al || !path)
		return NULL;
	for (i = 0; i < al->n; i++)
		if (glob_match(al->e[i].glob, path))
			return al->e[i].reason;
	return NULL;
}

static char *dup_range(const char *s, size_t n, const char *suffix)
{
	size_t sl = suffix ? strlen(suffix) : 0;
	char *d = malloc(n + sl + 1);

	if (!d)
		return NULL;
	memcpy(d, s, n);
	memcpy(d + n, suffix ? suffix : "", sl);
	d[n + sl] = '\0';
	return d;
}

/* Returns nonzero only when the callback asked to stop: a full findings
 * cap must not drop the entries that follow. */
static int bad_allow_line(struct scan_ctx *c, size_t line, const char *why)
{
	char reason[REASON_MAX];

	snprintf(reason, sizeof(reason), "allow-list line ignored: %s", why);
	report(c, line, RULE_ALLOWLIST, reason, NULL, 0);
	return c->stop;
}

static int allowlist_load(struct scan_ctx *c, nv_scan_allowlist **out,
			  const char *text, size_t len, nv_err *err)
{
	nv_scan_allowlist *al;
	const char *p = text, *end = text + len;
	size_t line = 0;

	*out = NULL;
	al = calloc(1, sizeof(*al));
	if (!al)
		return nv_err_set(err, NV_ENOMEM, NULL, "out of memory");
	c->path = NV_SCAN_ALLOW_FILE;
	c->allowed = 0;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *le = nl ? nl : end, *g, *ge, *r, *re;
		struct allow_entry *e;
		const char *slash = "";

		line++;
		for (g = p;
		     g < le && (is_blank((unsigned char)*g) || *g == '\r'); g++)
			;
		for (re = le; re > g && (is_blank((unsigned char)re[-1]) ||
					 re[-1] == '\r');
		     re--)
			;
		p = nl ? nl + 1 : end;
		if (g == re || *g == '#')
			continue;
		for (ge = g; ge < re && !is_blank((unsigned char)*ge); ge++)
			;
		for (r = ge; r < re && is_blank((unsigned char)*r); r++)
			;
		if (memchr(g, '\0', (size_t)(re - g))) {
			if (bad_allow_line(c, line, "it holds a NUL byte"))
				goto stop;
			continue;
		}
		if (r == re) {
			if (bad_allow_line(c, line,
					   "write why this path may hold a "
					   "secret after the glob"))
				goto stop;
			continue;
		}
		/* Globs are relative to the root: "/x" and "./x" mean "x";
		 * "dir/" means everything below dir. */
		if (*g == '/')
			g++;
		else if (ge - g >= 2 && g[0] == '.' && g[1] == '/')
			g += 2;
		if (ge > g && ge[-1] == '/')
			slash = "**";
		if (ge == g || (size_t)(ge - g) > GLOB_MAX) {
			if (bad_allow_line(c, line, "empty or too long glob"))
				goto stop;
			continue;
		}
		if (al->n == NV_SCAN_ALLOW_MAX) {
			nv_scan_allowlist_free(al);
			return nv_err_set(
				err, NV_EINVAL, "use ** globs to cover folders",
				"%s has more than %d entries",
				NV_SCAN_ALLOW_FILE, NV_SCAN_ALLOW_MAX);
		}
		if (al->n % 16 == 0) {
			e = realloc(al->e, (al->n + 16) * sizeof(*e));
			if (!e)
				goto nomem;
			al->e = e;
		}
		e = &al->e[al->n];
		e->glob = dup_range(g, (size_t)(ge - g), slash);
		e->reason = dup_range(r, (size_t)(re - r), NULL);
		al->n++;
		if (!e->glob || !e->reason)
			goto nomem;
	}
	*out = al;
	return 0;

nomem:
	nv_scan_allowlist_free(al);
	return nv_err_set(err, NV_ENOMEM, NULL, "out of memory");
stop:
	nv_scan_allowlist_free(al);
	return c->stop;
}

int nv_scan_allowlist_load(nv_scan_allowlist **out, const char *text,
			   size_t len, nv_scan_cb cb, void *payload,
			   nv_scan_stats *stats, nv_err *err)
{
	struct scan_ctx c;
	nv_scan_stats local;

	memset(&c, 0, sizeof(c));
	c.cb = cb;
	c.payload = payload;
	c.st = stats_or(stats, &local);
	return allowlist_load(&c, out, text ? text : "", text ? len : 0, err);
}

/* ---- commits ----------------------------------------------------------- */

struct commit_walk {
	struct scan_ctx *c;
	git_repository *repo;
	git_odb *odb;
	nv_err *err;
	int rc; /* an NV_E* code that stopped the walk */
	char path[PATH_CAP];
};

static int git_fail(nv_err *err, int code, const char *hint, const char *what,
		    const char *name)
{
	const git_error *ge = git_error_last();

	nv_err_set(err, code, hint, "scan: %s '%s'%s%s", what, name,
		   ge && ge->message ? ": " : "",
		   ge && ge->message ? ge->message : "");
	git_error_clear();
	return code;
}

static int scan_blob(struct commit_walk *w, const git_oid *id)
{
	git_object_t type;
	git_blob *blob = NULL;
	size_t size = 0;
	int rc;

	if (git_odb_read_header(&size, &type, w->odb, id) < 0)
		return w->rc = git_fail(w->err, NV_EIO, NULL, "cannot read",
					w->path);
	if (size > NV_SCAN_MAX_FILE_SIZE)
		return scan_file(w->c, w->path, NULL, size);
	if (git_blob_lookup(&blob, w->repo, id) < 0)
		return w->rc = git_fail(w->err, NV_EIO, NULL, "cannot read",
					w->path);
	rc = scan_file(w->c, w->path, git_blob_rawcontent(blob),
		       (size_t)git_blob_rawsize(blob));
	git_blob_free(blob);
	return rc;
}

static int walk_entry(const char *root, const git_tree_entry *e, void *payload)
{
	struct commit_walk *w = payload;
	git_filemode_t mode = git_tree_entry_filemode(e);
	size_t depth = 0;
	const char *s;

	for (s = root; *s; s++)
		depth += *s == '/';
	if (mode == GIT_FILEMODE_TREE) {
		if (depth + 1 <= NV_SCAN_MAX_DEPTH)
			return 0;
		w->rc = nv_err_set(
			w->err, NV_EREFUSED, "flatten the folder structure",
			"scan: '%s%s' is nested deeper than %d "
			"folders",
			root, git_tree_entry_name(e), NV_SCAN_MAX_DEPTH);
		return -1;
	}
	if (mode != GIT_FILEMODE_BLOB && mode != GIT_FILEMODE_BLOB_EXECUTABLE) {
		w->c->st->skipped_other++;
		return 0;
	}
	if ((size_t)snprintf(w->path, sizeof(w->path), "%s%s", root,
			     git_tree_entry_name(e)) >= sizeof(w->path)) {
		w->rc = nv_err_set(w->err, NV_EINVAL, NULL,
				   "scan: path too long under '%.200s'", root);
		return -1;
	}
	if (scan_blob(w, git_tree_entry_id(e)) || scan_done(w->c))
		return -1;
	return 0;
}

static int parse_oid(git_oid *oid, const char *hex, nv_err *err)
{
	size_t i;

	for (i = 0; hex && i < 40; i++)
		if (!is_digit((unsigned char)hex[i]) &&
		    !(lower((unsigned char)hex[i]) >= 'a' &&
		      lower((unsigned char)hex[i]) <= 'f'))
			break;
	if (!hex || i != 40 || hex[40] != '\0' || git_oid_fromstr(oid, hex))
		return nv_err_set(err, NV_EINVAL,
				  "pass a full 40-character commit id",
				  "scan: '%.80s' is not a commit id",
				  hex ? hex : "(null)");
	return 0;
}

static int load_tree_allowlist(struct commit_walk *w, git_tree *tree,
			       nv_scan_allowlist **al)
{
	const git_tree_entry *e =
		git_tree_entry_byname(tree, NV_SCAN_ALLOW_FILE);
	git_blob *blob = NULL;
	int rc;

	*al = NULL;
	if (!e || git_tree_entry_type(e) != GIT_OBJECT_BLOB)
		return 0;
	if (git_blob_lookup(&blob, w->repo, git_tree_entry_id(e)) < 0)
		return git_fail(w->err, NV_EIO, NULL, "cannot read",
				NV_SCAN_ALLOW_FILE);
	if ((size_t)git_blob_rawsize(blob) > NV_SCAN_MAX_FILE_SIZE) {
		git_blob_free(blob);
		return nv_err_set(w->err, NV_EINVAL, NULL,
				  "scan: %s is too big", NV_SCAN_ALLOW_FILE);
	}
	rc = allowlist_load(w->c, al, git_blob_rawcontent(blob),
			    (size_t)git_blob_rawsize(blob), w->err);
	git_blob_free(blob);
	return rc;
}

int nv_scan_commit(const char *repo_path, const char *oid_hex, nv_scan_cb cb,
		   void *payload, nv_scan_stats *stats, nv_err *err)
{
	struct commit_walk *w = NULL;
	struct scan_ctx c;
	nv_scan_stats local;
	nv_scan_allowlist *al = NULL;
	git_commit *commit = NULL;
	git_tree *tree = NULL;
	git_oid oid;
	int rc, grc;

	memset(&c, 0, sizeof(c));
	c.cb = cb;
	c.payload = payload;
	c.st = stats ? stats : &local;
	memset(c.st, 0, sizeof(*c.st));
	rc = parse_oid(&oid, oid_hex, err);
	if (rc)
		return rc;
	if (!repo_path || !repo_path[0])
		return nv_err_set(err, NV_EINVAL, NULL,
				  "scan: empty repository path");
	w = calloc(1, sizeof(*w));
	if (!w)
		return nv_err_set(err, NV_ENOMEM, NULL, "out of memory");
	w->c = &c;
	w->err = err;
	if (git_libgit2_init() < 0) {
		free(w);
		return git_fail(err, NV_EBACKEND, NULL, "cannot initialise",
				"libgit2");
	}
	grc = git_repository_open_ext(&w->repo, repo_path, 0, NULL);
	if (grc < 0) {
		rc = git_fail(err,
			      grc == GIT_ENOTFOUND ? NV_ENOTFOUND
			      : grc == GIT_EOWNER  ? NV_EREFUSED
						   : NV_EIO,
			      "the path must be inside a git repository",
			      "cannot open the repository of", repo_path);
		goto out;
	}
	if (git_repository_odb(&w->odb, w->repo) < 0) {
		rc = git_fail(err, NV_EIO, NULL, "cannot open the objects of",
			      repo_path);
		goto out;
	}
	grc = git_commit_lookup(&commit, w->repo, &oid);
	if (grc < 0) {
		rc = git_fail(err, grc == GIT_ENOTFOUND ? NV_ENOTFOUND : NV_EIO,
			      "check the commit id (git log --oneline)",
			      "no commit", oid_hex);
		goto out;
	}
	if (git_commit_tree(&tree, commit) < 0) {
		rc = git_fail(err, NV_EIO, NULL, "cannot read the tree of",
			      oid_hex);
		goto out;
	}
	rc = load_tree_allowlist(w, tree, &al);
	if (rc)
		goto out;
	c.al = al;
	if (!scan_done(&c) &&
	    git_tree_walk(tree, GIT_TREEWALK_PRE, walk_entry, w) < 0 &&
	    !w->rc && !scan_done(&c)) {
		rc = git_fail(err, NV_EIO, NULL, "cannot walk the tree of",
			      oid_hex);
		goto out;
	}
	git_error_clear();
	rc = w->rc ? w->rc : c.stop;

out:
	nv_scan_allowlist_free(al);
	git_tree_free(tree);
	git_commit_free(commit);
	git_odb_free(w->odb);
	git_repository_free(w->repo);
	free(w);
	git_libgit2_shutdown();
	return rc;
}

/* ---- plain folders ------------------------------------------------------ */

struct dir_walk {
	struct scan_ctx *c;
	nv_err *err;
	char *buf; /* NV_SCAN_MAX_FILE_SIZE bytes, reused for every file */
	char path[PATH_CAP];
	size_t path_len;
};

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int dir_fail(struct dir_walk *w, int errnum, const char *what,
		    const char *name)
{
	return nv_err_set_errno(w->err, NV_EIO, errnum,
				"check the folder's rights",
				"scan: cannot %s '%s%s'", what, w->path, name);
}

/* Reads a regular file of at most NV_SCAN_MAX_FILE_SIZE bytes into w->buf
 * without following a symlink put there since the lstat. */
static int read_file_at(struct dir_walk *w, int dfd, const char *name,
			size_t *len, int *regular)
{
	struct stat st;
	size_t got = 0;
	int fd;

	*regular = 0;
	fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return dir_fail(w, errno, "open", name);
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return 0;
	}
	*regular = 1;
	while (got < NV_SCAN_MAX_FILE_SIZE) {
		ssize_t r = read(fd, w->buf + got, NV_SCAN_MAX_FILE_SIZE - got);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			int e = errno;

			close(fd);
			return dir_fail(w, e, "read", name);
		}
		if (r == 0)
			break;
		got += (size_t)r;
	}
	close(fd);
	*len = got;
	return 0;
}

static int walk_dir(struct dir_walk *w, int dfd, int depth);

static int walk_child(struct dir_walk *w, int dfd, const char *name, int depth)
{
	struct stat st;
	size_t len = 0, saved = w->path_len;
	int rc = 0, regular, fd;

	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return dir_fail(w, errno, "stat", name);
	if (S_ISDIR(st.st_mode)) {
		if (depth + 1 > NV_SCAN_MAX_DEPTH)
			return nv_err_set(w->err, NV_EREFUSED,
					  "flatten the folder structure",
					  "scan: '%s%s' is nested deeper than "
					  "%d folders",
					  w->path, name, NV_SCAN_MAX_DEPTH);
		if (saved + strlen(name) + 2 > sizeof(w->path))
			return nv_err_set(w->err, NV_EINVAL, NULL,
					  "scan: path too long under '%.200s'",
					  w->path);
		fd = openat(dfd, name,
			    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0)
			return dir_fail(w, errno, "open", name);
		w->path_len += (size_t)snprintf(
			w->path + saved, sizeof(w->path) - saved, "%s/", name);
		rc = walk_dir(w, fd, depth + 1);
		w->path_len = saved;
		w->path[saved] = '\0';
		return rc;
	}
	if (!S_ISREG(st.st_mode)) {
		w->c->st->skipped_other++;
		return 0;
	}
	if (saved + strlen(name) + 1 > sizeof(w->path))
		return nv_err_set(w->err, NV_EINVAL, NULL,
				  "scan: path too long under '%.200s'",
				  w->path);
	if ((unsigned long long)st.st_size > NV_SCAN_MAX_FILE_SIZE) {
		memcpy(w->path + saved, name, strlen(name) + 1);
		scan_file(w->c, w->path, NULL, (size_t)st.st_size);
		w->path[saved] = '\0';
		return 0;
	}
	rc = read_file_at(w, dfd, name, &len, &regular);
	if (rc)
		return rc;
	memcpy(w->path + saved, name, strlen(name) + 1);
	if (regular)
		scan_file(w->c, w->path, w->buf, len);
	else
		w->c->st->skipped_other++;
	w->path[saved] = '\0';
	return 0;
}

/* Takes ownership of dfd. Entries are visited in name order so that the
 * findings come out the same on every machine. */
static int walk_dir(struct dir_walk *w, int dfd, int depth)
{
	DIR *d = fdopendir(dfd);
	char **names = NULL;
	size_t n = 0, cap = 0, i;
	struct dirent *de;
	int rc = 0;

	if (!d) {
		rc = dir_fail(w, errno, "list", "");
		close(dfd);
		return rc;
	}
	while ((de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 ||
		    strcmp(de->d_name, "..") == 0 ||
		    strcmp(de->d_name, ".git") == 0)
			continue;
		if (n == DIR_MAX_ENTRIES) {
			rc = nv_err_set(w->err, NV_ENOMEM, NULL,
					"scan: '%s' has more than %d entries",
					w->path, DIR_MAX_ENTRIES);
			goto out;
		}
		if (n == cap) {
			char **grown;

			cap = cap ? cap * 2 : 64;
			grown = realloc(names, cap * sizeof(*names));
			if (!grown) {
				rc = nv_err_set(w->err, NV_ENOMEM, NULL,
						"out of memory");
				goto out;
			}
			names = grown;
		}
		names[n] = strdup(de->d_name);
		if (!names[n]) {
			rc = nv_err_set(w->err, NV_ENOMEM, NULL,
					"out of memory");
			goto out;
		}
		n++;
	}
	if (n)
		qsort(names, n, sizeof(*names), cmp_names);
	for (i = 0; i < n && !rc && !scan_done(w->c); i++)
		rc = walk_child(w, dirfd(d), names[i], depth);

out:
	for (i = 0; i < n; i++)
		free(names[i]);
	free(names);
	closedir(d);
	return rc;
}

int nv_scan_dir(const char *dir, nv_scan_cb cb, void *payload,
		nv_scan_stats *stats, nv_err *err)
{
	struct dir_walk w;
	struct scan_ctx c;
	nv_scan_stats local;
	nv_scan_allowlist *al = NULL;
	struct stat st;
	size_t len = 0;
	int fd, rc, regular = 0;

	memset(&c, 0, sizeof(c));
	memset(&w, 0, sizeof(w));
	c.cb = cb;
	c.payload = payload;
	c.st = stats ? stats : &local;
	memset(c.st, 0, sizeof(*c.st));
	w.c = &c;
	w.err = err;
	if (!dir || !dir[0])
		return nv_err_set(err, NV_EINVAL, NULL, "scan: empty folder");
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return nv_err_set_errno(
			err, errno == ENOENT ? NV_ENOTFOUND : NV_EIO, errno,
			NULL, "scan: cannot open '%s'", dir);
	w.buf = malloc(NV_SCAN_MAX_FILE_SIZE);
	if (!w.buf) {
		close(fd);
		return nv_err_set(err, NV_ENOMEM, NULL, "out of memory");
	}
	/* A symlinked allow-list is ignored (and counted as skipped). */
	if (fstatat(fd, NV_SCAN_ALLOW_FILE, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	    S_ISREG(st.st_mode)) {
		rc = read_file_at(&w, fd, NV_SCAN_ALLOW_FILE, &len, &regular);
		if (!rc && regular)
			rc = allowlist_load(&c, &al, w.buf, len, err);
		if (rc || scan_done(&c)) {
			close(fd);
			goto out;
		}
	}
	c.al = al;
	rc = walk_dir(&w, fd, 0);
	if (!rc)
		rc = c.stop;

out:
	if (!rc)
		rc = c.stop;
	nv_scan_allowlist_free(al);
	free(w.buf);
	return rc;
}
