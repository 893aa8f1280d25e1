/* Kubeconfig loading and exec plugins (host/k8s/k8s_kubeconfig.c,
 * k8s_exec.c): kubectl's merge order over several files, -data and file
 * forms, relative and ~ paths, every refusal, aliases, the in-cluster
 * files, KUBERNETES_EXEC_INFO against the vector, ExecCredential v1 and
 * v1beta1, and real plugins (small shell scripts written here). Every
 * file is written into a temporary folder by the test; no certificate is
 * parsed by this code, so the PEM texts are stand-ins. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "core/fsutil.h"
#include "k8s/k8s_exec.h"
#include "k8s/k8s_kubeconfig.h"
#include "nv_test.h"

static char tmp[256];

static void put(const char *name, const char *text)
{
	char path[512];
	FILE *f;
	snprintf(path, sizeof(path), "%s/%s", tmp, name);
	f = fopen(path, "w");
	if (!f) {
		perror(path);
		exit(1);
	}
	fputs(text, f);
	fclose(f);
}

static const char *at(const char *name)
{
	static char paths[8][512];
	static int i;
	char *p = paths[i++ % 8];
	snprintf(p, 512, "%s/%s", tmp, name);
	return p;
}

static const char *secret_text(const nv_secret *s, const char *field)
{
	const nv_secret_field *f = s ? nv_secret_get(s, field) : NULL;
	return f ? (const char *)f->value : NULL;
}

/* base64 of "CA-PEM\n" and of "KEY\n" */
#define CA_B64  "Q0EtUEVNCg=="
#define KEY_B64 "S0VZCg=="

static const char *const base_cfg =
	"apiVersion: v1\n"
	"kind: Config\n"
	"current-context: a\n"
	"clusters:\n"
	"- name: c1\n"
	"  cluster:\n"
	"    server: https://one.example:6443\n"
	"    certificate-authority-data: " CA_B64 "\n"
	"- name: cfile\n"
	"  cluster:\n"
	"    server: https://file.example\n"
	"    certificate-authority: certs/ca.crt\n"
	"contexts:\n"
	"- name: a\n"
	"  context: {cluster: c1, user: u-token, namespace: team-a}\n"
	"- name: b\n"
	"  context: {cluster: cfile, user: u-cert}\n"
	"- name: tf\n"
	"  context: {cluster: c1, user: u-tokenfile}\n"
	"- name: home\n"
	"  context: {cluster: c1, user: u-home}\n"
	"- name: certdata\n"
	"  context: {cluster: c1, user: u-certdata}\n"
	"users:\n"
	"- name: u-token\n"
	"  user:\n"
	"    token: tok-from-first\n"
	"- name: u-cert\n"
	"  user:\n"
	"    client-certificate: certs/client.crt\n"
	"    client-key: certs/client.key\n"
	"- name: u-certdata\n"
	"  user:\n"
	"    client-certificate-data: " CA_B64 "\n"
	"    client-key-data: " KEY_B64 "\n"
	"- name: u-tokenfile\n"
	"  user:\n"
	"    tokenFile: tok.txt\n"
	"- name: u-home\n"
	"  user:\n"
	"    tokenFile: ~/home-token\n";

