/* Unit tests of the pure-C parts of host/image/debootstrap.c (the build
 * itself runs programs as root and is left to the integration tests):
 * package names by Debian policy, OCI platform to Debian architecture, the
 * image's identity (one hash for one package set, whatever its order or
 * repeats; another for any change; the tag derived from it, pinned so that
 * a change of the canonical text, which rebuilds every user's image, is
 * seen), mirror URLs, and the mirror found in apt's sources in both formats
 * with the texts real machines have; and, as root, the exact arguments
 * debootstrap gets (a stand-in first on PATH records them): the keyring,
 * --force-check-gpg, the suite, the root folder and the mirror. */
#include "image/debootstrap.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "core/fsutil.h"
#include "nv_test.h"

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

static void test_package_names(void)
{
	static const char *const valid[] = {
		"python3-torch", "g++",      "libc6.1",    "ca-certificates",
		"0ad",           "xz-utils", "libstdc++6", "aa",
	};
	static const char *const invalid[] = {
		"A",   "-x",      "x",       "py thon", "--include=x",
		"a/b", "",        "Python3", "+x",      ".x",
		"a_b", "a:amd64", "a\nb",    "../x",    "caf\xc3\xa9",
	};
	char name[80];
	size_t i;

	for (i = 0; i < NELEM(valid); i++)
		if (!nv_deb_package_valid(valid[i])) {
			fprintf(stderr, "'%s' refused\n", valid[i]);
			CHECK(0);
		}
	for (i = 0; i < NELEM(invalid); i++)
		if (nv_deb_package_valid(invalid[i])) {
			fprintf(stderr, "'%s' accepted\n", invalid[i]);
			CHECK(0);
		}
	CHECK(!nv_deb_package_valid(NULL));
	/* 64 characters are a name; 65 are not */
	memset(name, 'a', 64);
	name[64] = '\0';
	CHECK(nv_deb_package_valid(name));
	memset(name, 'a', 65);
	name[65] = '\0';
	CHECK(!nv_deb_package_valid(name));
}

static void test_arch(void)
{
	static const struct {
		const char *platform, *arch;
	} known[] = {
		{"linux/amd64", "amd64"},    {"linux/arm64", "arm64"},
		{"linux/arm64/v8", "arm64"}, {"linux/arm/v7", "armhf"},
		{"linux/386", "i386"},       {"linux/ppc64le", "ppc64el"},
		{"linux/s390x", "s390x"},    {NULL, "amd64"},
	};
	static const char *const unknown[] = {
		"windows/amd64", "darwin/arm64", "linux/amd64 ", "linux", "",
		"amd64",         "linux/mips",
	};
	char arch[16];
	nv_err err;
	size_t i;

	for (i = 0; i < NELEM(known); i++) {
		memset(arch, 0, sizeof(arch));
		CHECK(nv_deb_arch(known[i].platform, arch, &err) == 0);
		CHECK_STR(arch, known[i].arch);
	}
	for (i = 0; i < NELEM(unknown); i++) {
		nv_err_clear(&err);
		CHECK(nv_deb_arch(unknown[i], arch, &err) == NV_EINVAL);
		CHECK(err.code == NV_EINVAL && err.hint[0] != '\0');
	}
	nv_err_clear(&err);
	CHECK(nv_deb_arch("windows/amd64", arch, &err) == NV_EINVAL);
	CHECK(strstr(err.message, "windows/amd64") != NULL);
}

/* The identity of s, or -1 with the error in err. */
static int identity(const char *suite, const char *variant,
		    const char *platform, const char *const *packages, size_t n,
		    char hash[65], char tag[NV_IMAGE_TAG_MAX + 1], nv_err *err)
{
	nv_debootstrap_spec s;

	memset(&s, 0, sizeof(s));
	s.suite = suite;
	s.variant = variant;
	s.platform = platform;
	s.packages = packages;
	s.npackages = n;
	nv_err_clear(err);
	memset(hash, 0, 65);
	memset(tag, 0, NV_IMAGE_TAG_MAX + 1);
	return nv_debootstrap_identity(&s, hash, tag, err);
}

