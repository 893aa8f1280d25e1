/* Unit tests of the platform an image is made and checked for: a base
 * given as an index is resolved to the nodes' platform whatever the order
 * of its entries (an Apple Silicon Mac must not pick arm64 by default),
 * and an image whose config is another platform is refused before a job
 * is submitted (nv_image_platform_check, host/image/codelayer.c). */
#include "image/codelayer.h"
#include "image/manifest.h"

#include <string.h>

#include "nv_test.h"

/* arm64 first, as a Mac's builder would push it */
static const char INDEX[] =
	"{\"schemaVersion\":2,\"mediaType\":"
	"\"application/vnd.oci.image.index.v1+json\",\"manifests\":["
	"{\"mediaType\":\"application/vnd.oci.image.manifest.v1+json\","
	"\"digest\":\"sha256:"
	"1111111111111111111111111111111111111111111111111111111111111111\","
	"\"size\":100,\"platform\":{\"os\":\"linux\",\"architecture\":"
	"\"arm64\",\"variant\":\"v8\"}},"
	"{\"mediaType\":\"application/vnd.oci.image.manifest.v1+json\","
	"\"digest\":\"sha256:"
	"2222222222222222222222222222222222222222222222222222222222222222\","
	"\"size\":100,\"platform\":{\"os\":\"linux\",\"architecture\":"
	"\"amd64\"}}]}";

#define CONFIG(os, arch, variant)                                              \
	"{\"os\":\"" os "\",\"architecture\":\"" arch "\"" variant             \
	",\"rootfs\":{\"type\":\"layers\",\"diff_ids\":[]}}"

static int check(const char *config, const char *platform, nv_err *err)
{
	return nv_image_platform_check(config, strlen(config), platform,
				       "base/img@sha256:ab", err);
}

int main(void)
{
	nv_oci_manifest m;
	size_t pos = 99;
	nv_err err;

	/* the default is amd64, not the first entry nor this machine's */
	CHECK_STR(NV_IMAGE_PLATFORM_DEFAULT, "linux/amd64");
	CHECK(nv_oci_manifest_parse(&m, INDEX, strlen(INDEX), NULL, &err) == 0);
	CHECK(nv_oci_index_select(&m, NV_IMAGE_PLATFORM_DEFAULT, &pos, &err) ==
	      0);
	CHECK(pos == 1);
	CHECK(nv_oci_index_select(&m, "linux/arm64", &pos, &err) == 0);
	CHECK(pos == 0);
	CHECK(nv_oci_index_select(&m, "linux/s390x", &pos, &err) ==
	      NV_ENOTFOUND);
	CHECK(strstr(err.message, "linux/arm64/v8") &&
	      strstr(err.message, "linux/amd64"));
	nv_oci_manifest_free(&m);

	/* the config decides: amd64 runs on the default */
	CHECK(check(CONFIG("linux", "amd64", ""), NULL, &err) == 0);
	CHECK(check(CONFIG("linux", "amd64", ""), "linux/amd64", &err) == 0);
	/* an arm64 image is refused for amd64 nodes, both named */
	CHECK(check(CONFIG("linux", "arm64", ",\"variant\":\"v8\""), NULL,
		    &err) == NV_EREFUSED);
	CHECK(strstr(err.message, "base/img@sha256:ab") &&
	      strstr(err.message, "linux/arm64/v8") &&
	      strstr(err.message, "not linux/amd64") &&
	      strstr(err.message, "exec format error"));
	CHECK(strstr(err.hint, "platform") != NULL);
	/* and accepted for arm64 nodes, with or without the variant */
	CHECK(check(CONFIG("linux", "arm64", ",\"variant\":\"v8\""),
		    "linux/arm64", &err) == 0);
	CHECK(check(CONFIG("linux", "arm64", ",\"variant\":\"v8\""),
		    "linux/arm64/v8", &err) == 0);
	CHECK(check(CONFIG("linux", "arm", ",\"variant\":\"v6\""),
		    "linux/arm/v7", &err) == NV_EREFUSED);
	CHECK(check(CONFIG("windows", "amd64", ""), NULL, &err) == NV_EREFUSED);
	/* a config that names no platform cannot be vouched for */
	CHECK(check("{\"rootfs\":{\"type\":\"layers\"}}", NULL, &err) ==
	      NV_EREFUSED);
	CHECK(strstr(err.message, "(no architecture)") != NULL);
	/* misuse */
	CHECK(check(CONFIG("linux", "amd64", ""), "amd64", &err) == NV_EINVAL);
	CHECK(check("not json", NULL, &err) == NV_EBACKEND);
	return nv_test_done();
}
