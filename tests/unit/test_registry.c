/* Tests of the registry client (host/image/registry.c) against the real
 * registries of the "registry" ctest fixture (tests/stack/registry-start.sh:
 * CNCF distribution 2.8 without auth, with htpasswd Basic auth, and with
 * Bearer tokens from the test token service), and against a fake registry
 * that lies about digests (tests/data/image/lying_registry.py), which no
 * real registry can be made to do. REGISTRY_STACK_ENV names the stack's
 * KEY=value file. */
#include "image/registry.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#if defined(__linux__)
#include <sys/prctl.h>
#endif

#include "core/fsutil.h"
#include "image/protocol.h"
#include "core/sha256.h"

#include "nv_test.h"
#include "nv_test_sh.h"

/* CHECK that also shows the last error when it fails */
#define CHECK_OK(call)                                                         \
	do {                                                                   \
		int rc_ = (call);                                              \
		if (rc_ != 0)                                                  \
			fprintf(stderr, "%s:%d: rc %d: %s\n", __FILE__,        \
				__LINE__, rc_, err.message);                   \
		CHECK(rc_ == 0);                                               \
	} while (0)

static char plain[64], basic[64], token[64], issuer[128];
static char basic_user[64], basic_pass[128], token_user[64], token_pass[128];
static char reader_user[64], reader_pass[128];
static char suffix[16], tmpdir[256];

static void set_var(const char *name, const char *v)
{
	static const struct {
		const char *name;
		char *dst;
		size_t cap;
	} vars[] = {
		{"REGISTRY_PLAIN", plain, sizeof(plain)},
		{"REGISTRY_BASIC", basic, sizeof(basic)},
		{"REGISTRY_TOKEN", token, sizeof(token)},
		{"REGISTRY_ISSUER", issuer, sizeof(issuer)},
		{"REGISTRY_BASIC_USER", basic_user, sizeof(basic_user)},
		{"REGISTRY_BASIC_PASSWORD", basic_pass, sizeof(basic_pass)},
		{"REGISTRY_TOKEN_USER", token_user, sizeof(token_user)},
		{"REGISTRY_TOKEN_PASSWORD", token_pass, sizeof(token_pass)},
		{"REGISTRY_TOKEN_READER", reader_user, sizeof(reader_user)},
		{"REGISTRY_TOKEN_READER_PASSWORD", reader_pass,
		 sizeof(reader_pass)},
	};
	for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++)
		if (strcmp(name, vars[i].name) == 0)
			snprintf(vars[i].dst, vars[i].cap, "%s", v);
}

static int load_env(void)
{
	const char *path = getenv("REGISTRY_STACK_ENV");
	char line[512];
	FILE *f;

	if (!path || !path[0]) {
		fprintf(stderr, "test_registry: REGISTRY_STACK_ENV is not set. "
				"Run it through ctest (fixture \"registry\"), "
				"or start tests/stack/registry-start.sh DIR "
				"and point REGISTRY_STACK_ENV at "
				"DIR/registry.env.\n");
		return -1;
	}
	f = fopen(path, "r");
	if (!f) {
		fprintf(stderr, "test_registry: cannot read %s: %s\n", path,
			strerror(errno));
		return -1;
	}
	while (fgets(line, sizeof(line), f)) {
		char *eq = strchr(line, '=');

		if (!eq)
			continue;
		*eq = '\0';
		eq[1 + strcspn(eq + 1, "\r\n")] = '\0';
		set_var(line, eq + 1);
	}
	fclose(f);
	return plain[0] && basic[0] && token[0] && issuer[0] ? 0 : -1;
}

/* Lines of a URL's body that contain needle. */
static int count_lines(const char *url, const char *needle)
{
	char cmd[1024], line[4096];
	int n = 0;
	FILE *p;

	snprintf(cmd, sizeof(cmd), "curl -sf '%s'", url);
	p = popen(cmd, "r");
	if (!p)
		return -1;
	while (fgets(line, sizeof(line), p))
		if (strstr(line, needle))
			n++;
	pclose(p);
	return n;
}