static int lower_hex(const char *s, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') ||
		      (s[i] >= 'a' && s[i] <= 'f')))
			return 0;
	return s[n] == '\0';
}

static void test_identity(void)
{
	static const char *const base[] = {"python3-torch", "ca-certificates"};
	static const char *const reordered[] = {"ca-certificates",
						"python3-torch"};
	static const char *const repeated[] = {
		"python3-torch", "ca-certificates", "python3-torch",
		"ca-certificates"};
	static const char *const more[] = {"python3-torch", "ca-certificates",
					   "git"};
	static const char *const other[] = {"python3-numpy", "ca-certificates"};
	static const char *const fewer[] = {"python3-torch"};
	static const char *const bad_name[] = {"python3-torch", "--include=x"};
	static const char *const upper[] = {"Python3"};
	static const char *const many[NV_DEB_PACKAGES_MAX + 1] = {"aa"};
	char h0[65], t0[NV_IMAGE_TAG_MAX + 1], h[65], t[NV_IMAGE_TAG_MAX + 1];
	char want[32], suite[80];
	nv_err err;

	CHECK(identity("bookworm", NULL, NULL, base, 2, h0, t0, &err) == 0);
	CHECK(strlen(h0) == 64 && lower_hex(h0, 64));
	/* "<suite>-<first 12 hex of the hash>" */
	snprintf(want, sizeof(want), "bookworm-%.12s", h0);
	CHECK_STR(t0, want);
	CHECK(strlen(t0) == strlen("bookworm-") + 12);
	/* pinned: sha256 of the canonical text, by shasum -a 256 */
	CHECK_STR(h0, "510abc55d6e042a4dae8626bb51958a6"
		      "bf9359181f73ba61fe1760908e42f6e1");
	CHECK_STR(t0, "bookworm-510abc55d6e0");

	/* the same set: order, repeats, defaults spelled out */
	CHECK(identity("bookworm", NULL, NULL, reordered, 2, h, t, &err) == 0);
	CHECK_STR(h, h0);
	CHECK_STR(t, t0);
	CHECK(identity("bookworm", NULL, NULL, repeated, 4, h, t, &err) == 0);
	CHECK_STR(h, h0);
	CHECK(identity("bookworm", "minbase", "linux/amd64", base, 2, h, t,
		       &err) == 0);
	CHECK_STR(h, h0);
	CHECK_STR(t, t0);

	/* any change is another image */
	CHECK(identity("bookworm", NULL, NULL, more, 3, h, t, &err) == 0);
	CHECK(strcmp(h, h0) != 0 && strcmp(t, t0) != 0);
	CHECK(identity("bookworm", NULL, NULL, other, 2, h, t, &err) == 0);
	CHECK(strcmp(h, h0) != 0);
	CHECK(identity("bookworm", NULL, NULL, fewer, 1, h, t, &err) == 0);
	CHECK(strcmp(h, h0) != 0);
	CHECK(identity("bookworm", NULL, NULL, base, 0, h, t, &err) == 0);
	CHECK(strcmp(h, h0) != 0);
	CHECK(identity("trixie", NULL, NULL, base, 2, h, t, &err) == 0);
	CHECK(strcmp(h, h0) != 0);
	CHECK(strncmp(t, "trixie-", 7) == 0 && strlen(t) == 7 + 12);
	CHECK(identity("bookworm", "buildd", NULL, base, 2, h, t, &err) == 0);
	CHECK(strcmp(h, h0) != 0);
	CHECK(identity("bookworm", NULL, "linux/arm64", base, 2, h, t, &err) ==
	      0);
	CHECK(strcmp(h, h0) != 0);
	/* two names of one Debian architecture are still two platforms */
	{
		char h1[65], h2[65];

		CHECK(identity("bookworm", NULL, "linux/arm64", base, 2, h1, t,
			       &err) == 0);
		CHECK(identity("bookworm", NULL, "linux/arm64/v8", base, 2, h2,
			       t, &err) == 0);
		CHECK(strcmp(h1, h2) != 0);
	}

	/* refusals, each with a message */
	CHECK(identity("Bookworm", NULL, NULL, base, 2, h, t, &err) ==
	      NV_EINVAL);
	CHECK(strstr(err.message, "Bookworm") != NULL);
	CHECK(identity("../x", NULL, NULL, base, 2, h, t, &err) == NV_EINVAL);
	CHECK(identity("", NULL, NULL, base, 2, h, t, &err) == NV_EINVAL);
	CHECK(identity(NULL, NULL, NULL, base, 2, h, t, &err) == NV_EINVAL);
	CHECK(identity("-bookworm", NULL, NULL, base, 2, h, t, &err) ==
	      NV_EINVAL);
	CHECK(identity("book worm", NULL, NULL, base, 2, h, t, &err) ==
	      NV_EINVAL);
	CHECK(identity("bookworm/updates", NULL, NULL, base, 2, h, t, &err) ==
	      NV_EINVAL);
	CHECK(identity("bookworm", "fakechroot", NULL, base, 2, h, t, &err) ==
	      NV_EINVAL);
	CHECK(strstr(err.message, "fakechroot") != NULL);
	CHECK(identity("bookworm", "", NULL, base, 2, h, t, &err) == NV_EINVAL);
	CHECK(identity("bookworm", NULL, "windows/amd64", base, 2, h, t,
		       &err) == NV_EINVAL);
	CHECK(identity("bookworm", NULL, NULL, bad_name, 2, h, t, &err) ==
	      NV_EINVAL);
	CHECK(strstr(err.message, "--include=x") != NULL);
	CHECK(err.hint[0] != '\0');
	CHECK(identity("bookworm", NULL, NULL, upper, 1, h, t, &err) ==
	      NV_EINVAL);
	/* the list is bounded: a null name past the bound is never read */
	CHECK(identity("bookworm", NULL, NULL, many, NV_DEB_PACKAGES_MAX + 1, h,
		       t, &err) == NV_EINVAL);
	/* a refusal leaves no tag to push under */
	CHECK(t[0] == '\0');

	/* the longest suite still makes a tag a registry takes */
	memset(suite, 'a', NV_DEB_NAME_MAX);
	suite[NV_DEB_NAME_MAX] = '\0';
	CHECK(identity(suite, NULL, NULL, base, 2, h, t, &err) == 0);
	CHECK(strlen(t) == NV_DEB_NAME_MAX + 1 + 12);
	CHECK(strlen(t) <= NV_IMAGE_TAG_MAX);
	suite[NV_DEB_NAME_MAX] = 'a';
	suite[NV_DEB_NAME_MAX + 1] = '\0';
	CHECK(identity(suite, NULL, NULL, base, 2, h, t, &err) == NV_EINVAL);
}

