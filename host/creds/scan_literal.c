/* The rules of the secret scanner that judge a written-out value (see
 * scan.h): a name assigned a literal (secret-assignment), the credentials
 * of a URL (url-credentials, slack-webhook) and the values a .env file
 * sets (dotenv). Each reads the value the way the file's language does and
 * keeps only what is written out whole. scan.c calls them line by line.
 * Like scan.c, this file never writes out whole a marker it looks for. */
#include "creds/scan.h"
#include "creds/scan_internal.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "core/hex.h"

#define MIN_SECRET_LEN 16
#define MIN_ENTROPY    3.5

/* ---- name = "literal" ---------------------------------------------------- */

/* Only a literal can leak a secret: a value computed at run time (a field,
 * a call, a variable, an interpolated string) holds none in the tree. So the
 * rule reads the value the way the file's language does, keeps only what is
 * written out whole, and then asks whether it looks random. */

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

static const char *const secret_names[] = {
	"client_secret", "private_key", "api_key", "apikey",
	"password",      "passwd",      "secret",  "token",
};

/* The first two letters of the secret names, any case: a bit per pair of
 * bytes, built once. */
static uint64_t name_pairs[65536 / 64];
static pthread_once_t name_pairs_once = PTHREAD_ONCE_INIT;

static void name_pairs_init(void)
{
	for (size_t k = 0; k < sizeof(secret_names) / sizeof(secret_names[0]);
	     k++) {
		for (unsigned up = 0; up < 4; up++) {
			unsigned a = (unsigned char)secret_names[k][0];
			unsigned b = (unsigned char)secret_names[k][1];
			if ((up & 1) && a >= 'a' && a <= 'z')
				a -= 'a' - 'A';
			if ((up & 2) && b >= 'a' && b <= 'z')
				b -= 'a' - 'A';
			unsigned v = a | b << 8;
			name_pairs[v >> 6] |= (uint64_t)1 << (v & 63);
		}
	}
}

static int name_starts(unsigned a, unsigned b)
{
	unsigned v = a | b << 8;

	return (int)((name_pairs[v >> 6] >> (v & 63)) & 1u);
}

static int is_ident(int ch)
{
	return is_alnum(ch) || ch == '_';
}

/* Files in a programming language: there an unquoted value is an expression
 * (s->token_exp = fresh->expires_at), never a literal. In the other files
 * (configuration, shell, .env, documents) an unquoted value is a literal
 * unless it expands something. */
int scan_is_code_file(const char *base)
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

int scan_lang_of(const char *base, int dotenv)
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
	return scan_is_code_file(base) ? LANG_CODE : LANG_CONFIG;
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

/* 1 for an identifier made of words (id-regCtrl-regToken,
 * challengePassword, sha256WithRSAEncryption): only [A-Za-z0-9_-], two
 * words or more (split as reads_as_words() does) joined in camelCase at
 * least once, two thirds of the letters lower case, the words of letters
 * three letters long on average with at most one of a single letter, a
 * quarter of the letters vowels, and digits only at a word's end (never
 * followed by a lower-case letter). Values without a camelCase hump are
 * reads_as_words()' to judge. The name a header gives an object
 * (#define SN_..._regToken "id-regCtrl-regToken") is such a word, not a
 * secret, whatever the name it is assigned to says. A generated key mixes
 * classes every two characters or so: its words are short, several are
 * a single letter, and its digits run into lower case. */
static int reads_as_identifier(const char *v, size_t n)
{
	size_t i, words = 0, single = 0, letters = 0, letter_words = 0;
	size_t vowels = 0, run = 0; /* run: letters of the current word */
	size_t lower_n = 0, upper = 0, humps = 0;
	int prev = 0;

	for (i = 0; i <= n; i++) {
		int ch = i < n ? (unsigned char)v[i] : 0;
		int cls = char_class(ch);
		int next = i + 1 < n ? char_class((unsigned char)v[i + 1]) : 0;
		int starts = cls && (prev == 0 || (cls == 3) != (prev == 3) ||
				     (cls == 2 && prev == 1) ||
				     (cls == 2 && prev == 2 && next == 1));

		if (i < n && !cls && ch != '-' && ch != '_')
			return 0;
		if (prev == 3 && cls == 1)
			return 0;
		if (starts || !cls) { /* the word before ends here */
			single += run == 1;
			run = 0;
		}
		if (starts) {
			words++;
			letter_words += cls != 3;
		}
		if (cls == 1 || cls == 2) {
			letters++;
			run++;
			vowels += strchr("aeiou", lower(ch)) != NULL;
		}
		lower_n += cls == 1;
		upper += cls == 2;
		humps += cls == 2 && prev == 1;
		prev = cls;
	}
	return words >= 2 && humps > 0 && lower_n >= 2 * upper &&
	       letters >= 3 * letter_words && single <= 1 &&
	       vowels * 4 >= letters;
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
	if (n < MIN_SECRET_LEN || scan_is_placeholder(v, n) ||
	    is_password_hash(v, n))
		return 0;
	for (i = 0; i < n; i++)
		if (is_blank((unsigned char)v[i]))
			return 0;
	if (ci_contains(v, n, "://") || reads_as_words(v, n) ||
	    reads_as_identifier(v, n) || is_sequence(v, n))
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
	if (vlen < MIN_SECRET_LEN || scan_is_placeholder(w + vstart, vlen) ||
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
	return scan_report(c, c->line, "secret-assignment", reason, w + vstart,
			   vlen);
}

int scan_detect_assignment(struct scan_ctx *c, const char *w, size_t n,
			   size_t limit)
{
	size_t i = 0, k, next;

	pthread_once(&name_pairs_once, name_pairs_init);
	while (i < limit) {
		int matched = 0;

		/* a name's first two letters, any case, before the names
		 * themselves are tried (most letters of a text start none) */
		if (i + 1 < n &&
		    name_starts((unsigned char)w[i], (unsigned char)w[i + 1])) {
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
 * like count too (scan_is_placeholder): a weak default in a committed example
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
	return scan_is_placeholder(v, n);
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
	return scan_is_placeholder(v + start, i - start) ? 0 : i;
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

int scan_detect_url(struct scan_ctx *c, const char *w, size_t n, size_t limit)
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
			if (scan_report(c, c->line, "slack-webhook",
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
				return scan_report(
					c, c->line, "url-credentials", reason,
					w + colon + 1, at - colon - 1);
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
				return scan_report(c, c->line,
						   "url-credentials", reason,
						   w + vs, ve - vs);
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
int scan_dotenv_sets(const char *p, size_t n, const char **name,
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
	if (scan_is_placeholder(p + vs, ve - vs) ||
	    is_password_hash(p + vs, ve - vs))
		return 0;
	if (!literal_run(dialect(LANG_DOTENV, quote, NULL, 0, 0), p + vs,
			 ve - vs, &run_start, &run_len))
		return 1;
	return looks_random(p + vs + run_start, run_len, &h);
}
