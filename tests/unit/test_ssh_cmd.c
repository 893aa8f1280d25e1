/* One ssh call as navette makes it (host/ssh/): the words of the remote
 * command reach the command as they were given, through the login
 * shell's parsing (checked by running the framed command with sh and
 * bash); the command line holds every hardening option, and this
 * machine's ssh reads it as meant (`ssh -G`); values ssh would misread
 * are refused naming their field; the frame gives back the output and
 * status whatever the login node prints around it, and says why when it
 * cannot; host key fingerprints match ssh-keygen's. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/fsutil.h"
#include "core/proc.h"
#include "nv_test.h"
#include "ssh/ssh_cmd.h"
#include "ssh/ssh_frame.h"
#include "ssh/ssh_key.h"

#define NONCE "0123456789abcdef0123456789abcdef"

static char out_buf[1 << 20], err_buf[1 << 16];

/* Runs argv to its end with stdout captured into out_buf. -> its status,
 * or -1 when it could not run. */
static int run(const char *const *argv, size_t *out_len)
{
	nv_proc_opts o = {0};
	nv_proc_result r;
	nv_err err;

	o.argv = argv;
	o.search_path = 1;
	o.out = (nv_proc_stream){NV_PROC_CAPTURE, out_buf, sizeof(out_buf), 0};
	o.err = (nv_proc_stream){NV_PROC_CAPTURE, err_buf, sizeof(err_buf), 0};
	o.timeout_s = 30;
	if (nv_proc_run(&o, &r, NULL, &err) != 0)
		return -1;
	*out_len = r.out_len;
	return nv_proc_status(&r);
}

static int quote(const char *word, size_t len, char *out, size_t cap)
{
	size_t at = 0;
	nv_err err;

	out[0] = '\0';
	return nv_ssh_quote_word(word, len, out, cap, &at, &err);
}

static void test_quote_text(void)
{
	char q[256];
	nv_err err;
	size_t at = 0;

	CHECK(quote("", 0, q, sizeof(q)) == 0);
	CHECK_STR(q, "''");
	CHECK(quote("a b", 3, q, sizeof(q)) == 0);
	CHECK_STR(q, "'a b'");
	CHECK(quote("it's", 4, q, sizeof(q)) == 0);
	CHECK_STR(q, "'it'\\''s'");
	CHECK(quote("a\\b", 3, q, sizeof(q)) == 0);
	CHECK_STR(q, "'a'\\\\'b'");
	CHECK(quote("'", 1, q, sizeof(q)) == 0);
	CHECK_STR(q, "\\'");
	CHECK(quote("$HOME `id`", 10, q, sizeof(q)) == 0);
	CHECK_STR(q, "'$HOME `id`'");
	CHECK(quote("a\0b", 3, q, sizeof(q)) == NV_EINVAL);
	/* out full: refused, never cut */
	CHECK(nv_ssh_quote_word("abcdef", 6, q, 5, &at, &err) == NV_ENOMEM);
}

/* Words that a shell would read otherwise if they were not quoted. */
static const char *const hard_words[] = {
	"",      "a b",          "it's",     "\"dq\"", "$HOME", "`id`",
	"$(id)", "a\nb\n",       "\\",       "\\'",    "*",     "-n",
	"%s%d",  "\xff\xfe\x80", "; exit 3", "a\tb",   "~",     "!x",
	"#c",    "{a,b}",        "&&",       "|",      "> f",   "'\\''",
};
#define NHARD (sizeof(hard_words) / sizeof(hard_words[0]))

/* The framed command run as sshd runs it (SHELL -c STRING), words
 * printed back one per field: each arrives as it was given, the status
 * comes through, what a profile prints around it is set aside. */
