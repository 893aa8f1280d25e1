/* Unit tests of the pure-C registry pieces, no server: WWW-Authenticate
 * challenges (protocol.c), token answers and error bodies, manifests and
 * indexes of both families (manifest.c) with platform selection, the code
 * layer's config and manifest (what changes, what stays, same input same
 * bytes), and Docker config credentials (dockercfg.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "image/codelayer.h"
#include "image/dockercfg.h"
#include "image/manifest.h"
#include "image/protocol.h"

#include "nv_test.h"

#define H8(c) c c c c c c c c
/* "sha256:" and 64 times the character c */
#define D(c) "sha256:" H8(c) H8(c) H8(c) H8(c) H8(c) H8(c) H8(c) H8(c)

static void test_challenges(void)
{
	nv_reg_challenge ch;
	nv_err err;

	CHECK(nv_reg_challenge_parse(
		      &ch,
		      "Bearer realm=\"https://auth.example.com/token\","
		      "service=\"registry.example.com\",scope=\"repository:"
		      "team/app:pull,push\",error=\"insufficient_scope\"",
		      &err) == 0);
	CHECK_STR(ch.scheme, "bearer");
	CHECK_STR(ch.realm, "https://auth.example.com/token");
	CHECK_STR(ch.service, "registry.example.com");
	CHECK_STR(ch.scope, "repository:team/app:pull,push");
	CHECK_STR(ch.error, "insufficient_scope");

	CHECK(nv_reg_challenge_parse(&ch, "Basic realm=\"navette-test\"",
				     &err) == 0);
	CHECK_STR(ch.scheme, "basic");
	CHECK_STR(ch.realm, "navette-test");

	/* tokens, spaces around '=', escapes, case of names */
	CHECK(nv_reg_challenge_parse(&ch,
				     "BEARER Realm = \"http://h/t?a=\\\"b\","
				     "  service=svc , Scope=\"x y\"",
				     &err) == 0);
	CHECK_STR(ch.scheme, "bearer");
	CHECK_STR(ch.realm, "http://h/t?a=\"b");
	CHECK_STR(ch.service, "svc");
	CHECK_STR(ch.scope, "x y");

	/* a second challenge after the first stops the first */
	CHECK(nv_reg_challenge_parse(
		      &ch, "Basic realm=\"a\", Bearer realm=\"b\"", &err) == 0);
	CHECK_STR(ch.realm, "a");

	CHECK(nv_reg_challenge_parse(&ch, "", &err) == NV_EINVAL);
	CHECK(nv_reg_challenge_parse(&ch, NULL, &err) == NV_EINVAL);
	CHECK(nv_reg_challenge_parse(&ch, "Bearer realm=\"open", &err) ==
	      NV_EINVAL);
	CHECK(nv_reg_challenge_parse(&ch, "Bearer realm=\"a\" junk", &err) ==
	      NV_EINVAL);
	CHECK(nv_reg_challenge_parse(&ch, "Bearer realm=", &err) == NV_EINVAL);
	{
		/* a realm too long is refused, not cut */
		char big[3000];

		memset(big, 'a', sizeof(big));
		memcpy(big, "Bearer realm=\"", 14);
		big[sizeof(big) - 2] = '"';
		big[sizeof(big) - 1] = '\0';
		CHECK(nv_reg_challenge_parse(&ch, big, &err) == NV_EINVAL);
		CHECK(strstr(err.message, "too long") != NULL ||
		      strstr(err.message, "malformed") != NULL);
	}
}