static nv_secret *make_basic(const char *user, const char *pass)
{
	nv_err err;
	nv_secret *s = nv_secret_new("registry", NV_SECRET_BASIC, "env", &err);

	if (!s || nv_secret_set(s, "user", user, strlen(user), &err) ||
	    nv_secret_set(s, "password", pass, strlen(pass), &err)) {
		fprintf(stderr, "secret: %s\n", err.message);
		abort();
	}
	return s;
}

static nv_registry *open_client(const char *registry, const nv_secret *cred,
				uint64_t chunk)
{
	nv_registry_config cfg;
	nv_registry *r = NULL;
	nv_err err;

	memset(&cfg, 0, sizeof(cfg));
	cfg.registry = registry;
	cfg.credential = cred;
	cfg.chunk_size = chunk;
	if (nv_registry_open(&r, &cfg, &err)) {
		fprintf(stderr, "open: %s\n", err.message);
		abort();
	}
	return r;
}

static void digest_of(const void *data, size_t len, char out[72])
{
	char hex[65];
	nv_err err;

	nv_sha256_bytes(data, len, hex, &err);
	snprintf(out, 72, "sha256:%s", hex);
}

/* A small image: a config, one layer (any bytes: registries do not look
 * inside), its manifest. */
struct image {
	char config[512], layer[256], manifest[2048];
	char config_digest[72], layer_digest[72], digest[72];
};

static void make_image(struct image *im, const char *arch, const char *salt)
{
	snprintf(im->layer, sizeof(im->layer), "layer bytes %s %s", salt,
		 suffix);
	digest_of(im->layer, strlen(im->layer), im->layer_digest);
	snprintf(im->config, sizeof(im->config),
		 "{\"architecture\":\"%s\",\"os\":\"linux\",\"rootfs\":{"
		 "\"type\":\"layers\",\"diff_ids\":[\"%s\"]},\"config\":{}}",
		 arch, im->layer_digest);
	digest_of(im->config, strlen(im->config), im->config_digest);
	snprintf(im->manifest, sizeof(im->manifest),
		 "{\"schemaVersion\":2,\"mediaType\":\"%s\",\"config\":{"
		 "\"mediaType\":\"%s\",\"digest\":\"%s\",\"size\":%zu},"
		 "\"layers\":[{\"mediaType\":\"%s\",\"digest\":\"%s\","
		 "\"size\":%zu}]}",
		 NV_OCI_MT_MANIFEST, NV_OCI_MT_CONFIG, im->config_digest,
		 strlen(im->config), NV_OCI_MT_LAYER_GZ, im->layer_digest,
		 strlen(im->layer));
	digest_of(im->manifest, strlen(im->manifest), im->digest);
}

static int push_image(nv_registry *r, const char *repo, const char *tag,
		      const struct image *im, nv_err *err)
{
	char d[72];
	int rc;

	rc = nv_registry_blob_upload_bytes(r, repo, im->layer_digest, im->layer,
					   strlen(im->layer), err);
	if (!rc)
		rc = nv_registry_blob_upload_bytes(r, repo, im->config_digest,
						   im->config,
						   strlen(im->config), err);
	if (!rc)
		rc = nv_registry_manifest_put(r, repo, tag, NV_OCI_MT_MANIFEST,
					      im->manifest,
					      strlen(im->manifest), d, err);
	if (!rc && strcmp(d, im->digest) != 0)
		rc = -99;
	return rc;
}