static void test_remote_command_through_shells(void)
{
	static const char *shells[] = {"sh", "bash", "dash"};
	static char command[NV_SSH_COMMAND_MAX],
		wrapped[NV_SSH_COMMAND_MAX + 256];
	const char *words[NHARD + 2];
	size_t lens[NHARD + 2], n = 0, out_len = 0;
	char expect[1024];
	size_t expect_len = 0;
	nv_ssh_frame f;
	nv_err err;

	words[n] = "printf";
	lens[n++] = 6;
	words[n] = "<%s>";
	lens[n++] = 4;
	for (size_t i = 0; i < NHARD; i++) {
		words[n] = hard_words[i];
		lens[n++] = strlen(hard_words[i]);
		expect_len += (size_t)snprintf(expect + expect_len,
					       sizeof(expect) - expect_len,
					       "<%s>", hard_words[i]);
	}
	CHECK(nv_ssh_remote_command(words, lens, n, NONCE, command,
				    sizeof(command), &err) == 0);
	CHECK(strncmp(command, "sh -c ", 6) == 0);
	snprintf(wrapped, sizeof(wrapped),
		 "echo 'Welcome to the login node'; echo stty: not a tty >&1; "
		 "%s; echo logout",
		 command);
	for (size_t s = 0; s < sizeof(shells) / sizeof(shells[0]); s++) {
		char path[4096];
		const char *argv[] = {shells[s], "-c", wrapped, NULL};

		if (nv_which(shells[s], path, sizeof(path)) != 0) {
			SKIP(shells[s]);
			continue;
		}
		CHECK(run(argv, &out_len) == 0);
		CHECK(nv_ssh_frame_parse(out_buf, out_len, NONCE, 0, 4096, &f,
					 &err) == 0);
		CHECK(f.status == 0);
		CHECK(f.output_len == expect_len &&
		      memcmp(f.output, expect, expect_len) == 0);
		if (f.output_len != expect_len ||
		    memcmp(f.output, expect, expect_len) != 0)
			fprintf(stderr, "%s gave: %.*s\n", shells[s],
				(int)f.output_len, f.output);
		CHECK(f.before_len > 0 &&
		      strstr(f.before, "Welcome") == f.before);
		CHECK(f.after_len == 7 && memcmp(f.after, "logout\n", 7) == 0);
	}

	/* the remote status, and output with no final newline */
	{
		const char *w[] = {"sh", "-c", "printf partial; exit 7"};
		size_t l[] = {2, 2, strlen(w[2])};
		const char *argv[] = {"sh", "-c", command, NULL};

		CHECK(nv_ssh_remote_command(w, l, 3, NONCE, command,
					    sizeof(command), &err) == 0);
		CHECK(run(argv, &out_len) == 0);
		CHECK(nv_ssh_frame_parse(out_buf, out_len, NONCE, 0, 4096, &f,
					 &err) == 0);
		CHECK(f.status == 7);
		CHECK(f.output_len == 7 && memcmp(f.output, "partial", 7) == 0);
	}
	/* a profile whose text does not end its line: the BEGIN line is
	 * still a line of its own */
	{
		const char *w[] = {"echo", "out"};
		size_t l[] = {4, 3};
		const char *argv[] = {"sh", "-c", wrapped, NULL};

		CHECK(nv_ssh_remote_command(w, l, 2, NONCE, command,
					    sizeof(command), &err) == 0);
		snprintf(wrapped, sizeof(wrapped),
			 "printf 'no final newline'; %s", command);
		CHECK(run(argv, &out_len) == 0);
		CHECK(nv_ssh_frame_parse(out_buf, out_len, NONCE, 0, 4096, &f,
					 &err) == 0);
		CHECK(f.status == 0);
		CHECK(f.output_len == 4 && memcmp(f.output, "out\n", 4) == 0);
		CHECK(f.before_len >= 16 &&
		      memcmp(f.before, "no final newline", 16) == 0);
	}
	/* a command that prints nothing */
	{
		const char *w[] = {"true"};
		size_t l[] = {4};
		const char *argv[] = {"sh", "-c", command, NULL};

		CHECK(nv_ssh_remote_command(w, l, 1, NONCE, command,
					    sizeof(command), &err) == 0);
		CHECK(run(argv, &out_len) == 0);
		CHECK(nv_ssh_frame_parse(out_buf, out_len, NONCE, 0, 4096, &f,
					 &err) == 0);
		CHECK(f.status == 0 && f.output_len == 0);
	}
	/* refusals: a NUL in a word, no word, a bad nonce, no room */
	{
		const char *w[] = {"echo", "a\0b"};
		size_t l[] = {4, 3};

		CHECK(nv_ssh_remote_command(w, l, 2, NONCE, command,
					    sizeof(command),
					    &err) == NV_EINVAL);
		CHECK(strstr(err.message, "NUL") != NULL);
		CHECK(nv_ssh_remote_command(w, l, 0, NONCE, command,
					    sizeof(command),
					    &err) == NV_EINVAL);
		CHECK(nv_ssh_remote_command(w, l, 1, "0123", command,
					    sizeof(command),
					    &err) == NV_EINVAL);
		CHECK(nv_ssh_remote_command(w, l, 1, NONCE, command, 64,
					    &err) == NV_ENOMEM);
	}
}