static void test_tokens_and_errors(void)
{
	char code[64], message[128];
	nv_secret *tok = NULL;
	const nv_secret_field *f;
	nv_err err;
	const char *a = "{\"token\":\"abc.def.ghi\",\"expires_in\":120}";
	const char *b = "{\"access_token\":\"xyz\"}";

	CHECK(nv_reg_token_parse(a, strlen(a), "t", 1000.0, &tok, &err) == 0);
	if (tok) {
		f = nv_secret_get(tok, "token");
		CHECK(f && f->len == 11 &&
		      memcmp(f->value, "abc.def.ghi", 11) == 0);
		CHECK(tok->kind == NV_SECRET_BEARER);
		CHECK(tok->expires_at == 1120.0);
		nv_secret_free(tok);
	}
	CHECK(nv_reg_token_parse(b, strlen(b), "t", 0, &tok, &err) == 0);
	if (tok) {
		CHECK(tok->expires_at == NV_REG_TOKEN_DEFAULT_EXPIRY);
		nv_secret_free(tok);
	}
	CHECK(nv_reg_token_parse("{}", 2, "t", 0, &tok, &err) == NV_EBACKEND);
	CHECK(tok == NULL);
	CHECK(nv_reg_token_parse("[1]", 3, "t", 0, &tok, &err) == NV_EBACKEND);
	CHECK(nv_reg_token_parse("", 0, "t", 0, &tok, &err) == NV_EBACKEND);

	{
		const char *e = "{\"errors\":[{\"code\":\"MANIFEST_UNKNOWN\","
				"\"message\":\"manifest\\nunknown\"}]}";

		nv_reg_error_parse(e, strlen(e), code, sizeof(code), message,
				   sizeof(message));
	}
	CHECK_STR(code, "MANIFEST_UNKNOWN");
	CHECK_STR(message, "manifest?unknown"); /* no control characters */
	nv_reg_error_parse("<html>", 6, code, sizeof(code), message,
			   sizeof(message));
	CHECK_STR(code, "");
	CHECK_STR(message, "");
	nv_reg_error_parse("{\"details\":\"bad password\"}", 26, code,
			   sizeof(code), message, sizeof(message));
	CHECK_STR(message, "bad password");
	CHECK(nv_reg_error_hint("DENIED") != NULL);
	CHECK(nv_reg_error_hint("NOPE") == NULL);
	CHECK(nv_reg_scope(code, sizeof(code), "team/app", "pull") == 0);
	CHECK_STR(code, "repository:team/app:pull");
	CHECK(nv_reg_scope(code, 10, "team/app", "pull") == NV_ENOMEM);
}

static const char OCI_MANIFEST[] =
	"{\"schemaVersion\":2,\"mediaType\":\"" NV_OCI_MT_MANIFEST "\","
	"\"config\":{\"mediaType\":\"" NV_OCI_MT_CONFIG "\",\"digest\":\"" D(
		"a") "\",\"size\":100},\"layers\":[{\"mediaType\":"
		     "\"" NV_OCI_MT_LAYER_GZ "\",\"digest\":\"" D(
			     "b") "\",\"size\":2000}],\"subject\":{\"mediaType"
				  "\":\"x\",\"digest\":\"" D(
					  "c") "\",\"size\":1},\"annotations\":"
					       "{"
					       "\"keep\":\"me\"}}";

static const char DOCKER_MANIFEST[] =
	"{\"schemaVersion\":2,\"mediaType\":\"" NV_DOCKER_MT_MANIFEST "\","
	"\"config\":{\"mediaType\":\"" NV_DOCKER_MT_CONFIG "\",\"digest\":\"" D(
		"a") "\",\"size\":100},\"layers\":[{\"mediaType\":"
		     "\"" NV_DOCKER_MT_LAYER_GZ
		     "\",\"digest\":\"" D("b") "\",\"size\":2000}]}";

static const char INDEX[] =
	"{\"schemaVersion\":2,\"manifests\":["
	"{\"mediaType\":\"" NV_OCI_MT_MANIFEST "\",\"digest\":\"" D(
		"1") "\",\"size\":1,\"platform\":{\"os\":\"linux\","
		     "\"architecture\":\"arm\",\"variant\":\"v7\"}},"
		     "{\"mediaType\":\"" NV_OCI_MT_MANIFEST
		     "\",\"digest\":\"" D(
			     "2") "\",\"size\":1,\"platform\":{\"os\":"
				  "\"linux\","
				  "\"architecture\":\"amd64\"}},"
				  "{\"mediaType\":\"" NV_OCI_MT_MANIFEST
				  "\",\"digest\":\"" D(
					  "3") "\",\"size\":1,\"platform\":{"
					       "\"os\":\"linux\","
					       "\"architecture\":\"arm64\","
					       "\"variant\":\"v8\"}}]}";

static const char CONFIG[] =
	"{\"architecture\":\"amd64\",\"os\":\"linux\",\"config\":{\"Env\":["
	"\"PATH=/bin\"],\"Labels\":null},\"rootfs\":{\"type\":\"layers\","
	"\"diff_ids\":[\"" D(
		"d") "\"]},\"history\":[{\"created_by\":\"base\"}]}";

