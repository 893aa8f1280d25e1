/* Unit tests of host/creds/scan.c: each rule on planted secrets in a real
 * commit (path, line and rule checked), a clean repository full of
 * look-alikes that must yield nothing, the allow-list, the commit-not-folder
 * rule, the size, binary, findings and depth bounds, and the plain-folder
 * walk. The planted secrets are assembled from pieces so that this file does
 * not itself hold anything the scanner (or a forge's push protection) would
 * flag. */
#include "creds/scan.h"

#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "creds/token_shapes.h"
#include "nv_test.h"
#include "token_samples.h"

/* Planted values, split so that this file holds none of them whole. */
/* clang-format off */
#define PEM_BEGIN(kind) "-----BEGIN " kind "PRIVATE" " KEY-----"
#define PEM_END(kind)   "-----END " kind "PRIVATE" " KEY-----"
#define PGP_BEGIN       "-----BEGIN PGP PRIVATE" " KEY BLOCK-----"
#define KEY_BODY \
	"MIIEowIBAAKCAQEA7x9Zq2Kp1vB3nT8wYc4LmR6sD0fH5jUaGiXoNbVeWlQtPyCz\n" \
	"Hq3Lw9Zk2Xv7Bn4Mc8Rt1Yp5Jd0Gf6Sa3Ue9Ki2Oh7Wl4Nx1Qb8Vc5Tz0Ey3Rm6\n"
#define AWS_ID     "AKIA" "Q3N7XK2P9RT4WVZB"
#define AWS_SECRET "kT9v/2Lq8Zx+" "Wm4Rn7Bp3Yc6" "Hd1Fg5Js0Ka8Ue2N"
#define GH_TOKEN   "gh" "p_aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3zA5"
#define GL_TOKEN   "gl" "pat-Xk3LmN8pQ2rS5tV7wY9z"
#define API_TOKEN  "8f3kQ9zLx2Vb" "7Rt1Nw5Yc0Hd"
#define DB_PASS    "hunter2" "hunter2"
#define PW         "Zq8Lw3Xn5Rt7" "Yp9Kd2Jf"
/* clang-format on */

static char tmp[256];

#if defined(__GNUC__)
__attribute__((format(printf, 1, 2)))
#endif
static int
sh(const char *fmt, ...)
{
	char cmd[8192];
	va_list ap;
	int rc;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	rc = system(cmd);
	if (rc != 0)
		fprintf(stderr, "command failed (%d): %s\n", rc, cmd);
	return rc;
}

/* The commit id of HEAD in repo. */
static void head_of(const char *repo, char oid[41])
{
	char cmd[512];
	FILE *p;

	oid[0] = '\0';
	snprintf(cmd, sizeof(cmd), "git -C '%s' rev-parse HEAD", repo);
	p = popen(cmd, "r");
	if (!p)
		return;
	if (!fgets(oid, 41, p))
		oid[0] = '\0';
	pclose(p);
}

/* Writes len bytes to root/rel, creating the folders. */
static void put(const char *root, const char *rel, const char *data, size_t len)
{
	char path[1024], *slash;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	for (slash = strchr(path + strlen(root) + 1, '/'); slash;
	     slash = strchr(slash + 1, '/')) {
		*slash = '\0';
		mkdir(path, 0755);
		*slash = '/';
	}
	f = fopen(path, "wb");
	if (!f) {
		perror(path);
		exit(2);
	}
	if (len && fwrite(data, 1, len, f) != len) {
		perror(path);
		exit(2);
	}
	fclose(f);
}

static void put_text(const char *root, const char *rel, const char *text)
{
	put(root, rel, text, strlen(text));
}

static int git_init(const char *repo)
{
	return sh("git init -q '%s'", repo);
}

static int git_commit_all(const char *repo)
{
	return sh("cd '%s' && git add -A && git -c user.name=t "
		  "-c user.email=t@t commit -q -m test",
		  repo);
}

/* ---- collecting findings ------------------------------------------------ */

struct hit {
	char path[256];
	size_t line;
	char rule[32];
	char reason[256];
	char preview[32];
};

struct hits {
	struct hit h[160];
	size_t n;
	size_t stop_after; /* 0: never stop */
};

static int collect(const nv_scan_finding *f, void *payload)
{
	struct hits *hs = payload;

	if (hs->n < sizeof(hs->h) / sizeof(hs->h[0])) {
		struct hit *h = &hs->h[hs->n];

		snprintf(h->path, sizeof(h->path), "%s", f->path);
		h->line = f->line;
		snprintf(h->rule, sizeof(h->rule), "%s", f->rule);
		snprintf(h->reason, sizeof(h->reason), "%s", f->reason);
		snprintf(h->preview, sizeof(h->preview), "%s", f->preview);
	}
	hs->n++;
	if (hs->stop_after && hs->n >= hs->stop_after)
		return 7;
	return 0;
}

static const struct hit *find(const struct hits *hs, const char *path,
			      size_t line, const char *rule)
{
	size_t i;

	for (i = 0; i < hs->n && i < sizeof(hs->h) / sizeof(hs->h[0]); i++)
		if (strcmp(hs->h[i].path, path) == 0 && hs->h[i].line == line &&
		    strcmp(hs->h[i].rule, rule) == 0)
			return &hs->h[i];
	return NULL;
}

static void dump(const struct hits *hs)
{
	size_t i;

	for (i = 0; i < hs->n && i < sizeof(hs->h) / sizeof(hs->h[0]); i++)
		fprintf(stderr, "  finding %s:%zu %s (%s) [%s]\n",
			hs->h[i].path, hs->h[i].line, hs->h[i].rule,
			hs->h[i].reason, hs->h[i].preview);
}

/* No finding ever carries a secret value. */
static int leaks(const struct hits *hs)
{
	static const char *const secrets[] = {AWS_ID, AWS_SECRET, GH_TOKEN,
					      API_TOKEN, DB_PASS};
	size_t i, k;

	for (i = 0; i < hs->n && i < sizeof(hs->h) / sizeof(hs->h[0]); i++)
		for (k = 0; k < sizeof(secrets) / sizeof(secrets[0]); k++)
			if (strstr(hs->h[i].reason, secrets[k]) ||
			    strstr(hs->h[i].preview, secrets[k]))
				return 1;
	return 0;
}

/* ---- tests ----------------------------------------------------------------
 */