static void test_mirror_check(void)
{
	static const char *const good[] = {
		"http://deb.example/debian",
		"https://mirror.example:8443/debian/",
		"http://deb.example",
		"https://mirror.example/debian?x=1",
		"http://[::1]:3142/debian",
	};
	static const char *const bad[] = {
		"ftp://deb.example/debian",
		"file:///srv/debian",
		"http://user:pw@deb.example/debian",
		"https://user@mirror.example/debian",
		"http://@deb.example/debian",
		"http:///debian",
		"http://",
		"https://?x",
		"http://deb.example/deb ian",
		"http://deb.example/debian\n",
		"http://deb.example/debian\nX-Header: 1",
		"http://deb.example/\tdebian",
		"http://deb.example/\x7f",
		"deb.example/debian",
		"mirror+file:///etc/apt/mirrors/debian.list",
		"",
	};
	char url[NV_DEB_MIRROR_MAX + 8];
	nv_err err;
	size_t i;

	for (i = 0; i < NELEM(good); i++) {
		nv_err_clear(&err);
		if (nv_deb_mirror_check(good[i], &err) != 0) {
			fprintf(stderr, "'%s' refused: %s\n", good[i],
				err.message);
			CHECK(0);
		}
	}
	for (i = 0; i < NELEM(bad); i++) {
		nv_err_clear(&err);
		if (nv_deb_mirror_check(bad[i], &err) != NV_EINVAL) {
			fprintf(stderr, "'%s' accepted\n", bad[i]);
			CHECK(0);
		}
		CHECK(err.message[0] != '\0');
	}
	CHECK(nv_deb_mirror_check(NULL, &err) == NV_EINVAL);
	/* credentials are refused, and never echoed in the message */
	nv_err_clear(&err);
	CHECK(nv_deb_mirror_check("http://user:s3cret@deb.example/debian",
				  &err) == NV_EINVAL);
	CHECK(strstr(err.message, "s3cret") == NULL);
	CHECK(strstr(err.hint, "s3cret") == NULL);

	/* NV_DEB_MIRROR_MAX characters are fine, one more is not */
	memset(url, 'a', sizeof(url));
	memcpy(url, "http://deb.example/", 19);
	url[NV_DEB_MIRROR_MAX] = '\0';
	CHECK(nv_deb_mirror_check(url, &err) == 0);
	url[NV_DEB_MIRROR_MAX] = 'a';
	url[NV_DEB_MIRROR_MAX + 1] = '\0';
	CHECK(nv_deb_mirror_check(url, &err) == NV_EINVAL);
}