static void test_manifests(void)
{
	nv_oci_manifest m;
	size_t pos = 99;
	nv_oci_config_info info;
	nv_err err;

	CHECK(nv_oci_manifest_parse(&m, OCI_MANIFEST, strlen(OCI_MANIFEST),
				    NULL, &err) == 0);
	CHECK(m.kind == NV_OCI_IMAGE && !m.docker);
	CHECK_STR(m.config.digest, D("a"));
	CHECK(m.nentries == 1 && m.entries[0].size == 2000);
	nv_oci_manifest_free(&m);

	CHECK(nv_oci_manifest_parse(&m, DOCKER_MANIFEST,
				    strlen(DOCKER_MANIFEST), NULL, &err) == 0);
	CHECK(m.kind == NV_OCI_IMAGE && m.docker);
	nv_oci_manifest_free(&m);

	/* no mediaType in the body: told by the members */
	CHECK(nv_oci_manifest_parse(&m, INDEX, strlen(INDEX), NULL, &err) == 0);
	CHECK(m.kind == NV_OCI_LIST && m.nentries == 3);
	CHECK(nv_oci_index_select(&m, "linux/amd64", &pos, &err) == 0);
	CHECK(pos == 1);
	CHECK(nv_oci_index_select(&m, "linux/arm64", &pos, &err) == 0);
	CHECK(pos == 2);
	CHECK(nv_oci_index_select(&m, "linux/arm/v7", &pos, &err) == 0);
	CHECK(pos == 0);
	CHECK(nv_oci_index_select(&m, "linux/arm/v6", &pos, &err) ==
	      NV_ENOTFOUND);
	CHECK(strstr(err.message,
		     "linux/arm/v7, linux/amd64, linux/arm64/v8") != NULL);
	CHECK(nv_oci_index_select(&m, "linux", &pos, &err) == NV_EINVAL);
	CHECK(nv_oci_index_select(&m, "Linux/AMD64", &pos, &err) == NV_EINVAL);
	nv_oci_manifest_free(&m);

	/* Content-Type decides when the body is silent */
	CHECK(nv_oci_manifest_parse(&m,
				    "{\"schemaVersion\":2,\"config\":{"
				    "\"digest\":\"" D("a") "\",\"size\":1},"
							   "\"layers\":[]}",
				    strlen("{\"schemaVersion\":2,\"config\":{"
					   "\"digest\":\"" D("a") "\",\"size\""
								  ":1},"
								  "\"layers\":"
								  "[]}"),
				    NV_DOCKER_MT_MANIFEST "; charset=utf-8",
				    &err) == 0);
	CHECK(m.docker == 1);
	nv_oci_manifest_free(&m);

	/* refused: schema1, bad digests, sizes, not JSON */
	{
		const char *s1 =
			"{\"schemaVersion\":1,\"mediaType\":\"application/"
			"vnd.docker.distribution.manifest.v1+prettyjws\"}";
		const char *bad_digest =
			"{\"mediaType\":\"" NV_OCI_MT_MANIFEST "\",\"config\":"
			"{\"digest\":\"md5:00\",\"size\":1},\"layers\":[]}";
		const char *bad_size =
			"{\"mediaType\":\"" NV_OCI_MT_MANIFEST "\",\"config\":"
			"{\"digest\":\"" D(
				"a") "\",\"size\":-1},\"layers\":[]}";

		CHECK(nv_oci_manifest_parse(&m, s1, strlen(s1), NULL, &err) ==
		      NV_EREFUSED);
		CHECK(strstr(err.message, "prettyjws") != NULL);
		CHECK(nv_oci_manifest_parse(&m, bad_digest, strlen(bad_digest),
					    NULL, &err) == NV_EBACKEND);
		CHECK(nv_oci_manifest_parse(&m, bad_size, strlen(bad_size),
					    NULL, &err) == NV_EBACKEND);
		CHECK(nv_oci_manifest_parse(&m, "nope", 4, NULL, &err) ==
		      NV_EBACKEND);
	}

	CHECK(nv_oci_config_info_parse(CONFIG, strlen(CONFIG), &info, &err) ==
	      0);
	CHECK_STR(info.architecture, "amd64");
	CHECK(info.ndiff_ids == 1);
}

static const char *jpath(cJSON *root, const char *a, const char *b,
			 const char *c)
{
	cJSON *n = cJSON_GetObjectItemCaseSensitive(root, a);

	if (b)
		n = cJSON_GetObjectItemCaseSensitive(n, b);
	if (c)
		n = cJSON_GetObjectItemCaseSensitive(n, c);
	return cJSON_IsString(n) ? n->valuestring : NULL;
}