static void test_plain(void)
{
	char repo[128], other[128], path[512], d[72], mt[128];
	struct image amd, arm;
	nv_registry_manifest m;
	nv_registry_image img;
	nv_buf buf;
	int64_t size;
	int mounted = -1;
	nv_err err;
	nv_registry *r = open_client(plain, NULL, 0);

	snprintf(repo, sizeof(repo), "test/plain-%s", suffix);
	snprintf(other, sizeof(other), "test/other-%s", suffix);
	CHECK_OK(nv_registry_ping(r, &err));
	{
		char base[100];

		snprintf(base, sizeof(base), "http://%s", plain);
		CHECK_STR(nv_registry_base(r), base);
	}

	/* monolithic blob upload, HEAD, GET (verified) */
	make_image(&amd, "amd64", "a");
	CHECK(nv_registry_blob_head(r, repo, amd.layer_digest, NULL, &err) ==
	      NV_ENOTFOUND);
	CHECK_OK(push_image(r, repo, "v1", &amd, &err));
	CHECK_OK(nv_registry_blob_head(r, repo, amd.layer_digest, &size, &err));
	CHECK(size == (int64_t)strlen(amd.layer));
	CHECK_OK(nv_registry_blob_get(r, repo, amd.config_digest, 4096, &buf,
				      &err));
	CHECK(buf.len == strlen(amd.config) &&
	      memcmp(buf.data, amd.config, buf.len) == 0);
	nv_buf_free(&buf);

	/* manifests by tag and by digest; HEAD announces the same digest */
	CHECK_OK(nv_registry_manifest_get(r, repo, "v1", &m, &err));
	CHECK_STR(m.digest, amd.digest);
	CHECK_STR(m.media_type, NV_OCI_MT_MANIFEST);
	nv_registry_manifest_free(&m);
	CHECK_OK(nv_registry_manifest_get(r, repo, amd.digest, &m, &err));
	nv_registry_manifest_free(&m);
	CHECK_OK(nv_registry_manifest_head(r, repo, "v1", d, mt, &size, &err));
	CHECK_STR(d, amd.digest);
	CHECK(size == (int64_t)strlen(amd.manifest));
	CHECK(nv_registry_manifest_get(r, repo, "nope", &m, &err) ==
	      NV_ENOTFOUND);
	CHECK(strstr(err.message, "MANIFEST_UNKNOWN") != NULL);
	CHECK(strstr(err.hint, "tag or digest") != NULL);
	CHECK(nv_registry_manifest_get(r, repo, "a/b", &m, &err) == NV_EINVAL);

	/* a big blob in chunks, from a file; then read back into a file */
	{
		nv_registry *rc = open_client(plain, NULL, 64 * 1024);
		char digest[72], hex[65], back[600];
		const nv_registry_stats *st;

		snprintf(path, sizeof(path), "%s/big.bin", tmpdir);
		CHECK(sh("head -c 300000 /dev/urandom > '%s'", path) == 0);
		CHECK(nv_sha256_file(path, hex, NULL, &err) == 0);
		snprintf(digest, sizeof(digest), "sha256:%s", hex);
		CHECK_OK(nv_registry_blob_upload_file(rc, repo, digest, path,
						      &err));
		st = nv_registry_stats_get(rc);
		CHECK(st->bytes_uploaded == 300000);
		CHECK(st->blobs_uploaded == 1);
		/* 5 PATCH + POST + PUT */
		CHECK(st->requests == 7);
		CHECK(st->blobs_uploaded == 1);
		/* HEAD of a blob larger than any response cap */
		CHECK_OK(nv_registry_blob_head(rc, repo, digest, &size, &err));
		CHECK(size == 300000);
		snprintf(back, sizeof(back), "%s/back.bin", tmpdir);
		CHECK_OK(nv_registry_blob_get_file(rc, repo, digest, back,
						   &err));
		CHECK(sh("cmp -s '%s' '%s'", path, back) == 0);
		/* a wrong digest is refused by the registry */
		digest[10] = digest[10] == '0' ? '1' : '0';
		CHECK(nv_registry_blob_upload_file(rc, repo, digest, path,
						   &err) == NV_EBACKEND);
		CHECK(strstr(err.message, "DIGEST_INVALID") != NULL);
		nv_registry_free(rc);
	}

	/* cross-repository mount */
	CHECK_OK(nv_registry_blob_mount(r, other, amd.layer_digest, repo,
					&mounted, &err));
	CHECK(mounted == 1);
	CHECK_OK(nv_registry_blob_head(r, other, amd.layer_digest, NULL, &err));
	mounted = -1;
	CHECK_OK(nv_registry_blob_mount(r, other,
					"sha256:"
					"0000000000000000"
					"0000000000000000"
					"0000000000000000"
					"0000000000000000",
					repo, &mounted, &err));
	CHECK(mounted == 0);

	/* an index, resolved to a platform */
	make_image(&arm, "arm64", "b");
	CHECK_OK(push_image(r, repo, "arm", &arm, &err));
	{
		char index[2048], idx_digest[72];

		snprintf(index, sizeof(index),
			 "{\"schemaVersion\":2,\"mediaType\":\"%s\","
			 "\"manifests\":[{\"mediaType\":\"%s\",\"digest\":"
			 "\"%s\",\"size\":%zu,\"platform\":{\"os\":\"linux\","
			 "\"architecture\":\"amd64\"}},{\"mediaType\":\"%s\","
			 "\"digest\":\"%s\",\"size\":%zu,\"platform\":{\"os\":"
			 "\"linux\",\"architecture\":\"arm64\",\"variant\":"
			 "\"v8\"}}]}",
			 NV_OCI_MT_INDEX, NV_OCI_MT_MANIFEST, amd.digest,
			 strlen(amd.manifest), NV_OCI_MT_MANIFEST, arm.digest,
			 strlen(arm.manifest));
		CHECK_OK(nv_registry_manifest_put(
			r, repo, "multi", NV_OCI_MT_INDEX, index, strlen(index),
			idx_digest, &err));
		CHECK_OK(nv_registry_resolve(r, repo, "multi", NULL, 1, &img,
					     &err));
		CHECK_STR(img.digest, amd.digest);
		CHECK_STR(img.index_digest, idx_digest);
		CHECK(img.config.len == strlen(amd.config));
		nv_registry_image_free(&img);
		CHECK_OK(nv_registry_resolve(r, repo, "multi", "linux/arm64/v8",
					     0, &img, &err));
		CHECK_STR(img.digest, arm.digest);
		CHECK(img.parsed.nentries == 1);
		nv_registry_image_free(&img);
		CHECK(nv_registry_resolve(r, repo, "multi", "linux/s390x", 0,
					  &img, &err) == NV_ENOTFOUND);
		CHECK(strstr(err.message, "linux/arm64/v8") != NULL);
		/* a plain image resolves to itself */
		CHECK_OK(nv_registry_resolve(r, repo, "v1", NULL, 0, &img,
					     &err));
		CHECK_STR(img.digest, amd.digest);
		CHECK_STR(img.index_digest, "");
		nv_registry_image_free(&img);
	}
	nv_registry_free(r);
}