static nv_ssh_target good_target(void)
{
	nv_ssh_target t;

	memset(&t, 0, sizeof(t));
	t.host = "login.example.org";
	t.port = 2222;
	t.user = "alice";
	t.known_hosts = "/tmp/navette test/known \"hosts\" %h";
	t.identity = "/tmp/navette/id_ed25519";
	t.certificate = "/tmp/navette/id_ed25519-cert.pub";
	t.control_path = "/tmp/nv/c-%C";
	t.control_persist_s = 60;
	t.connect_timeout_s = 10;
	return t;
}

static int has_word(const nv_ssh_argv *a, const char *w)
{
	for (size_t i = 0; i < a->argc; i++)
		if (strcmp(a->argv[i], w) == 0)
			return (int)i;
	return -1;
}

static nv_ssh_argv argv_buf;

static void test_argv(void)
{
	static const char *const options[] = {
		"BatchMode=yes",
		"StrictHostKeyChecking=yes",
		"GlobalKnownHostsFile=/dev/null",
		"UpdateHostKeys=no",
		"IdentitiesOnly=yes",
		"ForwardAgent=no",
		"ForwardX11=no",
		"ClearAllForwardings=yes",
		"PermitLocalCommand=no",
		"ServerAliveInterval=15",
		"ConnectTimeout=10",
		"LogLevel=ERROR",
		"ControlMaster=auto",
		"ControlPersist=60",
		"UserKnownHostsFile=\"/tmp/navette test/known \\\"hosts\\\" "
		"%%h\"",
		"ControlPath=\"/tmp/nv/c-%%C\"",
		"CertificateFile=\"/tmp/navette/id_ed25519-cert.pub\"",
	};
	nv_ssh_target t = good_target();
	nv_ssh_argv *a = &argv_buf;
	nv_err err;
	int dashes;

	CHECK(nv_ssh_build_argv(&t, "/usr/bin/ssh", "sh -c 'x'", a, &err) == 0);
	CHECK_STR(a->argv[0], "/usr/bin/ssh");
	CHECK(has_word(a, "-T") > 0);
	CHECK(has_word(a, "-F") > 0 &&
	      strcmp(a->argv[has_word(a, "-F") + 1], "none") == 0);
	for (size_t i = 0; i < sizeof(options) / sizeof(options[0]); i++) {
		CHECK(has_word(a, options[i]) > 0);
		if (has_word(a, options[i]) <= 0)
			fprintf(stderr, "missing: %s\n", options[i]);
	}
	dashes = has_word(a, "--");
	CHECK(dashes > 0 && (size_t)dashes + 3 == a->argc);
	CHECK_STR(a->argv[dashes + 1], "login.example.org");
	CHECK_STR(a->argv[dashes + 2], "sh -c 'x'");
	CHECK(a->argv[a->argc] == NULL);

	/* no control path: no multiplexing options */
	t.control_path = NULL;
	t.certificate = NULL;
	CHECK(nv_ssh_build_argv(&t, "ssh", "x", a, &err) == 0);
	CHECK(has_word(a, "ControlMaster=auto") < 0);
	for (size_t i = 0; i < a->argc; i++)
		CHECK(strncmp(a->argv[i], "CertificateFile", 15) != 0);
}

struct refusal {
	const char *field, *value, *says;
};