static void test_code_layer_docs(void)
{
	nv_code_layer_meta meta;
	char *c1 = NULL, *c2 = NULL, *m1 = NULL, *m2 = NULL, mt[128];
	size_t l1, l2, lm1, lm2;
	cJSON *doc, *arr;
	nv_err err;

	memset(&meta, 0, sizeof(meta));
	meta.diff_id = D("e");
	meta.created = 1700000000;
	meta.revision = "0123456789012345678901234567890123456789";
	meta.source = "https://git.example.com/team/app.git";
	meta.lockfile_hash = "ab";
	meta.into = "/workspace";
	meta.created_by = "navette code layer";

	CHECK(nv_oci_code_config(CONFIG, strlen(CONFIG), 1, &meta, &c1, &l1,
				 &err) == 0);
	CHECK(nv_oci_code_config(CONFIG, strlen(CONFIG), 1, &meta, &c2, &l2,
				 &err) == 0);
	CHECK(c1 && c2 && l1 == l2 && memcmp(c1, c2, l1) == 0);
	doc = c1 ? cJSON_Parse(c1) : NULL;
	CHECK(doc != NULL);
	if (doc) {
		arr = cJSON_GetObjectItemCaseSensitive(
			cJSON_GetObjectItemCaseSensitive(doc, "rootfs"),
			"diff_ids");
		CHECK(cJSON_GetArraySize(arr) == 2);
		CHECK_STR(cJSON_GetArrayItem(arr, 1)->valuestring, D("e"));
		CHECK_STR(jpath(doc, "created", NULL, NULL),
			  "2023-11-14T22:13:20Z");
		CHECK_STR(jpath(doc, "config", "Labels",
				"org.opencontainers.image.revision"),
			  meta.revision);
		CHECK_STR(jpath(doc, "config", "Labels",
				"org.opencontainers.image.source"),
			  meta.source);
		CHECK_STR(jpath(doc, "config", "Labels",
				"org.opencontainers.image.created"),
			  "2023-11-14T22:13:20Z");
		CHECK_STR(jpath(doc, "config", "Labels",
				NV_CODE_LAYER_LOCK_LABEL),
			  "ab");
		CHECK_STR(jpath(doc, "config", "WorkingDir", NULL),
			  "/workspace");
		/* what the base had stays */
		CHECK(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(
			      cJSON_GetObjectItemCaseSensitive(doc, "config"),
			      "Env")) == 1);
		arr = cJSON_GetObjectItemCaseSensitive(doc, "history");
		CHECK(cJSON_GetArraySize(arr) == 2);
		cJSON_Delete(doc);
	}
	/* a base whose diff_ids do not match its layers is refused */
	free(c2);
	c2 = NULL;
	CHECK(nv_oci_code_config(CONFIG, strlen(CONFIG), 2, &meta, &c2, &l2,
				 &err) == NV_EREFUSED);
	CHECK(c2 == NULL);

	CHECK(nv_oci_code_manifest(OCI_MANIFEST, strlen(OCI_MANIFEST), D("f"),
				   123, D("9"), 456, NULL, D("8"), &m1, &lm1,
				   mt, &err) == 0);
	CHECK(nv_oci_code_manifest(OCI_MANIFEST, strlen(OCI_MANIFEST), D("f"),
				   123, D("9"), 456, NULL, D("8"), &m2, &lm2,
				   mt, &err) == 0);
	CHECK(m1 && m2 && lm1 == lm2 && memcmp(m1, m2, lm1) == 0);
	CHECK_STR(mt, NV_OCI_MT_MANIFEST);
	doc = m1 ? cJSON_Parse(m1) : NULL;
	if (doc) {
		CHECK_STR(jpath(doc, "config", "digest", NULL), D("f"));
		arr = cJSON_GetObjectItemCaseSensitive(doc, "layers");
		CHECK(cJSON_GetArraySize(arr) == 2);
		CHECK_STR(
			jpath(cJSON_GetArrayItem(arr, 1), "digest", NULL, NULL),
			D("9"));
		CHECK_STR(jpath(cJSON_GetArrayItem(arr, 1), "mediaType", NULL,
				NULL),
			  NV_OCI_MT_LAYER_GZ);
		CHECK(cJSON_GetObjectItemCaseSensitive(doc, "subject") == NULL);
		CHECK_STR(jpath(doc, "annotations",
				"org.opencontainers.image.base.digest", NULL),
			  D("8"));
		CHECK(jpath(doc, "annotations",
			    "org.opencontainers.image.base.name",
			    NULL) == NULL);
		CHECK_STR(jpath(doc, "annotations", "keep", NULL), "me");
		cJSON_Delete(doc);
	}
	free(m1);
	free(m2);
	m1 = NULL;
	/* a Docker base keeps its family */
	CHECK(nv_oci_code_manifest(DOCKER_MANIFEST, strlen(DOCKER_MANIFEST),
				   D("f"), 123, D("9"), 456, NULL, D("8"), &m1,
				   &lm1, mt, &err) == 0);
	CHECK_STR(mt, NV_DOCKER_MT_MANIFEST);
	CHECK(m1 && strstr(m1, NV_DOCKER_MT_LAYER_GZ
			   "\",\"digest\":\"" D("9")) != NULL);
	CHECK(m1 && strstr(m1, "annotations") == NULL);
	free(m1);
	/* an index is not a base */
	CHECK(nv_oci_code_manifest(INDEX, strlen(INDEX), D("f"), 1, D("9"), 1,
				   NULL, NULL, &m1, &lm1, mt,
				   &err) == NV_EINVAL);
	free(c1);
	free(c2);
	{
		char tag[200];

		nv_code_layer_tag(meta.revision, tag);
		CHECK_STR(tag, "012345678901");
	}
}