static void test_forms(void)
{
	const char *paths[1];
	nv_k8s_target t;
	nv_err err;
	char dir[300];

	snprintf(dir, sizeof(dir), "%s/certs", tmp);
	mkdir(dir, 0700);
	put("certs/ca.crt", "FILE-CA\n");
	put("certs/client.crt", "FILE-CERT\n");
	put("certs/client.key", "FILE-KEY\n");
	put("base.yaml", base_cfg);
	paths[0] = at("base.yaml");

	/* current-context, -data forms, token */
	CHECK(nv_k8s_kubeconfig_load(paths, 1, NULL, &t, &err) == 0);
	CHECK_STR(t.context, "a");
	CHECK_STR(t.server, "https://one.example:6443");
	CHECK_STR(t.namespace_, "team-a");
	CHECK(t.ca_pem && t.ca_pem_len == 7 &&
	      memcmp(t.ca_pem, "CA-PEM\n", 7) == 0);
	CHECK(t.auth == NV_K8S_AUTH_TOKEN);
	CHECK_STR(secret_text(t.token, "token"), "tok-from-first");
	nv_k8s_target_free(&t);

	/* file forms, relative to the kubeconfig's folder */
	CHECK(nv_k8s_kubeconfig_load(paths, 1, "b", &t, &err) == 0);
	CHECK(t.ca_pem && strcmp(t.ca_pem, "FILE-CA\n") == 0);
	CHECK(t.auth == NV_K8S_AUTH_CLIENT_CERT);
	CHECK(t.client_cert_pem &&
	      strcmp(t.client_cert_pem, "FILE-CERT\n") == 0);
	CHECK_STR(secret_text(t.client_key, "key"), "FILE-KEY\n");
	CHECK_STR(t.namespace_, "default");
	nv_k8s_target_free(&t);

	CHECK(nv_k8s_kubeconfig_load(paths, 1, "certdata", &t, &err) == 0);
	CHECK(t.client_cert_pem && strcmp(t.client_cert_pem, "CA-PEM\n") == 0);
	CHECK_STR(secret_text(t.client_key, "key"), "KEY\n");
	nv_k8s_target_free(&t);

	/* tokenFile: made absolute, read by nv_k8s_token_file_read */
	CHECK(nv_k8s_kubeconfig_load(paths, 1, "tf", &t, &err) == 0);
	CHECK(t.auth == NV_K8S_AUTH_TOKEN_FILE);
	CHECK_STR(t.token_file, at("tok.txt"));
	put("tok.txt", "file-token\n");
	{
		nv_secret *s = NULL;
		CHECK(nv_k8s_token_file_read(t.token_file, "x", &s, &err) == 0);
		CHECK_STR(secret_text(s, "token"), "file-token");
		nv_secret_free(s);
	}
	nv_k8s_target_free(&t);

	/* ~ is $HOME */
	{
		char *old = getenv("HOME") ? strdup(getenv("HOME")) : NULL;
		char want[600];
		setenv("HOME", "/home/someone", 1);
		CHECK(nv_k8s_kubeconfig_load(paths, 1, "home", &t, &err) == 0);
		snprintf(want, sizeof(want), "/home/someone/home-token");
		CHECK_STR(t.token_file, want);
		nv_k8s_target_free(&t);
		if (old)
			setenv("HOME", old, 1);
		else
			unsetenv("HOME");
		free(old);
	}

	/* -data wins over the file form (which is then not even read) */
	put("both.yaml",
	    "current-context: m\n"
	    "clusters: [{name: c, cluster: {server: https://x, "
	    "certificate-authority: nope/ca.crt, "
	    "certificate-authority-data: " CA_B64 "}}]\n"
	    "contexts: [{name: m, context: {cluster: c, user: u}}]\n"
	    "users: [{name: u}]\n");
	paths[0] = at("both.yaml");
	CHECK(nv_k8s_kubeconfig_load(paths, 1, NULL, &t, &err) == 0);
	CHECK(t.ca_pem && strcmp(t.ca_pem, "CA-PEM\n") == 0);
	CHECK(t.auth == NV_K8S_AUTH_NONE && t.token == NULL);
	nv_k8s_target_free(&t);

	/* a missing referenced file */
	put("missing.yaml",
	    "current-context: m\n"
	    "clusters: [{name: c, cluster: {server: https://x, "
	    "certificate-authority: nope/ca.crt}}]\n"
	    "contexts: [{name: m, context: {cluster: c, user: u}}]\n"
	    "users: [{name: u, user: {token: t}}]\n");
	paths[0] = at("missing.yaml");
	CHECK(nv_k8s_kubeconfig_load(paths, 1, NULL, &t, &err) == NV_ENOTFOUND);
	CHECK(strstr(err.message, "nope/ca.crt") != NULL);
	CHECK(err.hint[0] != '\0');
}