static void test_planted(void)
{
	char repo[512], oid[41];
	const struct hit *h;
	struct hits hs = {0};
	nv_scan_stats st = {0};
	nv_err err;
	int rc;

	snprintf(repo, sizeof(repo), "%s/planted", tmp);
	CHECK(git_init(repo) == 0);
	put_text(repo, "README.md", "# demo\n");
	put_text(repo, "deploy/key.pem",
		 PEM_BEGIN("RSA ") "\n" KEY_BODY PEM_END("RSA ") "\n");
	put_text(repo, ".env",
		 "# local settings\nDB_PASSWORD=" DB_PASS "\n"
		 "DB_HOST=localhost\n");
	put_text(repo, "config/aws.ini",
		 "[default]\nregion = eu-west-3\n"
		 "aws_access_key_id = " AWS_ID "\n"
		 "aws_secret_access_key = " AWS_SECRET "\n");
	put_text(repo, "src/settings.py",
		 "import os\n\napi_token = \"" API_TOKEN "\"\nDEBUG = False\n");
	put_text(repo, "home/.ssh/id_rsa",
		 PEM_BEGIN("OPENSSH ") "\n" KEY_BODY PEM_END("OPENSSH ") "\n");
	put_text(repo, "keys/id_ed25519", "not the usual format\n");
	put_text(repo, "ci/deploy.sh",
		 "#!/bin/sh\nexport GH_TOKEN=" GH_TOKEN "\ngit push\n");
	CHECK(git_commit_all(repo) == 0);
	head_of(repo, oid);

	rc = nv_scan_commit(repo, oid, collect, &hs, &st, &err);
	CHECK(rc == 0);
	CHECK(st.findings == 8);
	CHECK(hs.n == 8);
	CHECK(find(&hs, "deploy/key.pem", 1, "private-key") != NULL);
	CHECK(find(&hs, ".env", 2, "dotenv") != NULL);
	h = find(&hs, "config/aws.ini", 3, "aws-access-key-id");
	CHECK(h != NULL);
	if (h)
		CHECK_STR(h->preview, "AKIA\xe2\x80\xa6WVZB");
	CHECK(find(&hs, "config/aws.ini", 4, "aws-secret-access-key") != NULL);
	h = find(&hs, "src/settings.py", 3, "secret-assignment");
	CHECK(h != NULL);
	if (h) {
		CHECK_STR(h->preview, "8f3k\xe2\x80\xa6"
				      "c0Hd");
		CHECK(strstr(h->reason, "'api_token'") != NULL);
	}
	/* A key-named file holding a key: one finding, at the key. */
	CHECK(find(&hs, "home/.ssh/id_rsa", 1, "private-key") != NULL);
	CHECK(find(&hs, "home/.ssh/id_rsa", 0, "private-key-file") == NULL);
	CHECK(find(&hs, "keys/id_ed25519", 0, "private-key-file") != NULL);
	CHECK(find(&hs, "ci/deploy.sh", 2, "github-token") != NULL);
	CHECK(!leaks(&hs));
	if (hs.n != 8)
		dump(&hs);

	/* The commit is what counts: a secret added to the folder but not
	 * committed is not seen, and a committed secret removed from the
	 * folder still is. */
	put_text(repo, ".env.local", "SECRET_KEY=" API_TOKEN "\n");
	put_text(repo, "src/settings.py", "api_token = None\n");
	put_text(repo, "deploy/key.pem", "gone\n");
	memset(&hs, 0, sizeof(hs));
	rc = nv_scan_commit(repo, oid, collect, &hs, &st, &err);
	CHECK(rc == 0 && hs.n == 8);
	CHECK(find(&hs, "src/settings.py", 3, "secret-assignment") != NULL);
	CHECK(find(&hs, "deploy/key.pem", 1, "private-key") != NULL);
	CHECK(find(&hs, ".env.local", 1, "dotenv") == NULL);

	/* The folder walk sees the working folder instead. */
	memset(&hs, 0, sizeof(hs));
	rc = nv_scan_dir(repo, collect, &hs, &st, &err);
	CHECK(rc == 0);
	CHECK(find(&hs, ".env.local", 1, "dotenv") != NULL);
	CHECK(find(&hs, "src/settings.py", 3, "secret-assignment") == NULL);
	CHECK(find(&hs, "deploy/key.pem", 1, "private-key") == NULL);
	CHECK(find(&hs, "config/aws.ini", 3, "aws-access-key-id") != NULL);
	CHECK(hs.n == 7);
	CHECK(!leaks(&hs));

	/* A callback can stop the scan; its value comes back. */
	memset(&hs, 0, sizeof(hs));
	hs.stop_after = 2;
	rc = nv_scan_commit(repo, oid, collect, &hs, &st, &err);
	CHECK(rc == 7);
	CHECK(hs.n == 2);

	/* Errors. */
	rc = nv_scan_commit(repo, "HEAD", collect, &hs, &st, &err);
	CHECK(rc == NV_EINVAL);
	rc = nv_scan_commit(repo, "0123456789012345678901234567890123456789",
			    collect, &hs, &st, &err);
	CHECK(rc == NV_ENOTFOUND);
	rc = nv_scan_commit("/nonexistent/nv-scan", oid, collect, &hs, &st,
			    &err);
	CHECK(rc == NV_ENOTFOUND);
}

static void test_clean(void)
{
	char repo[512], oid[41], *big;
	struct hits hs = {0};
	nv_scan_stats st = {0};
	nv_err err;
	int rc;
	/* a binary file holding no token shape (test_binary: with one) */
	static const char binary[] =
		"\x7f"
		"ELF\0\0\0\0export GH_TOKEN=$GH_TOKEN "
		"gh"
		"p_EXAMPLEa1b2c3d4e5f6g7h8i9j0k1l2m3n4o5 " PEM_BEGIN("") "\n";

	snprintf(repo, sizeof(repo), "%s/clean", tmp);
	CHECK(git_init(repo) == 0);
	put_text(repo, "id_rsa.pub",
		 "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHr2xQ5kLmN8pV3wZ7yT1u "
		 "me@laptop\n");
	put_text(repo, ".env.example", "PASSWORD=changeme\nAPI_TOKEN=\n");
	put_text(repo, "src/versions.py",
		 "commit = \"3f786850e387550fdab836ed7e6dc881de23001b\"\n"
		 "sha256 = \"9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822c"
		 "d15d6c15b0f00a08\"\n"
		 "password = os.environ[\"X\"]\n"
		 "db_password = os.getenv(\"DB_PASSWORD_FOR_TESTS\")\n"
		 "request_id = \"123e4567-e89b-12d3-a456-426614174000\"\n"
		 "token = \"aaaaaaaaaaaaaaaaaaaa\"\n"
		 "session_token = \"abcdabcdabcdabcdabcd\"\n"
		 "base32 = [\"MZXW6" AWS_ID "\", \"" AWS_ID "7\"]\n"
		 "api_key = \"${API_KEY_FROM_VAULT_STORE}\"\n"
		 "tokenizer = AutoTokenizer.from_pretrained(\"bert-base\")\n"
		 "max_tokens = 4096\n"
		 "if password == \"" PW "\":\n"
		 "    pass\n");
	put_text(repo, "config/app.yaml",
		 "client_secret: <your-client-secret-here>\n"
		 "secret_name: prod/app/db\n"
		 "password: ${{ secrets.DB_PASSWORD }}\n"
		 "aws_access_key_id: AKIAIOSFODNN7EXAMPLE\n"
		 "note: set the token in your environment\n");
	put_text(repo, "src/pem.c",
		 "if (strstr(s, \"" PEM_BEGIN(
			 "RSA ") "\"))\n"
				 "\treturn parse_key(s);\n"
				 "/* ghp_ tokens are 40 characters */\n");
	put_text(repo, "docs/keys.md",
		 "Paste your key:\n\n```\n" PEM_BEGIN("RSA ") "\n(your key)\n"
							      "```\n");
	put_text(repo, "web/app.js",
		 "const token = process.env.GITHUB_TOKEN_V2;\n"
		 "// e.g. gh"
		 "p_EXAMPLEa1b2c3d4e5f6g7h8i9j0k1l2m3n4o5\n"
		 "// or gh"
		 "p_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\n");
	put_text(repo, "certs/ca.pem",
		 "-----BEGIN CERTIFICATE-----\n" KEY_BODY
		 "-----END CERTIFICATE-----\n");
	put(repo, "assets/blob.bin", binary, sizeof(binary) - 1);
	big = malloc(NV_SCAN_MAX_FILE_SIZE + 100);
	if (!big)
		exit(2);
	memset(big, 'a', NV_SCAN_MAX_FILE_SIZE + 100);
	memcpy(big, "export GH_TOKEN=" GH_TOKEN "\n",
	       strlen("export GH_TOKEN=" GH_TOKEN "\n"));
	put(repo, "data/big.txt", big, NV_SCAN_MAX_FILE_SIZE + 100);
	free(big);
	CHECK(git_commit_all(repo) == 0);
	head_of(repo, oid);

	rc = nv_scan_commit(repo, oid, collect, &hs, &st, &err);
	CHECK(rc == 0);
	CHECK(hs.n == 0);
	CHECK(st.findings == 0);
	CHECK(st.skipped_binary == 1);
	CHECK(st.skipped_large == 1);
	CHECK(st.files == 8);
	if (hs.n)
		dump(&hs);
}