/* The mirror for suite in text (whole length), "" when none (-1). */
static const char *find(const char *text, int deb822, const char *suite)
{
	static char out[NV_DEB_MIRROR_MAX + 1];

	memset(out, 'x', sizeof(out) - 1);
	out[sizeof(out) - 1] = '\0';
	if (nv_apt_mirror_find(text, strlen(text), deb822, suite, out,
			       sizeof(out)) != 0)
		return "";
	return out;
}

/* debian:bookworm's /etc/apt/sources.list.d/debian.sources: a comment
 * between Types and URIs, and the security suite in its own paragraph. */
static const char DEBIAN_SOURCES[] =
	"Types: deb\n"
	"# http://snapshot.example/archive/debian/20240110T000000Z\n"
	"URIs: http://deb.example/debian\n"
	"Suites: bookworm bookworm-updates\n"
	"Components: main\n"
	"Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg\n"
	"\n"
	"Types: deb\n"
	"# http://snapshot.example/archive/debian-security/"
	"20240110T000000Z\n"
	"URIs: http://deb.example/debian-security\n"
	"Suites: bookworm-security\n"
	"Components: main\n"
	"Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg\n";

static void test_deb822(void)
{
	char out[64];
	size_t n;

	CHECK_STR(find(DEBIAN_SOURCES, 1, "bookworm"),
		  "http://deb.example/debian");
	CHECK_STR(find(DEBIAN_SOURCES, 1, "bookworm-updates"),
		  "http://deb.example/debian");
	CHECK_STR(find(DEBIAN_SOURCES, 1, "bookworm-security"),
		  "http://deb.example/debian-security");
	CHECK_STR(find(DEBIAN_SOURCES, 1, "bookworm-backports"), "");
	CHECK_STR(find(DEBIAN_SOURCES, 1, "trixie"), "");
	CHECK_STR(find(DEBIAN_SOURCES, 1, "book"), "");
	/* the same file read as one-line style names nothing */
	CHECK_STR(find(DEBIAN_SOURCES, 0, "bookworm"), "");

	/* security first: "bookworm-security" is not "bookworm" */
	CHECK_STR(find("Types: deb\n"
		       "URIs: http://security.example/debian-security\n"
		       "Suites: bookworm-security\n"
		       "Components: main\n"
		       "\n"
		       "Types: deb\n"
		       "URIs: https://mirror.example/debian\n"
		       "Suites: bookworm\n"
		       "Components: main contrib\n",
		       1, "bookworm"),
		  "https://mirror.example/debian");

	/* comments anywhere, several in a row, one before the first field */
	CHECK_STR(find("# Debian sources\n"
		       "# (managed by the image)\n"
		       "Types: deb\n"
		       "#URIs: http://old.example/debian\n"
		       "# another comment\n"
		       "URIs: http://deb.example/debian\n"
		       "# Suites: trixie\n"
		       "Suites: bookworm\n",
		       1, "bookworm"),
		  "http://deb.example/debian");
	/* a blank line still ends a paragraph */
	CHECK_STR(find("Types: deb\n"
		       "URIs: http://deb.example/debian\n"
		       "\n"
		       "Suites: bookworm\n",
		       1, "bookworm"),
		  "");

	/* Enabled: no skips the paragraph; yes does not */
	CHECK_STR(find("Types: deb\n"
		       "URIs: http://off.example/debian\n"
		       "Suites: bookworm\n"
		       "Enabled: no\n"
		       "\n"
		       "Types: deb\n"
		       "URIs: http://deb.example/debian\n"
		       "Suites: bookworm\n"
		       "Enabled: yes\n",
		       1, "bookworm"),
		  "http://deb.example/debian");
	CHECK_STR(find("Enabled: no\n"
		       "Types: deb\n"
		       "URIs: http://off.example/debian\n"
		       "Suites: bookworm\n",
		       1, "bookworm"),
		  "");
	/* apt's other false words, in any case */
	CHECK_STR(find("Types: deb\n"
		       "URIs: http://off.example/debian\n"
		       "Suites: bookworm\n"
		       "Enabled: False\n",
		       1, "bookworm"),
		  "");
	CHECK_STR(find("Types: deb\n"
		       "URIs: http://off.example/debian\n"
		       "Suites: bookworm\n"
		       "Enabled: OFF\n",
		       1, "bookworm"),
		  "");
	/* a field continued on the next line */
	CHECK_STR(find("Types: deb\n"
		       "URIs: http://deb.example/debian\n"
		       "Suites: trixie\n"
		       " bookworm\n",
		       1, "bookworm"),
		  "http://deb.example/debian");
	CHECK_STR(find("Types: deb\n"
		       "URIs:\n"
		       " http://deb.example/debian\n"
		       "Suites: bookworm\n",
		       1, "bookworm"),
		  "http://deb.example/debian");
	/* a disabled paragraph does not disable the next one */
	CHECK_STR(find("Types: deb\n"
		       "URIs: http://off.example/debian\n"
		       "Suites: trixie\n"
		       "Enabled: no\n"
		       "\n"
		       "Types: deb\n"
		       "URIs: http://deb.example/debian\n"
		       "Suites: bookworm\n",
		       1, "bookworm"),
		  "http://deb.example/debian");

	/* deb-src only: nothing; deb among the types: found */
	CHECK_STR(find("Types: deb-src\n"
		       "URIs: http://deb.example/debian\n"
		       "Suites: bookworm\n",
		       1, "bookworm"),
		  "");
	CHECK_STR(find("Types: deb-src deb\n"
		       "URIs: http://deb.example/debian\n"
		       "Suites: bookworm\n",
		       1, "bookworm"),
		  "http://deb.example/debian");
	CHECK_STR(find("URIs: http://deb.example/debian\n"
		       "Suites: bookworm\n",
		       1, "bookworm"),
		  "");

	/* field names in any case, values separated by tabs */
	CHECK_STR(find("types: deb\n"
		       "uris: http://deb.example/debian\n"
		       "suites: bookworm\n",
		       1, "bookworm"),
		  "http://deb.example/debian");
	CHECK_STR(find("TYPES:\tdeb\n"
		       "URIS:\thttps://mirror.example/debian\n"
		       "SUITES:\tbookworm-updates\tbookworm\n",
		       1, "bookworm"),
		  "https://mirror.example/debian");

	/* the first http(s) URI: cdrom and mirror+file are skipped */
	CHECK_STR(find("Types: deb\n"
		       "URIs: cdrom:[Debian]/ mirror+file:///etc/apt/m.list "
		       "https://mirror.example/debian "
		       "http://deb.example/debian\n"
		       "Suites: bookworm\n",
		       1, "bookworm"),
		  "https://mirror.example/debian");
	CHECK_STR(find("Types: deb\n"
		       "URIs: mirror+file:///etc/apt/mirrors/debian.list\n"
		       "Suites: bookworm\n",
		       1, "bookworm"),
		  "");

	/* CRLF line ends, no newline at the end */
	CHECK_STR(find("Types: deb\r\n"
		       "URIs: http://deb.example/debian\r\n"
		       "Suites: bookworm\r\n"
		       "\r\n"
		       "Types: deb\r\n"
		       "URIs: http://other.example/debian\r\n"
		       "Suites: trixie",
		       1, "trixie"),
		  "http://other.example/debian");

	/* only len bytes are read */
	n = strlen(DEBIAN_SOURCES);
	CHECK(nv_apt_mirror_find(DEBIAN_SOURCES,
				 strstr(DEBIAN_SOURCES, "Suites:") -
					 DEBIAN_SOURCES,
				 1, "bookworm", out, sizeof(out)) == -1);
	CHECK(nv_apt_mirror_find(DEBIAN_SOURCES, n, 1, "bookworm", out,
				 sizeof(out)) == 0);
	CHECK_STR(out, "http://deb.example/debian");
	/* an output too small is -1, never a cut URL */
	CHECK(nv_apt_mirror_find(DEBIAN_SOURCES, n, 1, "bookworm", out,
				 strlen("http://deb.example/debian")) == -1);
	CHECK(nv_apt_mirror_find(DEBIAN_SOURCES, n, 1, "bookworm", out,
				 strlen("http://deb.example/debian") + 1) == 0);
	CHECK_STR(out, "http://deb.example/debian");
	/* misuse */
	CHECK(nv_apt_mirror_find(NULL, 0, 1, "bookworm", out, sizeof(out)) ==
	      -1);
	CHECK(nv_apt_mirror_find(DEBIAN_SOURCES, n, 1, "", out, sizeof(out)) ==
	      -1);
	CHECK(nv_apt_mirror_find(DEBIAN_SOURCES, n, 1, NULL, out,
				 sizeof(out)) == -1);
	CHECK(nv_apt_mirror_find(DEBIAN_SOURCES, n, 1, "bookworm", out, 0) ==
	      -1);
	CHECK(nv_apt_mirror_find("", 0, 1, "bookworm", out, sizeof(out)) == -1);
}