static void test_merge(void)
{
	const char *paths[4];
	nv_k8s_target t;
	nv_k8s_context_info *ctx = NULL;
	size_t n = 0;
	nv_err err;

	/* first file: current-context unset, user u-token redefined */
	put("m1.yaml", "users:\n"
		       "- name: u-token\n"
		       "  user: {token: tok-from-m1}\n"
		       "contexts:\n"
		       "- name: only-m1\n"
		       "  context: {cluster: c1, user: u-token}\n");
	/* second file: sets current-context and redefines context a */
	put("m2.yaml", "current-context: only-m1\n"
		       "contexts:\n"
		       "- name: a\n"
		       "  context: {cluster: c1, user: u-token, namespace: "
		       "from-m2}\n");
	paths[0] = at("m1.yaml");
	paths[1] = at("nonexistent.yaml"); /* skipped, as kubectl does */
	paths[2] = at("m2.yaml");
	paths[3] = at("base.yaml");

	CHECK(nv_k8s_kubeconfig_load(paths, 4, NULL, &t, &err) == 0);
	CHECK_STR(t.context, "only-m1"); /* m2's, base's comes later */
	CHECK_STR(secret_text(t.token, "token"), "tok-from-m1");
	CHECK_STR(t.server, "https://one.example:6443"); /* from base */
	nv_k8s_target_free(&t);

	CHECK(nv_k8s_kubeconfig_load(paths, 4, "a", &t, &err) == 0);
	CHECK_STR(t.namespace_, "from-m2");
	nv_k8s_target_free(&t);

	/* the other order: base first wins everything it names */
	paths[0] = at("base.yaml");
	paths[3] = at("m1.yaml");
	CHECK(nv_k8s_kubeconfig_load(paths, 4, NULL, &t, &err) == 0);
	CHECK_STR(t.context, "a");
	CHECK_STR(t.namespace_, "team-a");
	CHECK_STR(secret_text(t.token, "token"), "tok-from-first");
	nv_k8s_target_free(&t);

	CHECK(nv_k8s_kubeconfig_contexts(paths, 4, &ctx, &n, &err) == 0);
	CHECK(n == 6);
	if (n == 6) {
		CHECK_STR(ctx[0].name, "a");
		CHECK(ctx[0].current);
		CHECK_STR(ctx[0].namespace_, "team-a");
		CHECK_STR(ctx[0].server, "https://one.example:6443");
		CHECK_STR(ctx[1].name, "b");
		CHECK_STR(ctx[1].cluster, "cfile");
		CHECK_STR(ctx[1].server, "https://file.example");
		CHECK_STR(ctx[1].user, "u-cert");
		CHECK(!ctx[1].current);
		CHECK_STR(ctx[5].name, "only-m1");
	}
	free(ctx);

	/* no file at all */
	paths[0] = at("nonexistent.yaml");
	CHECK(nv_k8s_kubeconfig_load(paths, 1, NULL, &t, &err) == NV_ENOTFOUND);
	CHECK(strstr(err.hint, "KUBECONFIG") != NULL);
}

/* One kubeconfig with the given cluster and user bodies (flow maps). */
static int load_one(const char *cluster, const char *user, const char *ctx,
		    nv_k8s_target *t, nv_err *err)
{
	char text[4096];
	snprintf(text, sizeof(text),
		 "current-context: x\n"
		 "clusters: [{name: c, cluster: %s}]\n"
		 "contexts: [{name: x, context: %s}]\n"
		 "users: [{name: u, user: %s}]\n",
		 cluster, ctx ? ctx : "{cluster: c, user: u}", user);
	return nv_k8s_kubeconfig_load_text(text, strlen(text), tmp, "test.yaml",
					   NULL, t, err);
}

#define GOOD_CLUSTER "{server: 'https://k:6443'}"
#define GOOD_USER    "{token: t}"