static void test_refusals(void)
{
	static const struct refusal rows[] = {
		{"host", "-oProxyCommand=touch /tmp/x", "host must not start"},
		{"host", "login node", "host holds"},
		{"host", "bob@login", "host holds"},
		{"host", "login\n", "host holds"},
		{"host", "login%h", "host holds"},
		{"host", "", "host must be"},
		{"user", "-x", "user must not start"},
		{"user", "al ice", "user holds"},
		{"user", "al%ice", "user holds"},
		{"known_hosts", "known_hosts",
		 "known_hosts must be an absolute"},
		{"known_hosts", "~/.ssh/known_hosts", "absolute"},
		{"known_hosts", "none", "absolute"},
		{"identity", "/tmp/id\nx", "identity holds a control byte"},
		{"certificate", "/tmp/c\x7f", "certificate holds a control"},
		{"control_path",
		 "/tmp/"
		 "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
		 "aaaaaaaaaaaaaaaaaaaaaaaaa",
		 "bytes long, over the 86"},
		{"proxy_jump", "a,b", "more than one host"},
		{"proxy_jump", "bob@-evil", "proxy_jump's host must not start"},
		{"proxy_jump", "-x@h", "proxy_jump's user must not start"},
		{"proxy_jump", "h:99999", "port"},
		{"proxy_jump", "h:", "port is empty"},
		{"proxy_jump", "[::1", "not closed"},
		{"proxy_jump", "h a", "proxy_jump's host holds"},
	};
	nv_ssh_argv *a = &argv_buf;
	nv_err err;

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		nv_ssh_target t = good_target();
		const struct refusal *r = &rows[i];
		int rc;

		if (strcmp(r->field, "host") == 0)
			t.host = r->value;
		else if (strcmp(r->field, "user") == 0)
			t.user = r->value;
		else if (strcmp(r->field, "known_hosts") == 0)
			t.known_hosts = r->value;
		else if (strcmp(r->field, "identity") == 0)
			t.identity = r->value;
		else if (strcmp(r->field, "certificate") == 0)
			t.certificate = r->value;
		else if (strcmp(r->field, "control_path") == 0)
			t.control_path = r->value;
		else
			t.proxy_jump = r->value;
		rc = nv_ssh_build_argv(&t, "ssh", "x", a, &err);
		CHECK(rc == NV_EINVAL && a->argc == 0);
		CHECK(strstr(err.message, r->says) != NULL);
		if (rc != NV_EINVAL || !strstr(err.message, r->says))
			fprintf(stderr, "row %zu (%s): %d %s\n", i, r->value,
				rc, err.message);
	}
	/* the longest control path that fits is taken */
	{
		nv_ssh_target t = good_target();
		char path[NV_SSH_CONTROL_PATH_MAX + 1];

		memset(path, 'a', NV_SSH_CONTROL_PATH_MAX);
		path[0] = '/';
		path[NV_SSH_CONTROL_PATH_MAX] = '\0';
		t.control_path = path;
		CHECK(nv_ssh_build_argv(&t, "ssh", "x", a, &err) == 0);
		t.port = 0;
		CHECK(nv_ssh_build_argv(&t, "ssh", "x", a, &err) == NV_EINVAL);
		CHECK(strstr(err.message, "port") != NULL);
		t.port = 22;
		t.connect_timeout_s = 0;
		CHECK(nv_ssh_build_argv(&t, "ssh", "x", a, &err) == NV_EINVAL);
		t.connect_timeout_s = 5;
		t.control_persist_s = 0;
		CHECK(nv_ssh_build_argv(&t, "ssh", "x", a, &err) == NV_EINVAL);
		CHECK(strstr(err.message, "control_persist") != NULL);
		t.control_persist_s = 5;
		CHECK(nv_ssh_build_argv(&t, "ssh", "", a, &err) == NV_EINVAL);
	}
}

/* The value of "key value" in ssh -G's output, or NULL. */
static const char *g_value(const char *out, const char *key, char *val,
			   size_t cap)
{
	size_t n = strlen(key);
	const char *p = out;

	while (p && *p) {
		const char *nl = strchr(p, '\n');
		size_t len = nl ? (size_t)(nl - p) : strlen(p);

		if (len > n && strncmp(p, key, n) == 0 && p[n] == ' ') {
			snprintf(val, cap, "%.*s", (int)(len - n - 1),
				 p + n + 1);
			return val;
		}
		p = nl ? nl + 1 : NULL;
	}
	return NULL;
}

/* This machine's ssh reads the command line as meant: ssh -G prints the
 * configuration it would use (paths with one level of %% taken back, as
 * ssh expands them; IdentityFile and CertificateFile shown before
 * expansion). */