/* An Ubuntu-or-Debian style sources.list of a machine set up by hand. */
static const char SOURCES_LIST[] =
	"# See sources.list(5) for the format\n"
	"#deb http://old.example/debian bookworm main\n"
	"# deb http://old.example/debian bookworm main\n"
	"\n"
	"deb-src http://src.example/debian bookworm main\n"
	"deb http://deb.example/debian-security bookworm-security main\n"
	"deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] "
	"http://deb.example/debian bookworm main contrib # the main one\n"
	"deb http://deb.example/debian bookworm-updates main\n"
	"deb http://deb.example/debian trixie main\n";

static void test_one_line(void)
{
	char out[64];
	size_t n = strlen(SOURCES_LIST);

	CHECK_STR(find(SOURCES_LIST, 0, "bookworm"),
		  "http://deb.example/debian");
	CHECK_STR(find(SOURCES_LIST, 0, "bookworm-security"),
		  "http://deb.example/debian-security");
	CHECK_STR(find(SOURCES_LIST, 0, "bookworm-updates"),
		  "http://deb.example/debian");
	CHECK_STR(find(SOURCES_LIST, 0, "trixie"), "http://deb.example/debian");
	CHECK_STR(find(SOURCES_LIST, 0, "bookworm-backports"), "");
	CHECK_STR(find(SOURCES_LIST, 0, "sid"), "");
	CHECK_STR(find(SOURCES_LIST, 0, "book"), "");
	/* the same file read as deb822 names nothing */
	CHECK_STR(find(SOURCES_LIST, 1, "bookworm"), "");

	/* options with spaces, tabs, leading blanks */
	CHECK_STR(find("deb [ arch=amd64 signed-by=/etc/apt/k.gpg ] "
		       "https://mirror.example/debian bookworm main\n",
		       0, "bookworm"),
		  "https://mirror.example/debian");
	CHECK_STR(find("  \tdeb\thttp://deb.example/debian\tbookworm\tmain\n",
		       0, "bookworm"),
		  "http://deb.example/debian");
	/* a suite at the end of the line, without components */
	CHECK_STR(find("deb http://deb.example/debian bookworm", 0, "bookworm"),
		  "http://deb.example/debian");
	/* not http(s): skipped, the next line is taken */
	CHECK_STR(find("deb file:///srv/debian bookworm main\n"
		       "deb cdrom:[Debian]/ bookworm main\n"
		       "deb https://mirror.example/debian bookworm main\n",
		       0, "bookworm"),
		  "https://mirror.example/debian");
	/* CRLF */
	CHECK_STR(find("deb http://deb.example/debian bookworm main\r\n", 0,
		       "bookworm"),
		  "http://deb.example/debian");

	/* nothing: deb-src only, commented, other types, a suite's prefix */
	CHECK_STR(find("deb-src http://deb.example/debian bookworm main\n", 0,
		       "bookworm"),
		  "");
	CHECK_STR(find("# deb http://deb.example/debian bookworm main\n", 0,
		       "bookworm"),
		  "");
	CHECK_STR(find("debx http://deb.example/debian bookworm main\n"
		       "rpm http://deb.example/debian bookworm main\n",
		       0, "bookworm"),
		  "");
	CHECK_STR(find("deb http://deb.example/debian-security "
		       "bookworm-security main\n",
		       0, "bookworm"),
		  "");
	CHECK_STR(find("deb http://deb.example/debian bookworm/updates main\n",
		       0, "bookworm"),
		  "");
	CHECK_STR(find("deb http://deb.example/debian\n", 0, "bookworm"), "");
	CHECK_STR(find("deb [signed-by=/x.gpg http://deb.example/debian "
		       "bookworm main\n",
		       0, "bookworm"),
		  "");
	/* a comment that hides the suite */
	CHECK_STR(find("deb http://deb.example/debian #bookworm main\n", 0,
		       "bookworm"),
		  "");
	CHECK_STR(find("", 0, "bookworm"), "");

	/* only len bytes are read; a small output is -1 */
	CHECK(nv_apt_mirror_find(SOURCES_LIST,
				 strstr(SOURCES_LIST, "deb [signed") -
					 SOURCES_LIST,
				 0, "bookworm", out, sizeof(out)) == -1);
	CHECK(nv_apt_mirror_find(SOURCES_LIST, n, 0, "bookworm", out, 10) ==
	      -1);
	CHECK(nv_apt_mirror_find(SOURCES_LIST, n, 0, "bookworm", out,
				 sizeof(out)) == 0);
	CHECK_STR(out, "http://deb.example/debian");
}