static void refused(const char *cluster, const char *user, const char *ctx,
		    int code, const char *in_message)
{
	nv_k8s_target t;
	nv_err err;
	int rc = load_one(cluster, user, ctx, &t, &err);
	CHECK(rc == code);
	if (rc != code || !strstr(err.message, in_message) || !err.hint[0])
		fprintf(stderr, "  refusal of %s / %s: %d %s (hint: %s)\n",
			cluster, user, rc, err.message, err.hint);
	CHECK(strstr(err.message, in_message) != NULL);
	CHECK(err.hint[0] != '\0');
	CHECK(t.token == NULL && t.ca_pem == NULL);
}

static void test_refusals(void)
{
	nv_k8s_target t;
	nv_err err;

	CHECK(load_one(GOOD_CLUSTER, GOOD_USER, NULL, &t, &err) == 0);
	nv_k8s_target_free(&t);

	refused("{server: 'https://k', insecure-skip-tls-verify: true}",
		GOOD_USER, NULL, NV_EREFUSED, "insecure-skip-tls-verify");
	refused("{server: 'https://k', tls-server-name: k2}", GOOD_USER, NULL,
		NV_EREFUSED, "tls-server-name");
	refused("{server: 'https://k', proxy-url: 'http://p:3128'}", GOOD_USER,
		NULL, NV_EREFUSED, "proxy-url");
	refused("{server: 'http://k:8080'}", GOOD_USER, NULL, NV_EREFUSED,
		"not https");
	refused("{certificate-authority-data: " CA_B64 "}", GOOD_USER, NULL,
		NV_EINVAL, "no server");
	refused(GOOD_CLUSTER, "{auth-provider: {name: gcp}}", NULL, NV_EREFUSED,
		"auth-provider");
	refused(GOOD_CLUSTER, "{username: a, password: b}", NULL, NV_EREFUSED,
		"username/password");
	refused(GOOD_CLUSTER, "{password: b}", NULL, NV_EREFUSED,
		"username/password");
	refused(GOOD_CLUSTER,
		"{exec: {apiVersion: " NV_K8S_EXEC_V1
		", command: p, interactiveMode: Always}}",
		NULL, NV_EREFUSED, "interactiveMode: Always");
	refused(GOOD_CLUSTER,
		"{exec: {apiVersion: client.authentication.k8s.io/v1alpha1, "
		"command: p}}",
		NULL, NV_EREFUSED, "v1alpha1");
	refused(GOOD_CLUSTER,
		"{token: t, exec: {apiVersion: " NV_K8S_EXEC_V1
		", command: p}}",
		NULL, NV_EREFUSED, "more than one kind");
	refused(GOOD_CLUSTER, "{client-certificate-data: " CA_B64 "}", NULL,
		NV_EINVAL, "without its key");
	refused(GOOD_CLUSTER, "{client-key-data: '!!notbase64'}", NULL,
		NV_EINVAL, "not base64");
	refused(GOOD_CLUSTER, GOOD_USER, "{cluster: nope, user: u}",
		NV_ENOTFOUND, "no cluster nope");
	refused(GOOD_CLUSTER, GOOD_USER, "{cluster: c, user: nobody}",
		NV_ENOTFOUND, "no user nobody");
	refused(GOOD_CLUSTER, GOOD_USER, "{cluster: c}", NV_ENOTFOUND,
		"no user");

	/* a context that is not there, and no current-context */
	{
		const char *text = "contexts: [{name: x, context: {cluster: c, "
				   "user: u}}]\n";
		CHECK(nv_k8s_kubeconfig_load_text(text, strlen(text), tmp, "t",
						  "y", &t,
						  &err) == NV_ENOTFOUND);
		CHECK(strstr(err.message, "no context y") != NULL);
		CHECK(nv_k8s_kubeconfig_load_text(text, strlen(text), tmp, "t",
						  NULL, &t,
						  &err) == NV_ENOTFOUND);
		CHECK(strstr(err.message, "current-context") != NULL);
	}
}

