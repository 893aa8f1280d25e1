/* Strict UTF-8 (core/utf8.h), as Lua 5.4's utf8.len: the offset of the
 * first byte that does not start a valid sequence. */
#include <string.h>

#include "core/utf8.h"
#include "nv_test.h"

static size_t at(const char *s)
{
	return nv_utf8_invalid_at(s, strlen(s));
}

int main(void)
{
	CHECK(at("") == NV_UTF8_VALID);
	CHECK(at("plain ascii") == NV_UTF8_VALID);
	CHECK(at("h\xc3\xa9llo \xe2\x9c\x93 \xe6\x97\xa5") == NV_UTF8_VALID);
	CHECK(at("\xf4\x8f\xbf\xbf") == NV_UTF8_VALID);        /* U+10FFFF */
	CHECK(at("\xed\x9f\xbf") == NV_UTF8_VALID);            /* U+D7FF */
	CHECK(nv_utf8_invalid_at("a\0b", 3) == NV_UTF8_VALID); /* NUL: valid */

	CHECK(at("abc\xff") == 3);
	CHECK(at("\x80") == 0);             /* a lone continuation */
	CHECK(at("a\xc3") == 1);            /* cut short */
	CHECK(at("a\xe2\x82") == 1);        /* cut short */
	CHECK(at("\xc3\x28") == 0);         /* not a continuation */
	CHECK(at("\xc0\xaf") == 0);         /* overlong '/' */
	CHECK(at("\xc1\xbf") == 0);         /* overlong */
	CHECK(at("\xe0\x80\xaf") == 0);     /* overlong */
	CHECK(at("\xf0\x80\x80\xaf") == 0); /* overlong */
	CHECK(at("ok\xed\xa0\x80") == 2);   /* surrogate U+D800 */
	CHECK(at("\xed\xbf\xbf") == 0);     /* surrogate U+DFFF */
	CHECK(at("\xf4\x90\x80\x80") == 0); /* above U+10FFFF */
	CHECK(at("\xf5\x80\x80\x80") == 0);
	CHECK(at("\xfe\xff") == 0);
	/* a length that ends inside a sequence */
	CHECK(nv_utf8_invalid_at("\xc3\xa9", 1) == 0);

	/* shown for a message or a record: ASCII text as it is */
	char out[16];
	nv_utf8_show(out, sizeof(out), "r\xe9s\\u", 5);
	CHECK_STR(out, "r\\xe9s\\x5cu");
	nv_utf8_show(out, sizeof(out), "abcdefghijklmnopqrstuvwxyz", 26);
	CHECK_STR(out, "abcdefghijkl...");
	nv_utf8_show(out, sizeof(out), "\xff\xff\xff\xff\xff", 5);
	CHECK_STR(out, "\\xff\\xff\\xff...");
	nv_utf8_show(out, 1, "abc", 3);
	CHECK_STR(out, "");
	return nv_test_done();
}