static void test_ssh_reads_it(void)
{
	static const char *const want[][2] = {
		{"batchmode", "yes"},
		{"stricthostkeychecking", "true"},
		{"globalknownhostsfile", "/dev/null"},
		{"updatehostkeys", "false"},
		{"identitiesonly", "yes"},
		{"forwardagent", "no"},
		{"forwardx11", "no"},
		{"clearallforwardings", "yes"},
		{"permitlocalcommand", "no"},
		{"serveraliveinterval", "15"},
		{"connecttimeout", "10"},
		{"loglevel", "ERROR"},
		{"controlmaster", "auto"},
		{"controlpersist", "60"},
		{"requesttty", "false"},
		{"port", "2222"},
		{"user", "alice"},
		{"hostname", "login.example.org"},
		{"userknownhostsfile", "/tmp/navette test/known \"hosts\" %h"},
		{"controlpath", "/tmp/nv/c-%C"},
		{"identityfile", "/tmp/navette/id_ed25519"},
		{"certificatefile", "/tmp/navette/id_ed25519-cert.pub"},
	};
	char ssh[4096], val[4096];
	const char *argv[NV_SSH_ARGS_MAX + 2];
	nv_ssh_target t = good_target();
	nv_ssh_argv *a = &argv_buf;
	size_t out_len = 0;
	nv_err err;

	if (nv_which("ssh", ssh, sizeof(ssh)) != 0) {
		SKIP("no ssh on PATH: ssh -G not checked");
		return;
	}
	t.proxy_jump = "bob@[::1]:2200";
	CHECK(nv_ssh_build_argv(&t, ssh, "true", a, &err) == 0);
	argv[0] = ssh;
	argv[1] = "-G";
	for (size_t i = 1; i <= a->argc; i++)
		argv[i + 1] = a->argv[i];
	CHECK(run(argv, &out_len) == 0);
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		const char *v = g_value(out_buf, want[i][0], val, sizeof(val));

		CHECK(v && strcmp(v, want[i][1]) == 0);
		if (!v || strcmp(v, want[i][1]) != 0)
			fprintf(stderr, "ssh -G: %s is '%s', not '%s'\n",
				want[i][0], v ? v : "(none)", want[i][1]);
	}
	/* the jump host's command: after ssh's %-expansion, sh reads it
	 * as the same hardened ssh with the jump's port and user, -W to
	 * the target, then the jump host */
	if (g_value(out_buf, "proxycommand", val, sizeof(val))) {
		static char script[8192];
		char expanded[4096];
		size_t e = 0;
		const char *shargv[] = {"sh", "-c", script, NULL};

		for (const char *p = val; *p && e + 32 < sizeof(expanded);
		     p++) {
			if (p[0] == '%' && p[1] == '%')
				expanded[e++] = '%', p++;
			else if (p[0] == '%' && p[1] == 'h')
				e += (size_t)snprintf(expanded + e, 32,
						      "login.example.org"),
					p++;
			else if (p[0] == '%' && p[1] == 'p')
				e += (size_t)snprintf(expanded + e, 8, "2222"),
					p++;
			else
				expanded[e++] = *p;
		}
		expanded[e] = '\0';
		snprintf(script, sizeof(script), "printf '<%%s>' %s", expanded);
		CHECK(run(shargv, &out_len) == 0);
		CHECK(strstr(out_buf, "<StrictHostKeyChecking=yes>") != NULL);
		CHECK(strstr(out_buf, "<BatchMode=yes>") != NULL);
		CHECK(strstr(out_buf,
			     "<UserKnownHostsFile=\"/tmp/navette test/known "
			     "\\\"hosts\\\" %%h\">") != NULL);
		CHECK(strstr(out_buf, "<-p><2200><-l><bob><-W>"
				      "<[login.example.org]:2222><-->"
				      "<::1>") != NULL);
		CHECK(strstr(out_buf, "Control") == NULL);
		if (!strstr(out_buf, "<-W><[login.example.org]:2222><--><::1>"))
			fprintf(stderr, "jump command read as: %s\n", out_buf);
	} else {
		CHECK(!"ssh -G shows no proxycommand");
	}
}

/* First contact's command line: the host key accepted into the throwaway
 * file, no login of any kind tried, nothing multiplexed or forwarded; as
 * this machine's ssh reads it. */
