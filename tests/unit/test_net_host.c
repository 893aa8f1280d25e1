/* A URL's host in canonical form (net/hostname.h): every way libcurl
 * accepts of writing one address gives one text, IPv4-mapped IPv6 is its
 * IPv4 address, loopback is flagged whatever its form, and names are
 * lowered and decoded. What isolation relies on to compare hosts. */
#include <string.h>

#include "net/hostname.h"
#include "nv_test.h"

struct row {
	const char *in, *canonical;
	int loopback;
	enum nv_host_kind kind;
};

static const struct row rows[] = {
	{"127.0.0.1", "127.0.0.1", 1, NV_HOST_IPV4},
	{"2130706433", "127.0.0.1", 1, NV_HOST_IPV4},
	{"0x7f000001", "127.0.0.1", 1, NV_HOST_IPV4},
	{"0X7F000001", "127.0.0.1", 1, NV_HOST_IPV4},
	{"0177.0.0.1", "127.0.0.1", 1, NV_HOST_IPV4},
	{"0177.0000.0.01", "127.0.0.1", 1, NV_HOST_IPV4},
	{"127.1", "127.0.0.1", 1, NV_HOST_IPV4},
	{"127.0.1", "127.0.0.1", 1, NV_HOST_IPV4},
	{"0x7f.1", "127.0.0.1", 1, NV_HOST_IPV4},
	{"127.0.0.1.", "127.0.0.1", 1, NV_HOST_IPV4},
	{"%31%32%37.0.0.1", "127.0.0.1", 1, NV_HOST_IPV4},
	{"127.0.0.2", "127.0.0.2", 1, NV_HOST_IPV4},
	{"0.0.0.0", "0.0.0.0", 1, NV_HOST_IPV4},
	{"0", "0.0.0.0", 1, NV_HOST_IPV4},
	{"10.1.2.3", "10.1.2.3", 0, NV_HOST_IPV4},
	{"167838211", "10.1.2.3", 0, NV_HOST_IPV4},
	{"[::1]", "[::1]", 1, NV_HOST_IPV6},
	{"[0:0:0:0:0:0:0:1]", "[::1]", 1, NV_HOST_IPV6},
	{"[0000::0001]", "[::1]", 1, NV_HOST_IPV6},
	{"[::]", "[::]", 1, NV_HOST_IPV6},
	{"[::ffff:127.0.0.1]", "127.0.0.1", 1, NV_HOST_IPV4},
	{"[::ffff:7f00:1]", "127.0.0.1", 1, NV_HOST_IPV4},
	{"[::FFFF:7F00:1]", "127.0.0.1", 1, NV_HOST_IPV4},
	{"[::ffff:10.0.0.1]", "10.0.0.1", 0, NV_HOST_IPV4},
	{"[2001:DB8:0:0:0:0:0:1]", "[2001:db8::1]", 0, NV_HOST_IPV6},
	{"[fe80::1%25eth0]", "[fe80::1%eth0]", 0, NV_HOST_IPV6},
	{"::1", "[::1]", 1, NV_HOST_IPV6},
	{"localhost", "localhost", 1, NV_HOST_NAME},
	{"LocalHost.", "localhost", 1, NV_HOST_NAME},
	{"%6Cocalhost", "localhost", 1, NV_HOST_NAME},
	{"api.localhost", "api.localhost", 1, NV_HOST_NAME},
	{"notlocalhost", "notlocalhost", 0, NV_HOST_NAME},
	{"Prod-API.Example.COM.", "prod-api.example.com", 0, NV_HOST_NAME},
	/* not IPv4: names, as libcurl takes them */
	{"256.0.0.1", "256.0.0.1", 0, NV_HOST_NAME},
	{"127.0.0.1.1", "127.0.0.1.1", 0, NV_HOST_NAME},
	{"0x", "0x", 0, NV_HOST_NAME},
	{"09.0.0.1", "09.0.0.1", 0, NV_HOST_NAME},
	{"127..1", "127..1", 0, NV_HOST_NAME},
	{"4294967296", "4294967296", 0, NV_HOST_NAME},
	{"127.16777216", "127.16777216", 0, NV_HOST_NAME},
};

static const char *const bad[] = {
	"",     "[::1",  "[]",   "[::g]",    "[1:2:3]", "a%", "a%4",
	"a%zz", "a%00b", "a\nb", "[::1%25]", "[::1%]",  NULL};

int main(void)
{
	nv_host h, again;
	nv_err err;
	char big[NV_HOST_MAX + 8];

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		const struct row *r = &rows[i];
		int rc = nv_host_canonical(r->in, strlen(r->in), &h, &err);
		CHECK(rc == 0);
		if (rc != 0) {
			fprintf(stderr, "  %s: %s\n", r->in, err.message);
			continue;
		}
		CHECK_STR(h.canonical, r->canonical);
		CHECK(h.loopback == r->loopback);
		CHECK(h.kind == r->kind);
		/* the canonical form reads back as itself */
		CHECK(nv_host_canonical(h.canonical, strlen(h.canonical),
					&again, &err) == 0);
		CHECK_STR(again.canonical, h.canonical);
		CHECK(again.loopback == h.loopback);
	}
	for (size_t i = 0; bad[i]; i++) {
		nv_err_clear(&err);
		CHECK(nv_host_canonical(bad[i], strlen(bad[i]), &h, &err) ==
		      NV_EINVAL);
		CHECK(strstr(err.message, "bad host") != NULL);
	}
	/* a length is a bound, not a NUL: the host is the bytes given */
	CHECK(nv_host_canonical("localhost.evil", 9, &h, &err) == 0);
	CHECK_STR(h.canonical, "localhost");
	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	CHECK(nv_host_canonical(big, strlen(big), &h, &err) == NV_EINVAL);
	return nv_test_done();
}