static void test_basic(void)
{
	char repo[128];
	struct image im;
	nv_secret *good = make_basic(basic_user, basic_pass);
	nv_secret *bad = make_basic(basic_user, "wrong-password");
	nv_registry *r;
	nv_err err;

	snprintf(repo, sizeof(repo), "test/basic-%s", suffix);
	make_image(&im, "amd64", "basic");

	r = open_client(basic, NULL, 0);
	CHECK(nv_registry_ping(r, &err) == NV_EREFUSED);
	CHECK(strstr(err.message, "HTTP 401") != NULL);
	CHECK(strstr(err.hint, "credential") != NULL);
	nv_registry_free(r);

	r = open_client(basic, bad, 0);
	CHECK(nv_registry_ping(r, &err) == NV_EREFUSED);
	CHECK(strstr(err.message, "wrong-password") == NULL);
	nv_registry_free(r);

	r = open_client(basic, good, 0);
	CHECK_OK(nv_registry_ping(r, &err));
	CHECK_OK(push_image(r, repo, "v1", &im, &err));
	/* Basic is remembered: one 401 for the whole session */
	CHECK(nv_registry_stats_get(r)->unauthorized == 1);
	nv_registry_free(r);

	/* a credential bound to another host is never sent */
	{
		nv_registry_config cfg;

		memset(&cfg, 0, sizeof(cfg));
		cfg.registry = basic;
		cfg.credential = good;
		cfg.credential_host = "registry.example.com";
		CHECK_OK(nv_registry_open(&r, &cfg, &err));
		CHECK(nv_registry_ping(r, &err) == NV_EREFUSED);
		CHECK(strstr(err.message, "registry.example.com") != NULL ||
		      strstr(err.message, "bound") != NULL);
		nv_registry_free(r);
	}
	nv_secret_free(good);
	nv_secret_free(bad);
}

static void issuer_config(const char *query)
{
	char url[300];

	snprintf(url, sizeof(url), "%s/_config?%s", issuer, query);
	CHECK(sh("curl -sf -o /dev/null -X POST '%s'", url) == 0);
}