static void test_hostile_yaml(void)
{
	nv_k8s_target t;
	nv_err err;
	char *deep, *big;
	size_t n = 0;

	/* billion laughs: refused at the first alias */
	const char *laughs = "a: &a [lol, lol, lol, lol, lol, lol, lol, lol]\n"
			     "b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\n"
			     "c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]\n"
			     "d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c]\n"
			     "current-context: *d\n";
	CHECK(nv_k8s_kubeconfig_load_text(laughs, strlen(laughs), tmp, "t",
					  NULL, &t, &err) == NV_EREFUSED);
	CHECK(strstr(err.message, "aliases") != NULL);

	/* nesting past the cap */
	deep = malloc(4096);
	for (int i = 0; i < 200; i++)
		deep[n++] = '[';
	deep[n] = '\0';
	CHECK(nv_k8s_kubeconfig_load_text(deep, n, tmp, "t", NULL, &t, &err) ==
	      NV_EINVAL);
	CHECK(strstr(err.message, "nested deeper") != NULL);
	free(deep);

	/* too many values */
	big = malloc(400000);
	n = (size_t)snprintf(big, 400000, "x: [");
	for (int i = 0; i < NV_K8S_KUBECONFIG_NODES_MAX + 10; i++)
		n += (size_t)snprintf(big + n, 400000 - n, "1,");
	n += (size_t)snprintf(big + n, 400000 - n, "1]\n");
	CHECK(nv_k8s_kubeconfig_load_text(big, n, tmp, "t", NULL, &t, &err) ==
	      NV_EINVAL);
	CHECK(strstr(err.message, "more than") != NULL);
	free(big);

	/* a file over 1 MiB */
	{
		FILE *f = fopen(at("huge.yaml"), "w");
		const char *paths[1] = {at("huge.yaml")};
		for (int i = 0; i < 70000; i++)
			fputs("# padding padding\n", f);
		fclose(f);
		CHECK(nv_k8s_kubeconfig_load(paths, 1, NULL, &t, &err) ==
		      NV_EINVAL);
		CHECK(strstr(err.message, "larger than") != NULL);
	}

	/* not YAML, not a map */
	CHECK(nv_k8s_kubeconfig_load_text("a: [", 4, tmp, "t", NULL, &t,
					  &err) == NV_EINVAL);
	CHECK(nv_k8s_kubeconfig_load_text("- a\n", 4, tmp, "t", NULL, &t,
					  &err) == NV_EINVAL);
	CHECK(nv_k8s_kubeconfig_load_text("clusters: 3\n", 12, tmp, "t", NULL,
					  &t, &err) == NV_EINVAL);
}

static void test_in_cluster(void)
{
	char root[300];
	nv_k8s_target t;
	nv_err err;

	snprintf(root, sizeof(root), "%s/sa", tmp);
	mkdir(root, 0700);
	put("sa/token", "sa-token\n");
	put("sa/ca.crt", "SA-CA\n");
	put("sa/namespace", "jobs-ns");
	unsetenv("KUBERNETES_SERVICE_HOST");
	CHECK(nv_k8s_in_cluster_load(root, &t, &err) == NV_ENOTFOUND);
	CHECK(strstr(err.message, "not in a pod") != NULL);
	setenv("KUBERNETES_SERVICE_HOST", "10.0.0.1", 1);
	setenv("KUBERNETES_SERVICE_PORT", "443", 1);
	CHECK(nv_k8s_in_cluster_load(root, &t, &err) == 0);
	CHECK_STR(t.server, "https://10.0.0.1:443");
	CHECK_STR(t.namespace_, "jobs-ns");
	CHECK(t.ca_pem && strcmp(t.ca_pem, "SA-CA\n") == 0);
	CHECK_STR(secret_text(t.token, "token"), "sa-token");
	CHECK(t.auth == NV_K8S_AUTH_TOKEN_FILE);
	nv_k8s_target_free(&t);
	setenv("KUBERNETES_SERVICE_HOST", "fd00::1", 1);
	CHECK(nv_k8s_in_cluster_load(root, &t, &err) == 0);
	CHECK_STR(t.server, "https://[fd00::1]:443");
	nv_k8s_target_free(&t);
	unlink(at("sa/token"));
	CHECK(nv_k8s_in_cluster_load(root, &t, &err) != 0);
	CHECK(t.ca_pem == NULL);
	unsetenv("KUBERNETES_SERVICE_HOST");
	unsetenv("KUBERNETES_SERVICE_PORT");
}