static void test_allowlist(void)
{
	char repo[512], oid[41];
	struct hits hs = {0};
	nv_scan_allowlist *al = NULL;
	nv_scan_stats st = {0};
	nv_err err;
	int rc;
	static const char text[] =
		"# keys generated for the parser tests\n"
		"\n"
		"tests/fixtures/**   throwaway keys, never used anywhere\n"
		"deploy/*.pem\n"
		"/docs/example.env\tdocumentation sample\r\n"
		"vendor/   third-party test data\n";

	rc = nv_scan_allowlist_load(&al, text, strlen(text), collect, &hs, &st,
				    &err);
	CHECK(rc == 0 && al != NULL);
	CHECK(hs.n == 1);
	CHECK(find(&hs, NV_SCAN_ALLOW_FILE, 4, "allowlist") != NULL);
	CHECK_STR(nv_scan_allowlist_match(al, "tests/fixtures/a/b/k.pem"),
		  "throwaway keys, never used anywhere");
	CHECK(nv_scan_allowlist_match(al, "tests/fixtures") != NULL);
	CHECK(nv_scan_allowlist_match(al, "tests/other/k.pem") == NULL);
	CHECK(nv_scan_allowlist_match(al, "deploy/key.pem") == NULL);
	CHECK_STR(nv_scan_allowlist_match(al, "docs/example.env"),
		  "documentation sample");
	CHECK(nv_scan_allowlist_match(al, "x/docs/example.env") == NULL);
	CHECK(nv_scan_allowlist_match(al, "vendor/a/b/c") != NULL);
	nv_scan_allowlist_free(al);

	memset(&hs, 0, sizeof(hs));
	rc = nv_scan_allowlist_load(&al, "*.pem ok\n", 9, collect, &hs, &st,
				    &err);
	CHECK(rc == 0);
	CHECK(nv_scan_allowlist_match(al, "a.pem") != NULL);
	CHECK(nv_scan_allowlist_match(al, "d/a.pem") == NULL);
	nv_scan_allowlist_free(al);
	rc = nv_scan_allowlist_load(&al, "**/*.pem ok\n", 12, collect, &hs, &st,
				    &err);
	CHECK(rc == 0);
	CHECK(nv_scan_allowlist_match(al, "a.pem") != NULL);
	CHECK(nv_scan_allowlist_match(al, "d/e/a.pem") != NULL);
	CHECK(nv_scan_allowlist_match(al, "d/e/a.pemx") == NULL);
	nv_scan_allowlist_free(al);
	CHECK(hs.n == 0);

	/* In a commit: the exempt path is counted, not reported; the line
	 * without a reason is reported, and does not exempt its path. */
	snprintf(repo, sizeof(repo), "%s/allow", tmp);
	CHECK(git_init(repo) == 0);
	put_text(repo, NV_SCAN_ALLOW_FILE, text);
	put_text(repo, "tests/fixtures/rsa/key.pem",
		 PEM_BEGIN("RSA ") "\n" KEY_BODY PEM_END("RSA ") "\n");
	put_text(repo, "deploy/key.pem",
		 PEM_BEGIN("EC ") "\n" KEY_BODY PEM_END("EC ") "\n");
	CHECK(git_commit_all(repo) == 0);
	head_of(repo, oid);
	memset(&hs, 0, sizeof(hs));
	rc = nv_scan_commit(repo, oid, collect, &hs, &st, &err);
	CHECK(rc == 0);
	CHECK(hs.n == 2);
	CHECK(find(&hs, NV_SCAN_ALLOW_FILE, 4, "allowlist") != NULL);
	CHECK(find(&hs, "deploy/key.pem", 1, "private-key") != NULL);
	CHECK(st.allowed == 1);
	if (hs.n != 2)
		dump(&hs);

	/* Same through the folder walk. */
	memset(&hs, 0, sizeof(hs));
	rc = nv_scan_dir(repo, collect, &hs, &st, &err);
	CHECK(rc == 0 && hs.n == 2 && st.allowed == 1);
}

struct buffer_case {
	const char *path;
	const char *text;
	size_t line;
	const char *rule; /* NULL: nothing must be found */
};

static void test_buffers(void)
{
	static const struct buffer_case cases[] = {
		{"a.js",
		 "x\nconst t = \"xo"
		 "xb-2741963580-ZkR8mQ3wLp5N\";\n",
		 2, "slack-token"},
		{"a.txt", GL_TOKEN "\n", 1, "gitlab-token"},
		{"a.txt",
		 "key=AI"
		 "zaSyD4fG7hJ9kL1mN3pQ5rS7tU9vW1xY3zA5b\n",
		 1, "google-api-key"},
		{"a.rb",
		 "Stripe.api_key = 'sk"
		 "_live_4eC39HqLyjWDarjtT1zdp7dc'\n",
		 1, "stripe-key"},
		{"a.http",
		 "Authorization: Bearer ey"
		 "JhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0"
		 "NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U\n",
		 1, "jwt"},
		{"k.py",
		 "KEY = \"" PEM_BEGIN("") "\\nMIIEvQIBADANBgkqhkiG9w0BAQ\"\n",
		 1, "private-key"},
		{"secrets.json", "{\n  \"client_secret\": \"" PW "\"\n}\n", 2,
		 "secret-assignment"},
		{"app.yml", "db:\n  password: " PW "\n", 2,
		 "secret-assignment"},
		{"two.py",
		 "token = \"" PW "\"; secret = "
		 "\"P" PW "\"\n",
		 1, "secret-assignment"},
		{".env.production", "export API_URL=\"https://x.test\"\n", 1,
		 "dotenv"},
		{".env",
		 "# only\nEMPTY=\nQUOTED=\"\"\nPH=<secret>\nC=changeme\n", 0,
		 NULL},
		{".env.sample", "PASSWORD=" PW "\n", 1, "secret-assignment"},
		{"tls/server.key", PEM_BEGIN("EC ") "\n...\n", 1,
		 "private-key"},
		{"cert.p12", "\x30\x82\x0a\x1b\x02\x01\x03\x30", 0, "pkcs12"},
		{"creds.ini", "aws_secret_access_key=" AWS_SECRET "\n", 1,
		 "aws-secret-access-key"},
	};
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct hits hs = {0};
		nv_scan_stats st = {0};
		size_t len = strlen(cases[i].text);
		int rc;

		rc = nv_scan_buffer(NULL, cases[i].path, cases[i].text, len,
				    collect, &hs, &st);
		CHECK(rc == 0);
		if (!cases[i].rule) {
			CHECK(hs.n == 0);
		} else {
			CHECK(hs.n == 1);
			CHECK(find(&hs, cases[i].path, cases[i].line,
				   cases[i].rule) != NULL);
		}
		if (cases[i].rule ? hs.n != 1 : hs.n != 0) {
			fprintf(stderr, "case %zu (%s)\n", i, cases[i].path);
			dump(&hs);
		}
	}
}

/* secret-assignment reads literals only: in each language, a value built
 * at run time (a field, a call, a variable, an interpolation, a template)
 * is never reported, and a written-out key still is. */
