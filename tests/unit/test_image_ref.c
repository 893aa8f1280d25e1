/* Table test of image reference parsing (host/image/reference.c): valid
 * forms with their registry, repository, tag and digest after Docker's
 * normalisation; invalid forms with the part the message must name; the
 * full form round-trips; API base URLs and credential hosts. */
#include "image/reference.h"

#include <stdio.h>
#include <string.h>

#include "nv_test.h"

#define D64 "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

struct valid {
	const char *in, *registry, *repository, *tag, *digest;
	int implicit;
};

static const struct valid valid[] = {
	{"busybox", "docker.io", "library/busybox", "latest", "", 1},
	{"busybox:1.36", "docker.io", "library/busybox", "1.36", "", 0},
	{"library/busybox", "docker.io", "library/busybox", "latest", "", 1},
	{"team/app", "docker.io", "team/app", "latest", "", 1},
	{"docker.io/busybox", "docker.io", "library/busybox", "latest", "", 1},
	{"index.docker.io/team/app:v2", "docker.io", "team/app", "v2", "", 0},
	{"localhost/app", "localhost", "app", "latest", "", 1},
	{"localhost:5000/a/b/c:v1", "localhost:5000", "a/b/c", "v1", "", 0},
	{"127.0.0.1:5000/app@sha256:" D64, "127.0.0.1:5000", "app", "",
	 "sha256:" D64, 0},
	{"127.0.0.1:5000/app:v1@sha256:" D64, "127.0.0.1:5000", "app", "v1",
	 "sha256:" D64, 0},
	{"[::1]:5000/app:t", "[::1]:5000", "app", "t", "", 0},
	{"ghcr.io/o-r/re_po.x__y:T_a.g-1", "ghcr.io", "o-r/re_po.x__y",
	 "T_a.g-1", "", 0},
	{"a--b/c", "docker.io", "a--b/c", "latest", "", 1},
	{"Registry/app", "Registry", "app", "latest", "", 1},
	/* Docker reads this as the name "localhost" with the tag "5000" */
	{"localhost:5000", "docker.io", "library/localhost", "5000", "", 0},
	{"my-registry.example.com:443/x/y:_t", "my-registry.example.com:443",
	 "x/y", "_t", "", 0},
};

struct invalid {
	const char *in, *named;
};

static const struct invalid invalid[] = {
	{"", "empty"},
	{"Busybox", "'Busybox' must be lowercase"},
	{"team/App", "'App' must be lowercase"},
	{"app:", "tag ''"},
	{"app:.x", "tag '.x'"},
	{"app:-x", "tag '-x'"},
	{"app:a!", "tag 'a!'"},
	{"app@sha256:abc", "digest 'sha256:abc'"},
	{"app@sha512:" D64 D64, "not sha256"},
	{"app@sha256:"
	 "0123456789ABCDEF0123456789abcdef0123456789abcdef0123456789abcdef",
	 "64 lowercase hex"},
	{"app@", "digest ''"},
	{"a//b", "is empty"},
	{"a/b/", "ends its name with '/'"},
	{"host.com:99999/app", "registry port"},
	{"host.com:/app", "registry port"},
	{"host.com:50a/app", "registry port"},
	{"-host.com/app", "registry host '-host.com'"},
	{"host..com/app", "registry host 'host..com'"},
	{"[zz]:5000/app", "registry host '[zz]:5000'"},
	{"a b", "space"},
	{"/app", "is empty"},
	{"app_", "component 'app_'"},
	{"a.-b", "component 'a.-b'"},
	{"a___b", "component 'a___b'"},
	{"ex.com/", "no repository"},
	{":tag", "no repository name"},
	{"app@sha256:" D64 "@x", "more than one '@'"},
	{"caf\xc3\xa9", "non-ASCII"},
};

static void test_valid(void)
{
	size_t i;

	for (i = 0; i < sizeof(valid) / sizeof(valid[0]); i++) {
		const struct valid *v = &valid[i];
		char full[NV_IMAGE_REF_MAX + 32];
		nv_image_ref ref, again;
		nv_err err;

		nv_err_clear(&err);
		if (nv_image_ref_parse(&ref, v->in, &err) != 0) {
			fprintf(stderr, "'%s' refused: %s\n", v->in,
				err.message);
			CHECK(0);
			continue;
		}
		CHECK_STR(ref.registry, v->registry);
		CHECK_STR(ref.repository, v->repository);
		CHECK_STR(ref.tag, v->tag);
		CHECK_STR(ref.digest, v->digest);
		CHECK(ref.implicit_tag == v->implicit);
		/* the full form parses back to the same reference */
		CHECK(nv_image_ref_format(&ref, 1, full, sizeof(full)) == 0);
		CHECK(nv_image_ref_parse(&again, full, &err) == 0);
		CHECK_STR(again.registry, ref.registry);
		CHECK_STR(again.repository, ref.repository);
		CHECK_STR(again.tag, ref.tag);
		CHECK_STR(again.digest, ref.digest);
	}
}