static char *read_data(const char *name, size_t *len)
{
	char path[1024], *text = NULL;
	const char *dir = getenv("NAVETTE_TEST_DATA");
	nv_err err;
	snprintf(path, sizeof(path), "%s/k8s/responses/%s",
		 dir ? dir : "tests/data", name);
	if (nv_read_file(&text, len, path, 1 << 20, &err) != 0)
		fprintf(stderr, "%s\n", err.message);
	return text;
}

static void test_exec_parse(void)
{
	nv_k8s_credential c;
	nv_err err;
	size_t len;
	char *v1 = read_data("execcredential-v1-token.json", &len);
	char *b1;
	size_t blen;
	double t2030 = 1893456000; /* 2030-01-01T00:00:00Z */

	CHECK(v1 != NULL);
	b1 = read_data("execcredential-v1beta1-token.json", &blen);
	CHECK(b1 != NULL);
	if (!v1 || !b1)
		return;
	CHECK(nv_k8s_exec_parse(NV_K8S_EXEC_V1, "u", v1, len, 1e9, &c, &err) ==
	      0);
	CHECK_STR(secret_text(c.token, "token"), "my-bearer-token");
	CHECK(c.expires_at == t2030);
	nv_k8s_credential_free(&c);
	CHECK(nv_k8s_exec_parse(NV_K8S_EXEC_V1BETA1, "u", b1, blen, 1e9, &c,
				&err) == 0);
	CHECK_STR(secret_text(c.token, "token"), "my-bearer-token");
	CHECK(c.expires_at == t2030);
	nv_k8s_credential_free(&c);

	/* the apiVersion must be the one asked for */
	CHECK(nv_k8s_exec_parse(NV_K8S_EXEC_V1BETA1, "u", v1, len, 1e9, &c,
				&err) == NV_EREFUSED);
	CHECK(strstr(err.message, "navette asked for") != NULL);
	CHECK(c.token == NULL);
	/* expired on arrival */
	CHECK(nv_k8s_exec_parse(NV_K8S_EXEC_V1, "u", v1, len, t2030 + 1, &c,
				&err) == NV_EREFUSED);
	CHECK(strstr(err.message, "expired on arrival") != NULL);
	CHECK(c.token == NULL);
	free(v1);
	free(b1);

	/* not JSON, wrong kind, no credential, a certificate pair */
	CHECK(nv_k8s_exec_parse(NV_K8S_EXEC_V1, "u", "oops", 4, 0, &c, &err) ==
	      NV_EREFUSED);
	CHECK(strstr(err.message, "not JSON") != NULL);
	{
		const char *k = "{\"apiVersion\":\"" NV_K8S_EXEC_V1
				"\",\"kind\":\"Status\",\"status\":{}}";
		CHECK(nv_k8s_exec_parse(NV_K8S_EXEC_V1, "u", k, strlen(k), 0,
					&c, &err) == NV_EREFUSED);
		CHECK(strstr(err.message, "not an ExecCredential") != NULL);
	}
	{
		const char *k = "{\"apiVersion\":\"" NV_K8S_EXEC_V1
				"\",\"kind\":\"ExecCredential\",\"status\":{}}";
		CHECK(nv_k8s_exec_parse(NV_K8S_EXEC_V1, "u", k, strlen(k), 0,
					&c, &err) == NV_EREFUSED);
		CHECK(strstr(err.message, "no status.token") != NULL);
	}
	{
		const char *k =
			"{\"apiVersion\":\"" NV_K8S_EXEC_V1
			"\",\"kind\":\"ExecCredential\",\"status\":{"
			"\"clientCertificateData\":\"CERT\","
			"\"clientKeyData\":\"KEY\","
			"\"expirationTimestamp\":\"2030-01-01T02:00:00+02:00\""
			"}}";
		CHECK(nv_k8s_exec_parse(NV_K8S_EXEC_V1, "u", k, strlen(k), 0,
					&c, &err) == 0);
		CHECK(c.client_cert_pem &&
		      strcmp(c.client_cert_pem, "CERT") == 0);
		CHECK_STR(secret_text(c.client_key, "key"), "KEY");
		CHECK(c.expires_at == t2030);
		nv_k8s_credential_free(&c);
	}
	CHECK(nv_k8s_parse_rfc3339("2030-01-01T00:00:00.5Z") == t2030 + 0.5);
	CHECK(nv_k8s_parse_rfc3339("2030-01-01 00:00:00Z") < 0);
	CHECK(nv_k8s_parse_rfc3339("2030-01-01T00:00:00") < 0);
}