static void test_literals(void)
{
	static const struct buffer_case computed[] = {
		/* C and C++: fields, calls, declarations */
		{"slurm.c", "\ts->token_exp = fresh->expires_at;\n", 0, NULL},
		{"a.c", "const char *passwd = ssl_config->key_passwd;\n", 0,
		 NULL},
		{"a.c", "token_max = SecurityPackage->cbMaxToken;\n", 0, NULL},
		{"a.h",
		 "GumboTokenizerState* tokenizer = "
		 "parser->_tokenizer_state;\n",
		 0, NULL},
		{"a.c", "char *token = getenv(\"NAVETTE_API_TOKEN_2\");\n", 0,
		 NULL},
		/* object names of a crypto library's public header: words
		 * in camelCase, whatever the macro's name says */
		{"obj.h",
		 "#define SN_id_regCtrl_regToken \"id-regCtrl-regToken\"\n", 0,
		 NULL},
		{"obj.h",
		 "#define LN_pkcs9_challengePassword \"challengePassword\"\n",
		 0, NULL},
		{"obj.h", "#define SN_pwd_token \"id-pwdAuthMethodV2\"\n", 0,
		 NULL},
		{"obj.h",
		 "#define SN_enc_token \"id-regCtrl-protocolEncrKey\"\n", 0,
		 NULL},
		{"a.c",
		 "static const char token_fmt[] = \"%s:%08x@%lu/%zu\";\n", 0,
		 NULL},
		{"a.cpp", "auto api_key = std::getenv(\"API_KEY_2\");\n", 0,
		 NULL},
		/* shell: expansions and commands */
		{"registry-start.sh", "REGISTRY_TOKEN=127.0.0.1:$TOKEN_PORT\n",
		 0, NULL},
		{"a.sh", "TOKEN_PASSWORD=$(openssl rand -hex 16)\n", 0, NULL},
		{"a.sh", "export API_TOKEN=\"${API_TOKEN_FROM_CI:-x2}\"\n", 0,
		 NULL},
		{"a.sh", "password=`cat /run/secrets/db2`\n", 0, NULL},
		{"a.sh", "local token=\"$1:$2:$3:$4:$5:$6\"\n", 0, NULL},
		{"a.sh", "SECRET_FILE=/etc/navette/secret-token.txt\n", 0,
		 NULL},
		{"Makefile", "API_TOKEN = $(shell cat token2.txt)\n", 0, NULL},
		{"a.bat", "set API_TOKEN=%API_TOKEN_FROM_CI2%\n", 0, NULL},
		/* Python */
		{"a.py", "token = os.getenv(\"GITHUB_TOKEN_V2\")\n", 0, NULL},
		{"a.py", "password = f\"{user_name}:{pass_word2}\"\n", 0, NULL},
		{"a.py", "secret = \"%(user)s:%(password)s@%(host)s2\"\n", 0,
		 NULL},
		{"a.py", "api_key = \"{prefix}_{key_id}_{n2}\".format(**kw)\n",
		 0, NULL},
		{"a.py",
		 "    TOKEN_BLOCK_BEGIN: \"begin of statement block\",\n", 0,
		 NULL},
		{"a.py",
		 "token_url = \"https://oauth2.googleapis.com/token\"\n", 0,
		 NULL},
		{"a.py", "SECRET_KEY = settings.SECRET_KEY_FALLBACK_2\n", 0,
		 NULL},
		/* JavaScript and TypeScript */
		{"a.js", "const token = `${prefix}${suffix}-v2`;\n", 0, NULL},
		{"a.js", "const apiKey = process.env.API_KEY_V2;\n", 0, NULL},
		{"a.ts", "this.token = response.data.access_token2;\n", 0,
		 NULL},
		/* Go */
		{"a.go", "token := os.Getenv(\"GITHUB_TOKEN_V2\")\n", 0, NULL},
		{"a.go", "\tPassword: cfg.Database.Password2,\n", 0, NULL},
		{"a.go", "secretFmt := \"%s:%s@tcp(%s)/%d\"\n", 0, NULL},
		/* Rust */
		{"a.rs", "let token = env::var(\"GITHUB_TOKEN_V2\")?;\n", 0,
		 NULL},
		{"a.rs",
		 "let password: String = format!(\"{user}:{pass2}\");\n", 0,
		 NULL},
		{"a.rs", "const TOKEN_FMT: &str = \"{}:{}@{}/{:08x}\";\n", 0,
		 NULL},
		/* Ruby */
		{"a.rb", "token = ENV.fetch(\"GITHUB_TOKEN_V2\")\n", 0, NULL},
		{"a.rb", "password = \"#{user}:#{pass_2}@#{host}\"\n", 0, NULL},
		{"a.rake",
		 "TOKENIZER_DEPS = { \"lib/nokogiri/css/tokenizer.rb\" "
		 "=> \"lib/nokogiri/css/tokenizer.rex\" }\n",
		 0, NULL},
		{"a.rb", "@api_key = options[:api_key2]\n", 0, NULL},
		/* Lua */
		{"a.lua", "local token = os.getenv(\"NAVETTE_TOKEN_V2\")\n", 0,
		 NULL},
		{"a.lua", "local password = store.get(\"db/password2\")\n", 0,
		 NULL},
		/* YAML, TOML, INI, JSON, templates */
		{"a.yml", "token: \"{{ vault_registry_token_2 }}\"\n", 0, NULL},
		{"a.yml", "client_secret: !vault |\n  $ANSIBLE_VAULT;1.1\n", 0,
		 NULL},
		{"a.yml", "api_key: *default_api_key2\n", 0, NULL},
		{"a.yml", "password: <%= ENV[\"DB_PASSWORD_2\"] %>\n", 0, NULL},
		{"a.yml", "secret_name: prod/app/db2-credentials\n", 0, NULL},
		{"a.yml", "secret: settings.SECRET_KEY_FALLBACK_2\n", 0, NULL},
		{"a.toml", "token = \"${REGISTRY_TOKEN_2}\"\n", 0, NULL},
		{"a.ini", "password = %(db_password_2)s\n", 0, NULL},
		{"a.ini", "api_token = xxxxxxxxxxxxxxxxxxxxxxxx\n", 0, NULL},
		{"ca.cnf", "private_key = EdelCurlRoot-ca.key\n", 0, NULL},
		{"a.json", "{\"token\": \"{{ .Values.token2 }}\"}\n", 0, NULL},
		{"a.json", "{\"password\": \"$(PASSWORD_FROM_ENV2)\"}\n", 0,
		 NULL},
		{"a.conf.in", "password = \"@DB_PASSWORD_2@\"\n", 0, NULL},
		{"a.erb", "password: <%= @db_password_2 %>\n", 0, NULL},
		/* Java, PHP, C#, Swift */
		{"A.java",
		 "String password = System.getenv(\"DB_PASSWORD_2\");\n", 0,
		 NULL},
		{"a.php", "$token = \"{$prefix}{$suffix}2\";\n", 0, NULL},
		{"a.cs", "var token = $\"{prefix}{suffix2}\";\n", 0, NULL},
		{"a.swift", "let token = \"\\(prefix)\\(suffix2)\"\n", 0, NULL},
		/* inside a string, name=value is text: still not literal
		 * when filled in, and a key of a map is not a value */
		{"a.c", "printf(\"token=%s&id=%08lu\\n\", tok, id);\n", 0,
		 NULL},
		{"a.py", "url = f\"https://x.test/?access_token={tok_v2}\"\n",
		 0, NULL},
		{"a.py", "conf = {\"password\": self.db_password_v2}\n", 0,
		 NULL},
		{"a.c", "/* the client's token = parser->next_tok2 */\n", 0,
		 NULL},
		/* words between separators: a slug, a template path */
		{"a.go", "\tpassword := \"my-super-secret-password\"\n", 0,
		 NULL},
		{"a.py",
		 "password_change_template = "
		 "'custom_admin/password_change_form.html'\n",
		 0, NULL},
		{"a.py", "reset_url_token = 'set-passwordcustom'\n", 0, NULL},
		/* made-up runs of the alphabet */
		{"fuzz.c",
		 "static const char secret_b[] = \"tok_ABCDEFGHIJKLMNOP\";\n",
		 0, NULL},
		{"a.yml", "password: 0123456789abcdefgh\n", 0, NULL},
		/* .env of expansions only; an empty key-named file */
		{".env", "API_URL=http://$HOST:$PORT/v2\nTOKEN=${CI_TOKEN}\n",
		 0, NULL},
		{"fixtures/.ssh/id_rsa", "", 0, NULL},
	};
	static const struct buffer_case literal[] = {
		{"a.c", "static const char api_token[] = \"" PW "\";\n", 1,
		 "secret-assignment"},
		{"a.h", "#define API_TOKEN \"" PW "\"\n", 1,
		 "secret-assignment"},
		/* camelCase humps, but no identifier: each value fails one
		 * test of reads_as_identifier() alone (vowels, lower case,
		 * single letters, word length, a digit run into lower case) */
		{"a.h",
		 "#define API_SECRET \"qwbTrasNkmP"
		 "ElvRstoka\"\n",
		 1, "secret-assignment"},
		{"a.h",
		 "#define API_SECRET \"brnTakVOPL"
		 "tresZEKtar\"\n",
		 1, "secret-assignment"},
		{"a.h",
		 "#define API_SECRET \"qwboTrasNok"
		 "mPElvRstokaX\"\n",
		 1, "secret-assignment"},
		{"a.h",
		 "#define API_SECRET \"qw-trNo-pe"
		 "-lvRst-to-ka-zuk\"\n",
		 1, "secret-assignment"},
		{"a.h",
		 "#define API_SECRET \"qwboTrasNok"
		 "mPElvRsto7ka\"\n",
		 1, "secret-assignment"},
		{"a.c", "\tcfg.password = \"" PW "\";\n", 1,
		 "secret-assignment"},
		{"a.sh", "API_TOKEN=" PW "\n", 1, "secret-assignment"},
		{"a.sh", "export DB_PASSWORD='" PW "'\n", 1,
		 "secret-assignment"},
		{"a.py", "api_token = \"" API_TOKEN "\"\n", 1,
		 "secret-assignment"},
		{"a.py", "token: str = \"" PW "\"\n", 1, "secret-assignment"},
		{"a.py", "password = b\"" PW "\"\n", 1, "secret-assignment"},
		{"a.py", "connect(client_secret=r'" PW "')\n", 1,
		 "secret-assignment"},
		{"a.js", "const apiKey = \"" PW "\";\n", 1,
		 "secret-assignment"},
		{"a.js", "const token = `" PW "`;\n", 1, "secret-assignment"},
		{"a.ts", "const token: string = '" PW "';\n", 1,
		 "secret-assignment"},
		{"a.go", "token := \"" PW "\"\n", 1, "secret-assignment"},
		{"a.go", "\tPassword: \"" PW "\",\n", 1, "secret-assignment"},
		{"a.rs", "const API_TOKEN: &str = \"" PW "\";\n", 1,
		 "secret-assignment"},
		{"a.rs", "let token = \"" PW "\";\n", 1, "secret-assignment"},
		{"a.rb", "config.api_key = '" PW "'\n", 1, "secret-assignment"},
		{"a.rb", "{ :token => \"" PW "\" }\n", 1, "secret-assignment"},
		{"a.lua", "local api_token = \"" PW "\"\n", 1,
		 "secret-assignment"},
		{"a.lua", "return { password = '" PW "' }\n", 1,
		 "secret-assignment"},
		{"a.yml", "password: " PW "\n", 1, "secret-assignment"},
		{"a.yml", "token: \"" PW "\"\n", 1, "secret-assignment"},
		{"a.toml", "api_key = \"" PW "\"\n", 1, "secret-assignment"},
		{"a.ini", "password = " PW "\n", 1, "secret-assignment"},
		/* mixed case and a run of capitals are not words; xXx by
		 * chance inside a long key is no placeholder */
		{"a.ts",
		 "const registryPassword: string = 'KjIFgOBd"
		 "LYuy@:/ZEDWl54UO';\n",
		 1, "secret-assignment"},
		{"a.py",
		 "token = \"q7XxXk2Lm9Pz"
		 "4Rw8Nb3Vc6\"\n",
		 1, "secret-assignment"},
		{"a.json", "{\"client_secret\": \"" PW "\"}\n", 1,
		 "secret-assignment"},
		{"A.java",
		 "private static final String API_KEY = \"" PW "\";\n", 1,
		 "secret-assignment"},
		{"a.php", "$api_key = '" PW "';\n", 1, "secret-assignment"},
		{"a.cs", "var token = \"" PW "\";\n", 1, "secret-assignment"},
		/* name=value as text inside a string literal */
		{"a.py", "dsn = \"host=db password=" PW " port=5432\"\n", 1,
		 "secret-assignment"},
		{"a.js",
		 "fetch(\"https://api.test/v1?access_token=" PW "&page=2\");\n",
		 1, "secret-assignment"},
		/* a hex key and a UUID-shaped key are literals too */
		{"a.py",
		 "token = \"9f86d081884c"
		 "7d659a2feaa0c55ad015\"\n",
		 1, "secret-assignment"},
		{"a.yml",
		 "api_key: 123e4567-e89b-"
		 "12d3-a456-426614174000\n",
		 1, "secret-assignment"},
	};
	size_t i;

	for (i = 0; i < sizeof(computed) / sizeof(computed[0]); i++) {
		struct hits hs = {0};

		nv_scan_buffer(NULL, computed[i].path, computed[i].text,
			       strlen(computed[i].text), collect, &hs, NULL);
		CHECK(hs.n == 0);
		if (hs.n) {
			fprintf(stderr, "computed case %zu: %s", i,
				computed[i].text);
			dump(&hs);
		}
	}
	for (i = 0; i < sizeof(literal) / sizeof(literal[0]); i++) {
		struct hits hs = {0};

		nv_scan_buffer(NULL, literal[i].path, literal[i].text,
			       strlen(literal[i].text), collect, &hs, NULL);
		CHECK(hs.n == 1 && find(&hs, literal[i].path, literal[i].line,
					literal[i].rule) != NULL);
		if (hs.n != 1 || !find(&hs, literal[i].path, literal[i].line,
				       literal[i].rule)) {
			fprintf(stderr, "literal case %zu: %s", i,
				literal[i].text);
			dump(&hs);
		}
		CHECK(!leaks(&hs));
	}
}