static void test_probe_argv(void)
{
	static const char *const want[][2] = {
		{"batchmode", "yes"},
		{"stricthostkeychecking", "false"},
		{"globalknownhostsfile", "/dev/null"},
		{"hashknownhosts", "no"},
		{"passwordauthentication", "no"},
		{"kbdinteractiveauthentication", "no"},
		{"gssapiauthentication", "no"},
		{"hostbasedauthentication", "no"},
		{"identityagent", "none"},
		{"controlmaster", "false"},
		{"forwardagent", "no"},
		{"clearallforwardings", "yes"},
		{"connecttimeout", "10"},
		{"port", "2222"},
		{"user", "alice"},
		{"hostname", "login.example.org"},
		{"userknownhostsfile", "/tmp/navette test/known \"hosts\" %h"},
	};
	char ssh[4096], val[4096];
	const char *argv[NV_SSH_ARGS_MAX + 2];
	nv_ssh_target t = good_target();
	nv_ssh_argv *a = &argv_buf;
	size_t out_len = 0;
	nv_err err;
	int dashes;

	CHECK(nv_ssh_build_probe_argv(&t, "/usr/bin/ssh", a, &err) == 0);
	CHECK_STR(a->argv[0], "/usr/bin/ssh");
	CHECK(has_word(a, "StrictHostKeyChecking=no") > 0);
	CHECK(has_word(a, "PubkeyAuthentication=no") > 0);
	CHECK(has_word(a, "IdentityAgent=none") > 0);
	CHECK(has_word(a, "ControlPath=none") > 0);
	dashes = has_word(a, "--");
	CHECK(dashes > 0 && (size_t)dashes + 3 == a->argc);
	CHECK_STR(a->argv[dashes + 1], "login.example.org");
	CHECK_STR(a->argv[dashes + 2], "true");
	/* the identity, certificate and socket of a target are not used */
	for (size_t i = 0; i < a->argc; i++) {
		CHECK(strstr(a->argv[i], "id_ed25519") == NULL);
		CHECK(strstr(a->argv[i], "/tmp/nv/") == NULL);
	}
	/* values ssh would misread are refused, naming the field */
	t.host = "-oProxyCommand=x";
	CHECK(nv_ssh_build_probe_argv(&t, "ssh", a, &err) == NV_EINVAL);
	CHECK(strstr(err.message, "host") != NULL);
	CHECK(a->argc == 0);
	t = good_target();
	t.known_hosts = "known_hosts";
	CHECK(nv_ssh_build_probe_argv(&t, "ssh", a, &err) == NV_EINVAL);
	CHECK(strstr(err.message, "known_hosts") != NULL);
	t = good_target();
	t.user = "a b";
	CHECK(nv_ssh_build_probe_argv(&t, "ssh", a, &err) == NV_EINVAL);

	if (nv_which("ssh", ssh, sizeof(ssh)) != 0) {
		SKIP("no ssh on PATH: ssh -G of the probe not checked");
		return;
	}
	t = good_target();
	CHECK(nv_ssh_build_probe_argv(&t, ssh, a, &err) == 0);
	argv[0] = ssh;
	argv[1] = "-G";
	for (size_t i = 1; i <= a->argc; i++)
		argv[i + 1] = a->argv[i];
	CHECK(run(argv, &out_len) == 0);
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		const char *v = g_value(out_buf, want[i][0], val, sizeof(val));

		CHECK(v && strcmp(v, want[i][1]) == 0);
		if (!v || strcmp(v, want[i][1]) != 0)
			fprintf(stderr,
				"ssh -G (probe): %s is '%s', not '%s'\n",
				want[i][0], v ? v : "(none)", want[i][1]);
	}
	/* (its name for "no" changed across versions: false, no) */
	CHECK(g_value(out_buf, "pubkeyauthentication", val, sizeof(val)) &&
	      (strcmp(val, "no") == 0 || strcmp(val, "false") == 0));
	CHECK(g_value(out_buf, "controlpath", val, sizeof(val)) == NULL);
}

static int parse(const char *text, size_t max, nv_ssh_frame *f, nv_err *err)
{
	return nv_ssh_frame_parse(text, strlen(text), NONCE, 0, max, f, err);
}