static void test_token(void)
{
	char repo[128], log_url[300], needle[400], d[72];
	struct image im, im2;
	nv_secret *pusher = make_basic(token_user, token_pass);
	nv_secret *reader = make_basic(reader_user, reader_pass);
	nv_secret *bad = make_basic(token_user, "nope-nope");
	const nv_registry_stats *st;
	nv_registry_manifest m;
	nv_registry *r;
	nv_err err;
	int before;

	snprintf(repo, sizeof(repo), "test/token-%s", suffix);
	snprintf(log_url, sizeof(log_url), "%s/_log", issuer);
	/* the renewal may add the challenge's scope, in any order of
	 * actions (the registry builds it from a Go map) */
	snprintf(needle, sizeof(needle), "%s repository:%s:pull,push",
		 token_user, repo);
	make_image(&im, "amd64", "token");
	make_image(&im2, "amd64", "token2");
	issuer_config("reset=1");

	/* scope caching: one token for every push request of the image */
	r = open_client(token, pusher, 0);
	CHECK_OK(push_image(r, repo, "v1", &im, &err));
	st = nv_registry_stats_get(r);
	CHECK(st->token_requests == 1);
	CHECK(st->unauthorized == 1);
	CHECK(count_lines(log_url, needle) == 1);
	/* another scope (pull) is another token; then cached too */
	CHECK_OK(nv_registry_manifest_get(r, repo, "v1", &m, &err));
	nv_registry_manifest_free(&m);
	CHECK_OK(nv_registry_manifest_get(r, repo, im.digest, &m, &err));
	nv_registry_manifest_free(&m);
	CHECK(st->token_requests == 2);
	CHECK(st->unauthorized == 1); /* the client knew what to ask */
	nv_registry_free(r);

	/* expiry: a token is renewed before it runs out, without a 401 */
	issuer_config("expires_in=2");
	r = open_client(token, pusher, 0);
	CHECK_OK(nv_registry_manifest_get(r, repo, "v1", &m, &err));
	nv_registry_manifest_free(&m);
	st = nv_registry_stats_get(r);
	CHECK(st->token_requests == 1);
	CHECK_OK(nv_registry_manifest_get(r, repo, "v1", &m, &err));
	nv_registry_manifest_free(&m);
	CHECK(st->token_requests == 1);
	sleep(3);
	CHECK_OK(nv_registry_manifest_get(r, repo, "v1", &m, &err));
	nv_registry_manifest_free(&m);
	CHECK(st->token_requests == 2);
	CHECK(st->unauthorized == 1);
	nv_registry_free(r);
	issuer_config("expires_in=300");

	/* insufficient_scope: the first push token lacks push; the client
	 * renews once and succeeds */
	issuer_config("stingy=1");
	before = count_lines(log_url, needle);
	r = open_client(token, pusher, 0);
	CHECK_OK(push_image(r, repo, "v2", &im2, &err));
	st = nv_registry_stats_get(r);
	CHECK(st->token_requests == 2);
	CHECK(st->unauthorized == 2);
	CHECK(count_lines(log_url, needle) == before + 2);
	nv_registry_free(r);
	issuer_config("stingy=0");

	/* a reader may pull but not push: refused, once renewed, named */
	r = open_client(token, reader, 0);
	CHECK_OK(nv_registry_manifest_get(r, repo, "v1", &m, &err));
	nv_registry_manifest_free(&m);
	CHECK(nv_registry_manifest_put(r, repo, "v3", NV_OCI_MT_MANIFEST,
				       im.manifest, strlen(im.manifest), d,
				       &err) == NV_EREFUSED);
	CHECK(strstr(err.message, "insufficient_scope") != NULL);
	CHECK(strstr(err.hint, "rights") != NULL);
	CHECK(nv_registry_stats_get(r)->token_requests == 3);
	nv_registry_free(r);

	/* anonymous: pull works (the service grants pull), push does not */
	r = open_client(token, NULL, 0);
	CHECK_OK(nv_registry_manifest_get(r, repo, "v1", &m, &err));
	nv_registry_manifest_free(&m);
	CHECK(nv_registry_manifest_put(r, repo, "v3", NV_OCI_MT_MANIFEST,
				       im.manifest, strlen(im.manifest), d,
				       &err) == NV_EREFUSED);
	nv_registry_free(r);

	/* a wrong password: the token service refuses */
	r = open_client(token, bad, 0);
	CHECK(nv_registry_manifest_get(r, repo, "v1", &m, &err) == NV_EREFUSED);
	CHECK(strstr(err.message, "token service") != NULL);
	CHECK(strstr(err.message, "nope-nope") == NULL);
	nv_registry_free(r);

	nv_secret_free(pusher);
	nv_secret_free(reader);
	nv_secret_free(bad);
}