/* Three classes of values the literal-only rule once dropped: a '$' or a
 * '%e' in a language that expands neither, a chosen password with
 * punctuation read as words, credentials inside a URL. Each is found; the
 * false alarms of the same shape stay quiet. The values are split so that
 * this file does not trip the scanner itself. */
#define DOLLAR_PW                                                              \
	"q7$Lr9vZk2"                                                           \
	"!mXw4Tp8"
#define URL_PW                                                                 \
	"S3cr3tPa"                                                             \
	"ssw0rd"
static void test_recall_classes(void)
{
	static const struct buffer_case found[] = {
		/* a. interpolation only where the language expands it */
		{"a.py", "DB_PASSWORD = \"" DOLLAR_PW "\"\n", 1,
		 "secret-assignment"},
		{"a.yml", "password: " DOLLAR_PW "\n", 1, "secret-assignment"},
		{"a.json", "{\"password\": \"" DOLLAR_PW "\"}\n", 1,
		 "secret-assignment"},
		{"a.sh", "export DB_PASSWORD='" DOLLAR_PW "'\n", 1,
		 "secret-assignment"},
		{"a.js", "const password = \"" DOLLAR_PW "\";\n", 1,
		 "secret-assignment"},
		{"a.yml",
		 "password: \"Zk8q%eP2vLm"
		 "9Xw4T\"\n",
		 1, "secret-assignment"},
		{"a.go", "password := \"Ab%e" PW "\"\n", 1,
		 "secret-assignment"},
		{".env",
		 "DB_PASSWORD=Zk8$qP2v"
		 "Lm9Xw4T\n",
		 1, "dotenv"},
		/* a mostly literal value around a small expansion */
		{"a.sh", "TOKEN=\"$HOME/" PW "\"\n", 1, "secret-assignment"},
		{"a.py", "password = \"%s" PW "\"\n", 1, "secret-assignment"},
		{"a.rb", "token = \"#{prefix}" PW "\"\n", 1,
		 "secret-assignment"},
		/* b. chosen passwords with punctuation are not words */
		{"a.yml",
		 "password: SummerVa"
		 "cation2024!\n",
		 1, "secret-assignment"},
		{"a.py",
		 "password = \"Welcome2"
		 "Company!2024\"\n",
		 1, "secret-assignment"},
		/* c. credentials inside a URL */
		{"a.yml",
		 "secret: mongodb+srv://admin:Zk8qP2"
		 "vLm9Xw@cluster0."
		 "example.net\n",
		 1, "url-credentials"},
		{"a.py", "DATABASE = \"postgres://user:" URL_PW "@db/x\"\n", 1,
		 "url-credentials"},
		{"a.md",
		 "curl 'https://api.test/x?user=me&sig=Zk8qP2vLm"
		 "9Xw4Tp8qR7"
		 "sN1yB'\n",
		 1, "url-credentials"},
		{"a.js",
		 "const hook = \"https://hooks.slack.com/services/T0A1B2"
		 "C3D/B0E4F5G6H/Zk8qP2vLm9"
		 "Xw4Tp8qR7sN1yB\";\n",
		 1, "slack-webhook"},
	};
	static const struct buffer_case quiet[] = {
		/* a. expansions where the language expands them */
		{"a.sh", "DB_PASSWORD=\"Zk8$qP2vLm9Xw4T\"\n", 0, NULL},
		{"a.sh", "TOKEN=\"$HOME/.config/navette/tok2\"\n", 0, NULL},
		{"a.go",
		 "password := \"Zk8q%eP2vLm"
		 "9Xw4Tp8qR\"\n",
		 0, NULL},
		{"a.sh", "cat <<EOF\nTOKEN='$REGISTRY_TOKEN_2:$PORT'\nEOF\n", 0,
		 NULL},
		{"a.pl", "my $password = \"$user_name:$pass_word2\";\n", 0,
		 NULL},
		{"a.kt", "val token = \"${prefix}_${suffix}2\"\n", 0, NULL},
		{"a.tf", "password = \"${var.db_password_2}\"\n", 0, NULL},
		{"a.py", "api_key = \"${API_KEY_FROM_VAULT_STORE}\"\n", 0,
		 NULL},
		{"a.c", "run(\"REGISTRY_TOKEN=127.0.0.1:$TOKEN_PORT\\n\");\n",
		 0, NULL},
		{"routes.rb",
		 "  config.secret_key = '#{SecureRandom.hex(64)}'\n", 0, NULL},
		/* stored password hashes open nothing */
		{"a.py",
		 "ADMIN_PASSWORD = 'pbkdf2_sha256$30000$Vo0VlMnkR4Bk$qEvtdyZ"
		 "RWTcOsCnI/oQ7fVOu1XAURIZYoOZ3iq8Dr4M='\n",
		 0, NULL},
		{"a.yml",
		 "password: $6$rounds=5000$Zk8qP2vL$m9Xw4Tp8qR7sN1yBc3Fd\n", 0,
		 NULL},
		/* b. words stay words */
		{"a.py", "password_url = 'set-password-custom/done'\n", 0,
		 NULL},
		{"a.yml", "token_path: /var/lib/navette/token-cache.json\n", 0,
		 NULL},
		/* c. URLs without a working credential */
		{"a.yml", "url: postgres://user:password@db.internal/x2\n", 0,
		 NULL},
		{"a.py", "DSN = \"postgres://user:${PGPASSWORD}@db/x2\"\n", 0,
		 NULL},
		{"a.md", "mysql://root:<password>@localhost:3306/app2\n", 0,
		 NULL},
		{"a.yml", "url: mysql://root:changeme@localhost/app2\n", 0,
		 NULL},
		{"test191", "ftp://use%3fr:pass%3fword@%HOSTIP:%FTPPORT/x\n", 0,
		 NULL},
		{"a.md", "https://x.test/?token={token}&sig=%s&key=YOUR_KEY\n",
		 0, NULL},
		{"a.py",
		 "token_url = \"https://oauth2.googleapis.com/token\"\n", 0,
		 NULL},
		{"a.md",
		 "https://hooks.slack.com/services/T00000000/B00000000/"
		 "XXXXXXXXXXXXXXXXXXXXXXXX\n",
		 0, NULL},
	};
	size_t i;

	for (i = 0; i < sizeof(found) / sizeof(found[0]); i++) {
		struct hits hs = {0};
		const struct buffer_case *t = &found[i];

		nv_scan_buffer(NULL, t->path, t->text, strlen(t->text), collect,
			       &hs, NULL);
		CHECK(hs.n == 1 && find(&hs, t->path, t->line, t->rule));
		if (hs.n != 1 || !find(&hs, t->path, t->line, t->rule)) {
			fprintf(stderr, "found case %zu: %s", i, t->text);
			dump(&hs);
		}
		CHECK(!leaks(&hs));
	}
	for (i = 0; i < sizeof(quiet) / sizeof(quiet[0]); i++) {
		struct hits hs = {0};

		nv_scan_buffer(NULL, quiet[i].path, quiet[i].text,
			       strlen(quiet[i].text), collect, &hs, NULL);
		CHECK(hs.n == 0);
		if (hs.n) {
			fprintf(stderr, "quiet case %zu: %s", i, quiet[i].text);
			dump(&hs);
		}
	}
}