static void test_frame(void)
{
	nv_ssh_frame f;
	nv_err err;
	char big[600];

	CHECK(parse("NAVETTE-BEGIN-" NONCE "\nout\n\nNAVETTE-END-" NONCE " 0\n",
		    100, &f, &err) == 0);
	CHECK(f.output_len == 4 && memcmp(f.output, "out\n", 4) == 0);
	CHECK(f.status == 0 && f.before_len == 0 && f.after_len == 0);
	/* a fake END of the same nonce in the output: the last one counts */
	CHECK(parse("motd\nNAVETTE-BEGIN-" NONCE "\nx\nNAVETTE-END-" NONCE
		    " 1\ny\nNAVETTE-END-" NONCE " 3\nbye\n",
		    100, &f, &err) == 0);
	CHECK(f.status == 3 && f.output_len == 20 + NV_SSH_NONCE_LEN - 2);
	CHECK(f.before_len == 5 && f.after_len == 4);
	/* BEGIN must be a whole line of this nonce */
	CHECK(parse("xNAVETTE-BEGIN-" NONCE "\nout\nNAVETTE-END-" NONCE " 0\n",
		    100, &f, &err) == NV_EBACKEND);
	CHECK(f.problem == NV_SSH_FRAME_NO_BEGIN);
	CHECK(parse("NAVETTE-BEGIN-ffffffffffffffffffffffffffffffff\nout\n"
		    "NAVETTE-END-" NONCE " 0\n",
		    100, &f, &err) == NV_EBACKEND);
	/* no frame: what came instead, escaped */
	CHECK(parse("This account is locked.\nBye\n", 100, &f, &err) ==
	      NV_EBACKEND);
	CHECK(strstr(err.message, "did not run") != NULL);
	CHECK(strstr(err.message, "'This account is locked.\\x0aBye\\x0a'") !=
	      NULL);
	CHECK(err.hint[0] != '\0');
	CHECK(parse("", 100, &f, &err) == NV_EBACKEND);
	CHECK(strstr(err.message, "printed nothing") != NULL);
	/* what is shown is shortened */
	memset(big, 'b', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	CHECK(parse(big, 100, &f, &err) == NV_EBACKEND);
	CHECK(strlen(err.message) < 4 * NV_SSH_FRAME_SHOW_MAX);
	/* cut short: no END, an END of another nonce, a bad status */
	CHECK(parse("NAVETTE-BEGIN-" NONCE "\nhalf", 100, &f, &err) ==
	      NV_EBACKEND);
	CHECK(f.problem == NV_SSH_FRAME_NO_END);
	CHECK(strstr(err.message, "stops short after 4 bytes") != NULL);
	CHECK(parse("NAVETTE-BEGIN-" NONCE "\nx\nNAVETTE-END-"
		    "ffffffffffffffffffffffffffffffff 0\n",
		    100, &f, &err) == NV_EBACKEND);
	CHECK(parse("NAVETTE-BEGIN-" NONCE "\nx\nNAVETTE-END-" NONCE " 0", 100,
		    &f, &err) == NV_EBACKEND);
	CHECK(parse("NAVETTE-BEGIN-" NONCE "\nx\nNAVETTE-END-" NONCE " x\n",
		    100, &f, &err) == NV_EBACKEND);
	/* over the bound, and a capture that was cut */
	CHECK(parse("NAVETTE-BEGIN-" NONCE "\n0123456789\nNAVETTE-END-" NONCE
		    " 0\n",
		    9, &f, &err) == NV_ENOMEM);
	CHECK(f.problem == NV_SSH_FRAME_TOO_BIG);
	CHECK(strstr(err.message, "over the limit of 9 bytes") != NULL);
	CHECK(parse("NAVETTE-BEGIN-" NONCE "\n0123456789\nNAVETTE-END-" NONCE
		    " 0\n",
		    10, &f, &err) == 0);
	{
		const char *t = "NAVETTE-BEGIN-" NONCE
				"\nabc\nNAVETTE-END-" NONCE " 0\n";
		CHECK(nv_ssh_frame_parse(t, strlen(t), NONCE, 1, 10, &f,
					 &err) == NV_ENOMEM);
		CHECK(strstr(err.message, "limit of 10 bytes") != NULL);
	}
}

/* A key ssh-keygen made once, with its fingerprint as ssh-keygen -l
 * printed it (public keys: nothing secret). */
static const char ed25519_pub[] =
	"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGNJ/M0CT1BgX/P/NRxHVTpVqDjnPdkI"
	"akR1lk2fXRF5 navette-test";
static const char ed25519_fp[] =
	"SHA256:5P49M9WKN1oRdR/zUaNjM0bxWgYQDWpwhrsGPiPLn94";
static const char ecdsa_pub[] =
	"ecdsa-sha2-nistp256 AAAAE2VjZHNhLXNoYTItbmlzdHAyNTYAAAAIbmlzdHAyNTYAA"
	"ABBBLHQq2O6Qs0AKyvOaAWHyuwEw56NELufLGr3rIW1ubDxbSfTgS7USrNPIeK0u/bKD"
	"ffaYCPrwghMsi6R06EQUzY= x";
static const char ecdsa_fp[] =
	"SHA256:UV5D1/tI0PcnnTG5hrFv6nWEOiR1EnznB1KS5QU/QnM";

static void test_fingerprint(void)
{
	char fp[NV_SSH_FINGERPRINT_MAX], line[512];
	nv_err err;

	CHECK(nv_ssh_fingerprint(ed25519_pub, strlen(ed25519_pub), fp, &err) ==
	      0);
	CHECK_STR(fp, ed25519_fp);
	CHECK(nv_ssh_fingerprint(ecdsa_pub, strlen(ecdsa_pub), fp, &err) == 0);
	CHECK_STR(fp, ecdsa_fp);
	/* as ssh-keyscan prints it */
	snprintf(line, sizeof(line), "[login]:2222 %s\n", ed25519_pub);
	CHECK(nv_ssh_fingerprint(line, strlen(line), fp, &err) == 0);
	CHECK_STR(fp, ed25519_fp);
	/* a blob that is not of its type, bad base64, no key */
	snprintf(line, sizeof(line), "ssh-rsa%s", ed25519_pub + 11);
	CHECK(nv_ssh_fingerprint(line, strlen(line), fp, &err) == NV_EINVAL);
	CHECK(strstr(err.message, "not a ssh-rsa key") != NULL);
	snprintf(line, sizeof(line), "%s", ed25519_pub);
	line[20] = '*';
	CHECK(nv_ssh_fingerprint(line, strlen(line), fp, &err) == NV_EINVAL);
	CHECK(strstr(err.message, "not base64") != NULL);
	CHECK(nv_ssh_fingerprint("ssh-ed25519 AAAA=AAA", 20, fp, &err) ==
	      NV_EINVAL);
	CHECK(nv_ssh_fingerprint("hello world", 11, fp, &err) == NV_EINVAL);
	CHECK(fp[0] == '\0');
}

/* A key made now: the same fingerprint as ssh-keygen -l gives. */
static void test_fingerprint_fresh_key(void)
{
	char dir[] = "/tmp/navette-ssh-test-XXXXXX", key[128], pub[160];
	char keygen[4096], fp[NV_SSH_FINGERPRINT_MAX];
	size_t out_len = 0;
	nv_err err;
	FILE *f;
	char line[1024];

	if (nv_which("ssh-keygen", keygen, sizeof(keygen)) != 0) {
		SKIP("no ssh-keygen: fresh key not checked");
		return;
	}
	CHECK(mkdtemp(dir) != NULL);
	snprintf(key, sizeof(key), "%s/k", dir);
	snprintf(pub, sizeof(pub), "%s/k.pub", dir);
	{
		const char *argv[] = {"ssh-keygen", "-q", "-t", "ed25519",
				      "-N",         "",   "-C", "t",
				      "-f",         key,  NULL};
		CHECK(run(argv, &out_len) == 0);
	}
	f = fopen(pub, "r");
	CHECK(f != NULL);
	if (f) {
		CHECK(fgets(line, sizeof(line), f) != NULL);
		fclose(f);
		CHECK(nv_ssh_fingerprint(line, strlen(line), fp, &err) == 0);
	}
	{
		const char *argv[] = {"ssh-keygen", "-l", "-f", pub, NULL};
		CHECK(run(argv, &out_len) == 0);
		/* "256 SHA256:... t (ED25519)" */
		CHECK(strstr(out_buf, fp) != NULL && fp[0] == 'S');
	}
	unlink(key);
	unlink(pub);
	rmdir(dir);
}

static void test_known_hosts_line(void)
{
	static char line[NV_SSH_KNOWN_HOSTS_LINE_MAX];
	const char *b64 = ed25519_pub + 12;
	char key[128];
	nv_err err;

	snprintf(key, sizeof(key), "%.*s", (int)(strchr(b64, ' ') - b64), b64);
	CHECK(nv_ssh_known_hosts_line("Login.Example.org", 22, "ssh-ed25519",
				      key, line, sizeof(line), &err) == 0);
	CHECK(strncmp(line, "login.example.org ssh-ed25519 AAAAC3", 36) == 0);
	CHECK(nv_ssh_known_hosts_line("login", 2222, "ssh-ed25519", key, line,
				      sizeof(line), &err) == 0);
	CHECK(strncmp(line, "[login]:2222 ssh-ed25519 AAAAC3", 31) == 0);
	CHECK(nv_ssh_known_hosts_line("-x", 22, "ssh-ed25519", key, line,
				      sizeof(line), &err) == NV_EINVAL);
	CHECK(nv_ssh_known_hosts_line("h", 22, "ssh-rsa", key, line,
				      sizeof(line), &err) == NV_EINVAL);
	CHECK(nv_ssh_known_hosts_line("h", 22, "ssh-ed25519 x", key, line,
				      sizeof(line), &err) == NV_EINVAL);
	CHECK(nv_ssh_known_hosts_line("h", 0, "ssh-ed25519", key, line,
				      sizeof(line), &err) == NV_EINVAL);
	CHECK(nv_ssh_known_hosts_line("h", 22, "ssh-ed25519", key, line, 10,
				      &err) == NV_ENOMEM);
	CHECK(line[0] == '\0');
}

int main(void)
{
	test_quote_text();
	test_remote_command_through_shells();
	test_argv();
	test_refusals();
	test_ssh_reads_it();
	test_probe_argv();
	test_frame();
	test_fingerprint();
	test_fingerprint_fresh_key();
	test_known_hosts_line();
	return nv_test_done();
}
