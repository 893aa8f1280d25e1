/* The output module's terminal escaping: what nv_out_term_char() shows as
 * a visible escape (C0 and C1 controls, DEL, bytes that are not UTF-8,
 * separators and bidirectional controls) and what it leaves (text, tab,
 * newline, valid UTF-8); stderr escaped through a sink, stdout and raw
 * writes left alone, and the redactor's filter still applied first. */
#include <stdlib.h>
#include <string.h>

#include "core/buf.h"
#include "core/output.h"
#include "creds/redact.h"
#include "nv_test.h"

static nv_buf got[3];

static void capture(int stream, const char *buf, size_t len, void *payload)
{
	(void)payload;
	nv_buf_append(&got[stream], buf, len);
}

/* What a write of in to stream shows, NUL-terminated. */
static const char *shown(int stream, const char *in, size_t len, int raw)
{
	static char text[1024];

	nv_buf_free(&got[stream]);
	nv_buf_init(&got[stream], sizeof(text) - 1);
	if (raw)
		nv_out_write_raw(stream, in, len);
	else
		nv_out_write(stream, in, len);
	snprintf(text, sizeof(text), "%.*s", (int)got[stream].len,
		 got[stream].data ? got[stream].data : "");
	return text;
}

#define ERR(lit)     shown(NV_OUT_STDERR, lit, sizeof(lit) - 1, 0)
#define ERR_RAW(lit) shown(NV_OUT_STDERR, lit, sizeof(lit) - 1, 1)
#define OUT(lit)     shown(NV_OUT_STDOUT, lit, sizeof(lit) - 1, 0)

static void test_term_char(void)
{
	static const struct {
		const char *in;
		size_t len, used;
		const char *esc; /* "" when shown as it is */
	} cases[] = {
		{"a", 1, 1, ""},
		{"\t", 1, 1, ""},
		{"\n", 1, 1, ""},
		{"\\", 1, 1, ""},
		{"\x1b", 1, 1, "\\x1b"},
		{"\r", 1, 1, "\\x0d"},
		{"\a", 1, 1, "\\x07"},
		{"\b", 1, 1, "\\x08"},
		{"\x7f", 1, 1, "\\x7f"},
		{"\0", 1, 1, "\\x00"},
		{"\xc3\xa9", 2, 2, ""},            /* e acute */
		{"\xe6\x97\xa5", 3, 3, ""},        /* a CJK character */
		{"\xf0\x9f\x98\x80", 4, 4, ""},    /* an emoji */
		{"\xc2\x9b", 2, 2, "\\u009b"},     /* C1 CSI */
		{"\xc2\x85", 2, 2, "\\u0085"},     /* C1 NEL */
		{"\xc2\xa0", 2, 2, ""},            /* no-break space */
		{"\xe2\x80\xae", 3, 3, "\\u202e"}, /* right-to-left override */
		{"\xe2\x81\xa6", 3, 3, "\\u2066"}, /* left-to-right isolate */
		{"\xe2\x80\xa8", 3, 3, "\\u2028"}, /* line separator */
		{"\x9b", 1, 1, "\\x9b"},           /* 8-bit CSI, not UTF-8 */
		{"\xc0\x9b", 2, 1, "\\xc0"},       /* overlong */
		{"\xed\xa0\x80", 3, 1, "\\xed"},   /* surrogate */
		{"\xf4\x90\x80\x80", 4, 1, "\\xf4"}, /* past U+10FFFF */
		{"\xe2\x80", 2, 1, "\\xe2"},         /* cut short */
		{"\xff", 1, 1, "\\xff"},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
		char esc[NV_OUT_ESCAPE_MAX + 1];
		size_t n, len;

		memset(esc, 0, sizeof(esc));
		n = nv_out_term_char(cases[i].in, cases[i].len, esc, &len);
		CHECK(n == cases[i].used);
		CHECK(len == strlen(cases[i].esc));
		esc[len] = '\0';
		CHECK_STR(esc, cases[i].esc);
		if (n != cases[i].used || strcmp(esc, cases[i].esc) != 0)
			fprintf(stderr, "case %zu\n", i);
	}
}

static void test_streams(void)
{
	nv_out_set_sink(capture, NULL);
	CHECK_STR(ERR("error: job '\x1b[31mx\r' \x1b]0;title\a failed\n"),
		  "error: job '\\x1b[31mx\\x0d' \\x1b]0;title\\x07 failed\n");
	CHECK_STR(ERR("a\tb\nc \xc3\xa9t\xc3\xa9\n"),
		  "a\tb\nc \xc3\xa9t\xc3\xa9\n");
	CHECK_STR(ERR("key \xc2\x9b"
		      "2J and \x9b"
		      "2J\n"),
		  "key \\u009b2J and \\x9b2J\n");
	CHECK_STR(ERR(""), "");
	/* navette's own styles go raw; stdout is data, written as it is */
	CHECK_STR(ERR_RAW("\x1b[31merror: \x1b[0m"), "\x1b[31merror: \x1b[0m");
	CHECK_STR(OUT("log \x1b[32mok\x1b[0m\r\n"),
		  "log \x1b[32mok\x1b[0m\r\n");
	nv_out_set_sink(NULL, NULL);
}

/* The redactor masks first; its output is then escaped. */
static void test_with_redactor(void)
{
	nv_err err;

	CHECK(nv_redact_add_secret(nv_redact_global(), "out_test",
				   "s3cr3t-\x1b-value", 14, &err) == 0);
	nv_out_set_filter(nv_redact_out_filter);
	nv_out_set_sink(capture, NULL);
	CHECK_STR(ERR("pw=s3cr3t-\x1b-value \x1b[2J\n"),
		  "pw=<redacted:out_test> \\x1b[2J\n");
	CHECK_STR(ERR_RAW("pw=s3cr3t-\x1b-value\n"),
		  "pw=<redacted:out_test>\n");
	nv_out_set_sink(NULL, NULL);
	nv_out_set_filter(NULL);
}

int main(void)
{
	test_term_char();
	test_streams();
	test_with_redactor();
	for (size_t i = 0; i < 3; i++)
		nv_buf_free(&got[i]);
	return nv_test_done();
}