/* A PGP armored key: blank line and headers between marker and body. */
static void test_pgp_block(void)
{
	static const char text[] =
		PGP_BEGIN "\nVersion: x\n\n"
			  "lQdGBF3p9x0BEACxyzxyzAbcdefGhij\n";
	struct hits hs = {0};

	nv_scan_buffer(NULL, "k.asc", text, strlen(text), collect, &hs, NULL);
	CHECK(hs.n == 1 && find(&hs, "k.asc", 1, "private-key"));
}

static void test_bounds(void)
{
	struct hits hs = {0};
	nv_scan_stats st = {0};
	char *line, *many, repo[512], deep[2048], oid[41];
	size_t i, n, len = 20000, at;
	nv_err err;
	int rc;

	CHECK(nv_scan_entropy("", 0) == 0.0);
	CHECK(nv_scan_entropy("aaaa", 4) == 0.0);
	CHECK(nv_scan_entropy("abcd", 4) == 2.0);

	/* A long line: tokens far in, and across a window edge, are found
	 * once each. */
	line = malloc(len + 1);
	if (!line)
		exit(2);
	memset(line, ' ', len);
	line[len] = '\0';
	memcpy(line + 9000, GH_TOKEN, strlen(GH_TOKEN));
	/* Starts just before the first window stops reporting. */
	at = NV_SCAN_LINE_WINDOW - 512 - 10;
	memcpy(line + at, AWS_ID, strlen(AWS_ID));
	/* Runs past the end of the first window. */
	at = NV_SCAN_LINE_WINDOW - 10;
	memcpy(line + at, GL_TOKEN, strlen(GL_TOKEN));
	rc = nv_scan_buffer(NULL, "min.js", line, len, collect, &hs, &st);
	CHECK(rc == 0);
	CHECK(hs.n == 3);
	CHECK(find(&hs, "min.js", 1, "github-token") != NULL);
	CHECK(find(&hs, "min.js", 1, "aws-access-key-id") != NULL);
	CHECK(find(&hs, "min.js", 1, "gitlab-token") != NULL);
	free(line);

	/* The findings cap. */
	n = 150;
	many = malloc(n * 32 + 1);
	if (!many)
		exit(2);
	for (i = 0; i < n; i++)
		snprintf(many + i * 32, 33, "%-31s\n", "id = " AWS_ID);
	memset(&hs, 0, sizeof(hs));
	memset(&st, 0, sizeof(st));
	rc = nv_scan_buffer(NULL, "ids.txt", many, n * 32, collect, &hs, &st);
	CHECK(rc == 0);
	CHECK(st.findings == NV_SCAN_MAX_FINDINGS);
	CHECK(hs.n == NV_SCAN_MAX_FINDINGS);
	CHECK(st.truncated == 1);
	free(many);

	/* Trees deeper than the cap are refused, not half scanned. */
	snprintf(repo, sizeof(repo), "%s/deep", tmp);
	CHECK(git_init(repo) == 0);
	deep[0] = '\0';
	for (i = 0; i < NV_SCAN_MAX_DEPTH + 1; i++)
		strcat(deep, "d/");
	strcat(deep, "f.txt");
	put_text(repo, deep, "hello\n");
	CHECK(git_commit_all(repo) == 0);
	head_of(repo, oid);
	memset(&hs, 0, sizeof(hs));
	rc = nv_scan_commit(repo, oid, collect, &hs, &st, &err);
	CHECK(rc == NV_EREFUSED);
	rc = nv_scan_dir(repo, collect, &hs, &st, &err);
	CHECK(rc == NV_EREFUSED);
}