/* The arguments debootstrap gets, through a stand-in first on PATH that
 * writes them (after its name) one a line and fails (so nothing else runs);
 * buildah's stand-in fails too. Root and an amd64 or arm64 machine only (the
 * build refuses anything else before debootstrap): said on stderr, not passed
 * silently. */
static void test_debootstrap_argv(void)
{
	char dir[] = "/tmp/navette-deb-argv.XXXXXX", path[600], bin[600];
	char keyring[600], work[600], expect[2048], *got = NULL;
	const char *old_path = getenv("PATH");
	char *saved = old_path ? strdup(old_path) : NULL;
	const char *const packages[] = {"python3", "ca-certificates"};
	struct utsname u;
	nv_debootstrap_opts o;
	size_t len = 0;
	nv_err err;

	if (geteuid() != 0 || uname(&u) != 0 ||
	    (strcmp(u.machine, "x86_64") != 0 &&
	     strcmp(u.machine, "aarch64") != 0)) {
		fprintf(stderr, "SKIPPED: debootstrap's arguments (needs root "
				"on amd64 or arm64)\n");
		free(saved);
		return;
	}
	CHECK(mkdtemp(dir) != NULL);
	snprintf(bin, sizeof(bin), "%s/bin", dir);
	CHECK(nv_mkdir_p(bin, 0755, &err) == 0);
	snprintf(path, sizeof(path), "%s/bin/debootstrap", dir);
	{
		char text[1024];

		snprintf(text, sizeof(text),
			 "#!/bin/sh\nfor a; do printf '%%s\\n' \"$a\"; done "
			 ">'%s/argv'\nexit 1\n",
			 dir);
		CHECK(nv_write_file_atomic(path, text, strlen(text), 0755,
					   &err) == 0);
	}
	snprintf(path, sizeof(path), "%s/bin/buildah", dir);
	CHECK(nv_write_file_atomic(path, "#!/bin/sh\nexit 1\n", 17, 0755,
				   &err) == 0);
	snprintf(keyring, sizeof(keyring), "%s/archive keyring.gpg", dir);
	CHECK(nv_write_file_atomic(keyring, "k", 1, 0644, &err) == 0);
	snprintf(work, sizeof(work), "%s/work", dir);
	CHECK(nv_mkdir_p(work, 0700, &err) == 0);
	snprintf(path, sizeof(path), "%s/bin:/usr/bin:/bin", dir);
	setenv("PATH", path, 1);

	memset(&o, 0, sizeof(o));
	o.spec.suite = "bookworm";
	o.spec.packages = packages;
	o.spec.npackages = 2;
	o.spec.platform = strcmp(u.machine, "x86_64") == 0 ? "linux/amd64"
							   : "linux/arm64";
	o.mirror = "http://deb.example/debian";
	o.keyring = keyring;
	o.work_dir = work;
	CHECK(nv_image_debootstrap(&o, &err) == NV_EFAILED);
	CHECK(strstr(err.message, "debootstrap failed") != NULL);
	snprintf(path, sizeof(path), "%s/argv", dir);
	CHECK(nv_read_file(&got, &len, path, 65536, &err) == 0);
	snprintf(expect, sizeof(expect),
		 "--variant=minbase\n--arch=%s\n"
		 "--keyring=%s\n--force-check-gpg\n--components=main\n"
		 "--include=python3,ca-certificates\nbookworm\n%s/rootfs\n"
		 "http://deb.example/debian\n",
		 strcmp(u.machine, "x86_64") == 0 ? "amd64" : "arm64", keyring,
		 work);
	CHECK_STR(got ? got : "", expect);
	free(got);

	if (saved)
		setenv("PATH", saved, 1);
	else
		unsetenv("PATH");
	free(saved);
	nv_remove_tree(dir, &err);
}

int main(void)
{
	test_package_names();
	test_arch();
	test_identity();
	test_mirror_check();
	test_deb822();
	test_one_line();
	test_debootstrap_argv();
	return nv_test_done();
}