static void test_invalid(void)
{
	size_t i;

	for (i = 0; i < sizeof(invalid) / sizeof(invalid[0]); i++) {
		nv_image_ref ref;
		nv_err err;
		int rc;

		nv_err_clear(&err);
		rc = nv_image_ref_parse(&ref, invalid[i].in, &err);
		CHECK(rc == NV_EINVAL);
		if (!strstr(err.message, invalid[i].named)) {
			fprintf(stderr, "'%s': message '%s' lacks '%s'\n",
				invalid[i].in, err.message, invalid[i].named);
			CHECK(0);
		}
		CHECK(err.hint[0] != '\0');
	}
}

static void test_bounds_and_urls(void)
{
	char name[400], buf[600], tag[200];
	nv_image_ref ref;
	nv_err err;

	/* a 128-character tag is fine, 129 is not */
	memset(tag, 'a', 128);
	tag[128] = '\0';
	snprintf(buf, sizeof(buf), "app:%s", tag);
	CHECK(nv_image_ref_parse(&ref, buf, &err) == 0);
	snprintf(buf, sizeof(buf), "app:%sa", tag);
	CHECK(nv_image_ref_parse(&ref, buf, &err) == NV_EINVAL);

	/* names are at most 255 characters, registry included */
	memset(name, 'a', 240);
	name[240] = '\0';
	snprintf(buf, sizeof(buf), "reg.io/%s", name);
	CHECK(nv_image_ref_parse(&ref, buf, &err) == 0);
	snprintf(buf, sizeof(buf), "registry.example.com/%s", name);
	CHECK(nv_image_ref_parse(&ref, buf, &err) == NV_EINVAL);
	CHECK(strstr(err.message, "longer than 255") != NULL);
	/* a repository path alone longer than the name limit */
	{
		char big[400];

		memset(big, 'a', 300);
		big[300] = '\0';
		snprintf(buf, sizeof(buf), "r.io/%s", big);
		CHECK(nv_image_ref_parse(&ref, buf, &err) == NV_EINVAL);
		CHECK(strstr(err.message, "longer than 255") != NULL);
		big[256] = '\0';
		snprintf(buf, sizeof(buf), "r.io/%s", big);
		CHECK(nv_image_ref_parse(&ref, buf, &err) == NV_EINVAL);
		/* a registry name alone longer than the limit */
		big[300] = 'a';
		big[299] = '\0';
		memcpy(big, "r.", 2);
		snprintf(buf, sizeof(buf), "%s/app", big);
		CHECK(nv_image_ref_parse(&ref, buf, &err) == NV_EINVAL);
		CHECK(strstr(err.message, "longer than 255") != NULL);
	}

	CHECK(nv_image_ref_parse(&ref, "busybox", &err) == 0);
	CHECK(nv_image_ref_api_base(&ref, buf, sizeof(buf)) == 0);
	CHECK_STR(buf, "https://registry-1.docker.io");
	CHECK(nv_image_ref_api_host(&ref, buf, sizeof(buf)) == 0);
	CHECK_STR(buf, "registry-1.docker.io");
	CHECK(nv_image_ref_format(&ref, 1, buf, sizeof(buf)) == 0);
	CHECK_STR(buf, "docker.io/library/busybox:latest");
	CHECK(nv_image_ref_parse(&ref, "127.0.0.1:5000/a:t@sha256:" D64,
				 &err) == 0);
	CHECK(nv_image_ref_api_base(&ref, buf, sizeof(buf)) == 0);
	CHECK_STR(buf, "http://127.0.0.1:5000");
	CHECK(nv_image_ref_format(&ref, 0, buf, sizeof(buf)) == 0);
	CHECK_STR(buf, "127.0.0.1:5000/a@sha256:" D64);
	CHECK(nv_image_ref_name(&ref, buf, sizeof(buf)) == 0);
	CHECK_STR(buf, "127.0.0.1:5000/a");
	CHECK(nv_image_ref_format(&ref, 1, buf, 10) == NV_ENOMEM);
	CHECK_STR(buf, "");
	CHECK(nv_image_ref_parse(&ref, "[::1]:5001/a", &err) == 0);
	CHECK(nv_image_ref_api_base(&ref, buf, sizeof(buf)) == 0);
	CHECK_STR(buf, "http://[::1]:5001");
	CHECK(nv_image_ref_parse(&ref, "localhost:5002/a", &err) == 0);
	CHECK(nv_image_ref_api_base(&ref, buf, sizeof(buf)) == 0);
	CHECK_STR(buf, "http://localhost:5002");
	CHECK(nv_image_ref_parse(&ref, "ghcr.io/o/r", &err) == 0);
	CHECK(nv_image_ref_api_base(&ref, buf, sizeof(buf)) == 0);
	CHECK_STR(buf, "https://ghcr.io");

	CHECK(nv_image_digest_valid("sha256:" D64));
	CHECK(!nv_image_digest_valid("sha256:" D64 "0"));
	CHECK(!nv_image_digest_valid("sha256:"));
	CHECK(!nv_image_digest_valid(NULL));
}

int main(void)
{
	test_valid();
	test_invalid();
	test_bounds_and_urls();
	return nv_test_done();
}