struct server {
	pid_t pid;
	int port;
};

static int server_start(struct server *s, const char *script)
{
	char line[32];
	size_t used = 0;
	int fds[2];

	s->pid = -1;
	s->port = 0;
	if (pipe(fds))
		return -1;
	s->pid = fork();
	if (s->pid < 0)
		return -1;
	if (s->pid == 0) {
#if defined(__linux__)
		prctl(PR_SET_PDEATHSIG, SIGTERM);
#endif
		dup2(fds[1], 1);
		close(fds[0]);
		close(fds[1]);
		execlp("python3", "python3", script, (char *)NULL);
		_exit(127);
	}
	close(fds[1]);
	while (used < sizeof(line) - 1) {
		struct pollfd p = {.fd = fds[0], .events = POLLIN};

		if (poll(&p, 1, 15000) <= 0 ||
		    read(fds[0], line + used, 1) <= 0 || line[used] == '\n')
			break;
		used++;
	}
	line[used] = '\0';
	close(fds[0]);
	s->port = atoi(line);
	return s->port > 0 ? 0 : -1;
}

static void test_lying(void)
{
	char script[600], host[64], log_url[128];
	const char *data = getenv("NAVETTE_TEST_DATA");
	nv_secret *cred = make_basic("someone", "secret-for-the-registry");
	nv_registry_manifest m;
	nv_registry_config cfg;
	struct server s;
	nv_registry *r;
	nv_buf buf;
	char d[72];
	nv_err err;
	const char *zero = "sha256:"
			   "00000000000000000000000000000000"
			   "00000000000000000000000000000000";

	snprintf(script, sizeof(script), "%s/image/lying_registry.py",
		 data ? data : "tests/data");
	if (server_start(&s, script)) {
		CHECK(0);
		return;
	}
	snprintf(host, sizeof(host), "127.0.0.1:%d", s.port);
	snprintf(log_url, sizeof(log_url), "http://%s/_log", host);
	r = open_client(host, NULL, 0);

	CHECK(nv_registry_manifest_get(r, "wrong-header", "t", &m, &err) ==
	      NV_EREFUSED);
	CHECK(strstr(err.message, "Docker-Content-Digest") != NULL);
	CHECK(nv_registry_manifest_get(r, "wrong-bytes", zero, &m, &err) ==
	      NV_EREFUSED);
	CHECK(strstr(err.message, "not the digest asked for") != NULL);
	CHECK(nv_registry_blob_get(r, "wrong-bytes", zero, 4096, &buf, &err) ==
	      NV_EREFUSED);
	CHECK(nv_registry_manifest_put(r, "rewrite", "t", NV_OCI_MT_MANIFEST,
				       "{}", 2, d, &err) == NV_EREFUSED);
	CHECK(strstr(err.message, "answered digest") != NULL);
	nv_registry_free(r);

	/* a token realm on another host: asked without the credential */
	memset(&cfg, 0, sizeof(cfg));
	cfg.registry = host;
	cfg.credential = cred;
	CHECK_OK(nv_registry_open(&r, &cfg, &err));
	CHECK_OK(nv_registry_manifest_get(r, "elsewhere", "t", &m, &err));
	nv_registry_manifest_free(&m);
	CHECK(count_lines(log_url, "GET /token?") == 1);
	CHECK(count_lines(log_url, "auth=Basic") == 0);
	CHECK(count_lines(log_url,
			  "GET /v2/elsewhere/manifests/t auth=Bearer") == 1);
	nv_registry_free(r);
	nv_secret_free(cred);
	kill(s.pid, SIGTERM);
	waitpid(s.pid, NULL, 0);
}

int main(void)
{
	char hex[16];
	nv_err err;

	if (load_env())
		return 1;
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/nv-test-registry-XXXXXX");
	if (!mkdtemp(tmpdir))
		return 2;
	if (nv_random_hex(hex, 4, &err))
		return 2;
	snprintf(suffix, sizeof(suffix), "%s", hex);

	test_plain();
	test_basic();
	test_token();
	test_lying();

	sh("rm -rf '%s'", tmpdir);
	return nv_test_done();
}