static void test_exec_info(void)
{
	nv_k8s_target t;
	nv_err err;
	char *info = NULL, *want;
	size_t len;
	cJSON *a, *b, *cluster;

	CHECK(load_one("{server: 'https://k:6443', "
		       "certificate-authority-data: " CA_B64 "}",
		       "{exec: {apiVersion: " NV_K8S_EXEC_V1 ", command: p}}",
		       NULL, &t, &err) == 0);
	CHECK(nv_k8s_exec_info(&t, &info, &err) == 0);
	want = read_data("exec-info-v1-input.json", &len);
	a = cJSON_Parse(info);
	b = want ? cJSON_Parse(want) : NULL;
	CHECK(a && b && cJSON_Compare(a, b, 1));
	cJSON_Delete(a);
	cJSON_Delete(b);
	free(info);
	free(want);
	/* provideClusterInfo adds the server and the CA */
	t.exec.provide_cluster_info = 1;
	CHECK(nv_k8s_exec_info(&t, &info, &err) == 0);
	a = cJSON_Parse(info);
	cluster =
		cJSON_GetObjectItem(cJSON_GetObjectItem(a, "spec"), "cluster");
	CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(cluster, "server")),
		  "https://k:6443");
	CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(
			  cluster, "certificate-authority-data")),
		  CA_B64);
	cJSON_Delete(a);
	free(info);
	nv_k8s_target_free(&t);
}

/* Writes an executable plugin script called name. */
static void plugin(const char *name, const char *body)
{
	char text[4096];
	snprintf(text, sizeof(text), "#!/bin/sh\n%s", body);
	put(name, text);
	chmod(at(name), 0700);
}

static int exec_user(const char *command, const char *extra, nv_k8s_target *t,
		     nv_err *err)
{
	char user[2048];
	snprintf(user, sizeof(user),
		 "{exec: {apiVersion: " NV_K8S_EXEC_V1 ", command: '%s'%s}}",
		 command, extra ? extra : "");
	return load_one(
		"{server: 'https://k:6443', certificate-authority-data: " CA_B64
		"}",
		user, NULL, t, err);
}