static void test_dockercfg(void)
{
	char dir[] = "/tmp/nv-test-dockercfg-XXXXXX", path[200];
	const nv_secret_field *u, *p;
	nv_secret *s = NULL;
	nv_err err;
	FILE *f;

	if (!mkdtemp(dir)) {
		CHECK(0);
		return;
	}
	snprintf(path, sizeof(path), "%s/config.json", dir);
	f = fopen(path, "w");
	if (!f) {
		CHECK(0);
		return;
	}
	/* "alice:pa:ss" and "bob:pw" in base64 */
	fputs("{\"auths\":{\"127.0.0.1:5001\":{\"auth\":\"YWxpY2U6cGE6c3M=\"},"
	      "\"https://index.docker.io/v1/\":{\"auth\":\"Ym9iOnB3\"},"
	      "\"broken.example.com\":{\"auth\":\"!!!\"},"
	      "\"nocolon.example.com\":{\"auth\":\"bm9jb2xvbg==\"}},"
	      "\"credHelpers\":{\"gcr.io\":\"gcloud\"}}",
	      f);
	fclose(f);

	CHECK(nv_dockercfg_credential(path, "127.0.0.1:5001", &s, &err) == 0);
	if (s) {
		u = nv_secret_get(s, "user");
		p = nv_secret_get(s, "password");
		CHECK(u && u->len == 5 && memcmp(u->value, "alice", 5) == 0);
		CHECK(p && p->len == 5 && memcmp(p->value, "pa:ss", 5) == 0);
		CHECK(s->kind == NV_SECRET_BASIC);
		nv_secret_free(s);
		s = NULL;
	}
	CHECK(nv_dockercfg_credential(path, "docker.io", &s, &err) == 0);
	if (s) {
		u = nv_secret_get(s, "user");
		CHECK(u && u->len == 3 && memcmp(u->value, "bob", 3) == 0);
		nv_secret_free(s);
		s = NULL;
	}
	CHECK(nv_dockercfg_credential(path, "127.0.0.1:5000", &s, &err) ==
	      NV_ENOTFOUND);
	CHECK(nv_dockercfg_credential(path, "gcr.io", &s, &err) ==
	      NV_ENOTFOUND);
	CHECK(strstr(err.hint, "helpers") != NULL);
	CHECK(nv_dockercfg_credential(path, "broken.example.com", &s, &err) ==
	      NV_EINVAL);
	CHECK(nv_dockercfg_credential(path, "nocolon.example.com", &s, &err) ==
	      NV_EINVAL);
	CHECK(strstr(err.message, "nocolon") == NULL ||
	      strstr(err.message, "user:password") != NULL);
	CHECK(s == NULL);
	snprintf(path, sizeof(path), "%s/missing.json", dir);
	CHECK(nv_dockercfg_credential(path, "x.io", &s, &err) == NV_ENOTFOUND);
	snprintf(path, sizeof(path), "%s/config.json", dir);
	unlink(path);
	rmdir(dir);
}

int main(void)
{
	test_challenges();
	test_tokens_and_errors();
	test_manifests();
	test_code_layer_docs();
	test_dockercfg();
	return nv_test_done();
}