/* Writes text as UTF-16 (LE or BE, with or without a byte order mark) at
 * out; ASCII text only. Returns the length. */
static size_t utf16(const char *text, int big_endian, int bom, char *out,
		    size_t cap)
{
	size_t o = 0;

	if (bom && o + 2 <= cap) {
		out[o++] = big_endian ? '\xfe' : '\xff';
		out[o++] = big_endian ? '\xff' : '\xfe';
	}
	for (; *text && o + 2 <= cap; text++) {
		out[o++] = big_endian ? '\0' : *text;
		out[o++] = big_endian ? *text : '\0';
	}
	return o;
}

/* One NUL byte no longer turns the scan off. A binary file is searched for
 * private key blocks and token shapes over its raw bytes (the finding
 * names the byte); a file named like text that holds NUL bytes is refused;
 * UTF-16 text is decoded and read line by line. The allow-list exempts
 * all of these like any finding. */
static void test_binary(void)
{
	static const char elf[] = "\x7f"
				  "ELF\x02\x01\x01\0\0\0\0\0";
	char buf[1024], u16[2048], tok[256];
	struct hits hs;
	nv_scan_stats st;
	nv_scan_allowlist *al = NULL;
	nv_err err;
	const struct hit *h;
	size_t n;

	/* a token in a compiled program */
	memcpy(buf, elf, sizeof(elf) - 1);
	n = sizeof(elf) - 1;
	n += (size_t)snprintf(buf + n, sizeof(buf) - n, "\x01" GH_TOKEN "%c",
			      0);
	memset(&hs, 0, sizeof(hs));
	memset(&st, 0, sizeof(st));
	CHECK(nv_scan_buffer(NULL, "bin/tool", buf, n, collect, &hs, &st) == 0);
	h = find(&hs, "bin/tool", 0, "github-token");
	CHECK(hs.n == 1 && h != NULL);
	CHECK(h && strstr(h->reason, "binary file, at byte 13") != NULL);
	CHECK(st.skipped_binary == 1 && st.files == 0);
	CHECK(!leaks(&hs));

	/* an AWS key id, a JWT and a key block (marker, newline, base64) in
	 * a data file; the marker alone, as a library's strings hold it, is
	 * none */
	n = 0;
	memcpy(buf, "\0\0\x10" AWS_ID "\0", 3 + strlen(AWS_ID) + 1);
	n = 3 + strlen(AWS_ID) + 1;
	n += (size_t)snprintf(
		buf + n, sizeof(buf) - n,
		"ey"
		"JhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0"
		"NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlF%c",
		0);
	n += (size_t)snprintf(buf + n, sizeof(buf) - n, "%s%c%s\n%s%c",
			      PEM_BEGIN("RSA "), 0, PEM_BEGIN("EC "), KEY_BODY,
			      0);
	memset(&hs, 0, sizeof(hs));
	nv_scan_buffer(NULL, "model.bin", buf, n, collect, &hs, NULL);
	CHECK(hs.n == 3);
	CHECK(find(&hs, "model.bin", 0, "aws-access-key-id") != NULL);
	CHECK(find(&hs, "model.bin", 0, "jwt") != NULL);
	CHECK(find(&hs, "model.bin", 0, "private-key") != NULL);
	if (hs.n != 3)
		dump(&hs);

	/* every row of the token table, in a binary */
	for (size_t k = 0; k < NV_TOKEN_SHAPE_COUNT; k++) {
		const nv_token_shape *t = &nv_token_shapes[k];

		token_sample(t, t->charset == NV_TOKEN_JWT ? 8 : t->min, tok,
			     sizeof(tok));
		n = (size_t)snprintf(buf, sizeof(buf), "%c%c%s%c", 0, 1, tok,
				     0);
		memset(&hs, 0, sizeof(hs));
		nv_scan_buffer(NULL, "x.dat", buf, n, collect, &hs, NULL);
		CHECK(hs.n == 1 && find(&hs, "x.dat", 0, t->rule) != NULL);
	}

	/* a file named like text with a NUL byte: refused, and its raw
	 * bytes searched too */
	n = (size_t)snprintf(buf, sizeof(buf), "{\"a\": 1}%c\n", 0);
	memset(&hs, 0, sizeof(hs));
	nv_scan_buffer(NULL, "conf/app.json", buf, n, collect, &hs, NULL);
	h = find(&hs, "conf/app.json", 0, "nul-in-text");
	CHECK(hs.n == 1 && h != NULL);
	CHECK(h && strstr(h->reason, "UTF-8") != NULL);
	n = (size_t)snprintf(buf, sizeof(buf), "x%cGH=" GH_TOKEN "\n", 0);
	memset(&hs, 0, sizeof(hs));
	nv_scan_buffer(NULL, ".env", buf, n, collect, &hs, NULL);
	CHECK(hs.n == 2 && find(&hs, ".env", 0, "nul-in-text") &&
	      find(&hs, ".env", 0, "github-token"));
	memset(&hs, 0, sizeof(hs));
	nv_scan_buffer(NULL, "img/logo.png", buf, n, collect, &hs, NULL);
	CHECK(hs.n == 1 && find(&hs, "img/logo.png", 0, "github-token"));

	/* UTF-16: with a byte order mark or by its alternating NUL bytes,
	 * either byte order; read as text, with its line numbers */
	n = utf16("# settings\r\nAPI_TOKEN=" PW "\r\n", 0, 1, u16, sizeof(u16));
	memset(&hs, 0, sizeof(hs));
	memset(&st, 0, sizeof(st));
	nv_scan_buffer(NULL, ".env", u16, n, collect, &hs, &st);
	CHECK(hs.n == 1 && find(&hs, ".env", 2, "dotenv") != NULL);
	CHECK(st.files == 1 && st.skipped_binary == 0);
	n = utf16("x = 1\ntoken = \"" PW "\"\n", 0, 0, u16, sizeof(u16));
	memset(&hs, 0, sizeof(hs));
	nv_scan_buffer(NULL, "settings.py", u16, n, collect, &hs, NULL);
	CHECK(hs.n == 1 &&
	      find(&hs, "settings.py", 2, "secret-assignment") != NULL);
	n = utf16("aws_access_key_id = " AWS_ID "\n", 1, 1, u16, sizeof(u16));
	memset(&hs, 0, sizeof(hs));
	nv_scan_buffer(NULL, "creds.ini", u16, n, collect, &hs, NULL);
	CHECK(hs.n == 1 &&
	      find(&hs, "creds.ini", 1, "aws-access-key-id") != NULL);
	/* a byte order mark without NUL bytes: a surrogate pair (U+1F600)
	 * and a lone surrogate decode, the token after them is found */
	n = 0;
	u16[n++] = '\xff';
	u16[n++] = '\xfe';
	u16[n++] = '\x3d';
	u16[n++] = '\xd8';
	u16[n++] = '\x00';
	u16[n++] = '\xde';
	u16[n++] = '\x00';
	u16[n++] = '\xdc';
	n += utf16(" " GH_TOKEN "\n", 0, 0, u16 + n, sizeof(u16) - n);
	memset(&hs, 0, sizeof(hs));
	nv_scan_buffer(NULL, "notes.txt", u16, n, collect, &hs, NULL);
	CHECK(hs.n == 1 && find(&hs, "notes.txt", 1, "github-token") != NULL);
	if (hs.n != 1)
		dump(&hs);

	/* the allow-list exempts these findings like any other */
	CHECK(nv_scan_allowlist_load(
		      &al,
		      "conf/*.json  binary fixture of the "
		      "parser tests\nbin/**  prebuilt test "
		      "tools\n",
		      strlen("conf/*.json  binary fixture of the "
			     "parser tests\nbin/**  prebuilt "
			     "test tools\n"),
		      collect, &hs, NULL, &err) == 0);
	n = (size_t)snprintf(buf, sizeof(buf), "{}%c" GH_TOKEN, 0);
	memset(&hs, 0, sizeof(hs));
	memset(&st, 0, sizeof(st));
	nv_scan_buffer(al, "conf/app.json", buf, n, collect, &hs, &st);
	nv_scan_buffer(al, "bin/tool", buf, n, collect, &hs, &st);
	CHECK(hs.n == 0 && st.allowed == 3);
	nv_scan_buffer(al, "lib/tool", buf, n, collect, &hs, &st);
	CHECK(hs.n == 1 && find(&hs, "lib/tool", 0, "github-token"));
	nv_scan_allowlist_free(al);
}