static void test_exec_run(void)
{
	nv_k8s_target t;
	nv_k8s_credential c;
	nv_err err;
	double now = (double)time(NULL);

	/* a plugin that checks its env and args, and echoes the info */
	plugin("ok.sh", "[ \"$1\" = get-token ] || exit 9\n"
			"[ \"$2\" = 'two words' ] || exit 10\n"
			"[ \"$TEAM\" = blue ] || exit 11\n"
			"[ -t 0 ] && exit 12\n"
			"printf '%s' \"$KUBERNETES_EXEC_INFO\" > \"$0.info\"\n"
			"cat <<EOF\n"
			"{\"apiVersion\":\"client.authentication.k8s.io/v1\","
			"\"kind\":\"ExecCredential\","
			"\"status\":{\"token\":\"plugin-token\","
			"\"expirationTimestamp\":\"2099-01-01T00:00:00Z\"}}\n"
			"EOF\n");
	/* relative command: from the kubeconfig's folder */
	CHECK(exec_user("./ok.sh",
			", args: [get-token, 'two words'], env: [{name: TEAM, "
			"value: blue}], provideClusterInfo: true",
			&t, &err) == 0);
	CHECK_STR(t.exec.command, at("./ok.sh"));
	CHECK(nv_k8s_exec_run(&t, now, 10, &c, &err) == 0);
	if (c.token == NULL)
		fprintf(stderr, "  exec: %s\n", err.message);
	CHECK_STR(secret_text(c.token, "token"), "plugin-token");
	CHECK(c.expires_at == 4070908800.0);
	nv_k8s_credential_free(&c);
	{
		char *info = NULL;
		size_t len;
		nv_err e2;
		CHECK(nv_read_file(&info, &len, at("ok.sh.info"), 4096, &e2) ==
		      0);
		CHECK(info && strstr(info, "\"cluster\":{\"server\":"
					   "\"https://k:6443\"") != NULL);
		CHECK(info && strstr(info, "\"interactive\":false") != NULL);
		free(info);
	}
	nv_k8s_target_free(&t);

	/* failure: the exit status and the last stderr line */
	plugin("fail.sh", "echo 'starting' >&2\n"
			  "echo 'error: you must be logged in' >&2\n"
			  "exit 3\n");
	CHECK(exec_user(at("fail.sh"), NULL, &t, &err) == 0);
	CHECK(nv_k8s_exec_run(&t, now, 10, &c, &err) == NV_EREFUSED);
	CHECK(strstr(err.message, "status 3") != NULL);
	CHECK(strstr(err.message, "you must be logged in") != NULL);
	CHECK(strstr(err.message, "starting") == NULL);
	nv_k8s_target_free(&t);

	/* not found */
	CHECK(exec_user("no-such-plugin-navette", NULL, &t, &err) == 0);
	CHECK(nv_k8s_exec_run(&t, now, 10, &c, &err) == NV_ENOTFOUND);
	CHECK(strstr(err.message, "not found") != NULL);
	nv_k8s_target_free(&t);

	/* not JSON */
	plugin("text.sh", "echo hello\n");
	CHECK(exec_user(at("text.sh"), NULL, &t, &err) == 0);
	CHECK(nv_k8s_exec_run(&t, now, 10, &c, &err) == NV_EREFUSED);
	CHECK(strstr(err.message, "not JSON") != NULL);
	nv_k8s_target_free(&t);

	/* a plugin that hangs is killed at the time limit */
	plugin("hang.sh", "sleep 30\n");
	CHECK(exec_user(at("hang.sh"), NULL, &t, &err) == 0);
	{
		time_t t0 = time(NULL);
		CHECK(nv_k8s_exec_run(&t, now, 1, &c, &err) == NV_EREFUSED);
		CHECK(strstr(err.message, "did not finish") != NULL);
		CHECK(time(NULL) - t0 < 10);
	}
	nv_k8s_target_free(&t);
}

int main(void)
{
	char cmd[300];
	snprintf(tmp, sizeof(tmp), "%s/nv-k8s-kubeconfig-XXXXXX",
		 getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	if (!mkdtemp(tmp)) {
		perror("mkdtemp");
		return 1;
	}
	test_forms();
	test_merge();
	test_refusals();
	test_hostile_yaml();
	test_in_cluster();
	test_exec_parse();
	test_exec_info();
	test_exec_run();
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmp);
	if (system(cmd) != 0)
		fprintf(stderr, "cannot remove %s\n", tmp);
	return nv_test_done();
}