/* Scans text as file a.txt; the number of findings, rule of the first. */
static size_t scan_text(const char *text, size_t len, char rule[32])
{
	struct hits *hs = calloc(1, sizeof(*hs));
	nv_scan_stats st = {0};
	size_t n;

	if (!hs)
		return (size_t)-1;
	CHECK(nv_scan_buffer(NULL, "a.txt", text, len, collect, hs, &st) == 0);
	snprintf(rule, 32, "%s", hs->n ? hs->h[0].rule : "");
	n = hs->n;
	free(hs);
	return n;
}

/* Every row of the table of token shapes (the one the log redactor masks
 * with) is found, at its shortest and at 300 characters (fixed-length
 * rows: their length), with the same values test_redact.c uses; the near
 * misses the redactor leaves alone are not findings either. */
static void test_token_table(void)
{
	char tok[512], text[640], rule[32];
	size_t found = 0;

	for (size_t k = 0; k < NV_TOKEN_SHAPE_COUNT; k++) {
		const nv_token_shape *t = &nv_token_shapes[k];
		size_t min = t->charset == NV_TOKEN_JWT ? 8 : t->min;
		size_t runs[2] = {min, t->max ? t->max : 300};

		for (size_t v = 0; v < 2; v++) {
			token_sample(t, runs[v], tok, sizeof(tok));
			snprintf(text, sizeof(text), "value %s, end\n", tok);
			if (scan_text(text, strlen(text), rule) == 1 &&
			    strcmp(rule, t->rule) == 0)
				found++;
			else
				fprintf(stderr, "row %s, %zu: not found\n",
					t->prefix, runs[v]);
		}
		token_sample(t, min - 1, tok, sizeof(tok));
		snprintf(text, sizeof(text), "value %s end\n", tok);
		CHECK(scan_text(text, strlen(text), rule) == 0);
		token_sample(t, runs[0], tok, sizeof(tok));
		snprintf(text, sizeof(text), "value a%s end\n", tok);
		CHECK(scan_text(text, strlen(text), rule) == 0);
		if (t->charset == NV_TOKEN_UPPER_DIGIT) {
			snprintf(text, sizeof(text), "value %sq end\n", tok);
			CHECK(scan_text(text, strlen(text), rule) == 0);
		}
		if (t->max) {
			token_sample(t, t->max + 1, tok, sizeof(tok));
			snprintf(text, sizeof(text), "value %s end\n", tok);
			CHECK(scan_text(text, strlen(text), rule) == 0);
		}
	}
	CHECK(found == 2 * NV_TOKEN_SHAPE_COUNT);
}

/* A long token across the edge of a long line's scan window is found
 * once, whole: a 2000-character GitHub token and a 3000-character JWT
 * starting 3500 bytes into a line. */
static void test_long_token_lines(void)
{
	static const char *const prefixes[] = {"ghp_", "eyJ"};
	char *text = malloc(16384), *tok = malloc(8192), rule[32];

	CHECK(text && tok);
	for (size_t p = 0; text && tok && p < 2; p++) {
		const nv_token_shape *t = NULL;
		size_t o = 0;

		for (size_t k = 0; k < NV_TOKEN_SHAPE_COUNT; k++)
			if (strcmp(nv_token_shapes[k].prefix, prefixes[p]) == 0)
				t = &nv_token_shapes[k];
		CHECK(t != NULL);
		if (!t)
			continue;
		token_sample(t, p == 0 ? 2000 : 3000, tok, 8192);
		while (o < 3500)
			o += (size_t)snprintf(text + o, 16384 - o, "%s",
					      "plain words ");
		o += (size_t)snprintf(text + o, 16384 - o, "%s tail\n", tok);
		CHECK(scan_text(text, o, rule) == 1);
		CHECK_STR(rule, t->rule);
	}
	free(text);
	free(tok);
}

int main(void)
{
	snprintf(tmp, sizeof(tmp), "/tmp/nv-test-scan-XXXXXX");
	if (!mkdtemp(tmp)) {
		perror("mkdtemp");
		return 2;
	}
	setenv("HOME", tmp, 1);
	setenv("XDG_CONFIG_HOME", tmp, 1);
	setenv("GIT_CONFIG_NOSYSTEM", "1", 1);
	unsetenv("GIT_DIR");
	unsetenv("GIT_WORK_TREE");
	unsetenv("GIT_INDEX_FILE");

	test_planted();
	test_clean();
	test_allowlist();
	test_buffers();
	test_literals();
	test_recall_classes();
	test_pgp_block();
	test_binary();
	test_bounds();
	test_token_table();
	test_long_token_lines();

	if (!getenv("NV_TEST_KEEP"))
		sh("rm -rf '%s'", tmp);
	return nv_test_done();
}
