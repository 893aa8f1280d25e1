/* _navette.ssh: one command on a host through OpenSSH's `ssh`, run by
 * host/core/proc with the command line of ssh_cmd.h and its output read
 * through the frame of ssh_frame.h; and the host key pins of ssh_key.h.
 *
 * ssh.run{host=, port=22, user=, known_hosts=, identity=, certificate=,
 *         proxy_jump=, control_path=, control_persist=60, timeout=120,
 *         connect_timeout=min(timeout, 30), command={word, ...},
 *         stdin="bytes" | nil, max_output=1 MiB}
 *   -> {status = the remote command's status, stdout = its output (the
 *       frame's content), stderr = ssh's and the command's (bounded)}
 *   | nil, err {code, message, hint, reason}. The paths are absolute;
 *   command's words are quoted for the login shell, never joined as
 *   they come. ssh is NAVETTE_SSH when set, else `ssh` from PATH.
 *   reason tells the refusals apart: "host_key" (the host's key is not
 *   the pinned one, nothing was sent), "denied" (the key or certificate
 *   was refused), "unreachable" (refused, timed out, no such host),
 *   "timeout" (the whole call), "no_frame" (the command did not run: a
 *   login menu, a ForceCommand), "cut" (the connection ended before the
 *   command did), "too_big" (over max_output), "ssh" (another failure of
 *   ssh), "not_run" (a read-only command runs no program), "no_ssh".
 * ssh.scan{host=, port=22, timeout=15} -> the host's keys as ssh-keyscan
 *   prints them (no login, no command) | nil, err
 * ssh.probe{host=, port=22, user=, known_hosts=, timeout=30} -> {status,
 *   stderr}: first contact (ssh_cmd.h's probe): ssh accepts the host's
 *   key into known_hosts (absolute; a throwaway file in a folder of the
 *   caller's), tries no login, runs nothing | nil, err (no ssh, timeout)
 * ssh.exit_master(control_path) -> true: ends that ControlMaster, if any
 * ssh.fingerprint(public_key_line) -> "SHA256:..." | nil, err
 * ssh.known_hosts_line(host, port, type, base64) -> line | nil, err
 *
 * Misuse (a missing field, a number out of range) raises; a value that
 * ssh would misread (an option in a host name) comes back as an invalid
 * error naming the field. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>
#include <lua.h>

#include "core/fsutil.h"
#include "core/nv_lua.h"
#include "core/proc.h"
#include "core/utf8.h"
#include "ssh/ssh_cmd.h"
#include "ssh/ssh_frame.h"
#include "ssh/ssh_key.h"

extern char **environ;

#define SSH_WORDS_MAX  1024
#define SSH_STDERR_MAX ((size_t)64 * 1024)
/* what a login node may print around the frame (banners, motd) */
#define SSH_OUTSIDE_MAX        ((size_t)64 * 1024)
#define SSH_MAX_OUTPUT_DEFAULT ((lua_Integer)1 << 20)
#define SSH_MAX_OUTPUT_MAX     ((lua_Integer)64 << 20)
#define SSH_ENV_MAX            4096

/* Everything one call holds, in one userdata (nothing to free when a Lua
 * call raises); out is the flexible tail: stdout's, then stderr's. */
typedef struct run_box {
	nv_ssh_argv argv;
	char command[NV_SSH_COMMAND_MAX];
	const char *words[SSH_WORDS_MAX];
	size_t lens[SSH_WORDS_MAX];
	char *envp[SSH_ENV_MAX + 2];
	char out[];
} run_box;

static const char *opt_string(lua_State *L, int t, const char *key)
{
	lua_getfield(L, t, key); /* left on the stack: anchors the string */
	return lua_isnil(L, -1) ? NULL : luaL_checkstring(L, -1);
}

static const char *need_string(lua_State *L, int t, const char *key)
{
	const char *s = opt_string(L, t, key);

	if (!s)
		luaL_error(L, "ssh.run: %s is required", key);
	return s;
}

/* [.., nil, err] -> the same with err.reason set */
static int push_error_reason(lua_State *L, const nv_err *err,
			     const char *reason)
{
	nv_lua_push_error(L, err); // [nil, err]
	lua_pushstring(L, reason);
	lua_setfield(L, -2, "reason");
	return 2;
}

/* ssh's environment: ours with SHELL=/bin/sh, which runs a jump host's
 * ProxyCommand (quoted for sh, whatever the user's shell is). */
static void make_env(run_box *box)
{
	static char shell[] = "SHELL=/bin/sh";
	size_t n = 0;

	for (char **e = environ; e && *e && n < SSH_ENV_MAX; e++)
		if (strncmp(*e, "SHELL=", 6) != 0)
			box->envp[n++] = *e;
	box->envp[n++] = shell;
	box->envp[n] = NULL;
}

static int contains(const char *s, const char *word)
{
	return strstr(s, word) != NULL;
}

/* The path of OpenSSH's program name into program: $env_name when set (a
 * stand-in, or an OpenSSH of the user's choice), else name on PATH. */
static int openssh_program(const char *name, const char *env_name,
			   char *program, size_t cap, nv_err *err)
{
	const char *env = getenv(env_name);

	if (env && *env) {
		size_t n = strlen(env);

		if (n >= cap)
			return nv_err_set(err, NV_EINVAL, "shorten it",
					  "ssh: %s is over %zu bytes", env_name,
					  cap - 1);
		memcpy(program, env, n + 1);
		return 0;
	}
	if (nv_which(name, program, cap) == 0)
		return 0;
	return nv_err_set(err, NV_ENOTFOUND,
			  "install OpenSSH's client (openssh-client), or set "
			  "its path in the environment",
			  "ssh: no %s program on PATH (nor in %s)", name,
			  env_name);
}

/* ssh ended with no frame: what its stderr says, as an error. */
static int push_ssh_failure(lua_State *L, const nv_ssh_target *t,
			    const char *errtext, size_t errlen, int status)
{
	char shown[512];
	nv_err err;

	nv_utf8_show(shown, sizeof(shown), errtext,
		     errlen < 160 ? errlen : 160);
	if (contains(errtext, "REMOTE HOST IDENTIFICATION HAS CHANGED") ||
	    contains(errtext, "Host key verification failed") ||
	    contains(errtext, "host key for") ||
	    contains(errtext, "No matching host key")) {
		nv_err_set(&err, NV_EREFUSED,
			   "nothing was sent. If the key was changed on "
			   "purpose, check its new fingerprint with the "
			   "cluster's admins, then run `navette ssh trust "
			   "PROFILE`; if not, someone may be in the way",
			   "ssh: the host key of %s port %d is not the one "
			   "pinned in the profile (or none is pinned)",
			   t->host, t->port);
		return push_error_reason(L, &err, "host_key");
	}
	if (contains(errtext, "Permission denied")) {
		nv_err_set(&err, NV_EREFUSED,
			   "the certificate may have expired or been revoked, "
			   "or the key is not authorized for this user: check "
			   "it with `navette creds check` and ask for a new "
			   "one",
			   "ssh: %s refused the key of %s", t->host, t->user);
		return push_error_reason(L, &err, "denied");
	}
	if (contains(errtext, "Connection refused") ||
	    contains(errtext, "Connection timed out") ||
	    contains(errtext, "timed out") ||
	    contains(errtext, "No route to host") ||
	    contains(errtext, "Network is unreachable") ||
	    contains(errtext, "Could not resolve hostname") ||
	    contains(errtext, "Name or service not known") ||
	    contains(errtext, "kex_exchange_identification") ||
	    contains(errtext, "Connection closed by") ||
	    contains(errtext, "Connection reset")) {
		nv_err_set(&err, NV_EBACKEND,
			   "check the host and port of the profile, the "
			   "network (a VPN?) and, with proxy_jump, the jump "
			   "host",
			   "ssh: %s port %d is unreachable: %s", t->host,
			   t->port, shown);
		return push_error_reason(L, &err, "unreachable");
	}
	nv_err_set(&err, NV_EBACKEND,
		   "try the same with `ssh -v` by hand to see more",
		   "ssh to %s failed (status %d): %s", t->host, status, shown);
	return push_error_reason(L, &err, "ssh");
}

/* Reads the target's fields from the table at 1. */
static void read_target(lua_State *L, nv_ssh_target *t, double *timeout)
{
	lua_Integer connect;

	memset(t, 0, sizeof(*t));
	t->host = need_string(L, 1, "host");
	t->user = need_string(L, 1, "user");
	t->known_hosts = need_string(L, 1, "known_hosts");
	t->identity = need_string(L, 1, "identity");
	t->certificate = opt_string(L, 1, "certificate");
	t->proxy_jump = opt_string(L, 1, "proxy_jump");
	t->control_path = opt_string(L, 1, "control_path");
	lua_getfield(L, 1, "port");
	t->port = (int)nv_lua_optrange(L, -1, 1, 65535, 22, "ssh.run: port");
	lua_getfield(L, 1, "control_persist");
	t->control_persist_s = (int)nv_lua_optrange(L, -1, 1, 86400, 60,
						    "ssh.run: control_persist");
	lua_getfield(L, 1, "timeout");
	*timeout = (double)nv_lua_optrange(L, -1, 1, 86400, 120,
					   "ssh.run: timeout");
	lua_getfield(L, 1, "connect_timeout");
	connect = nv_lua_optrange(L, -1, 1, 3600,
				  *timeout < 30 ? (lua_Integer)*timeout : 30,
				  "ssh.run: connect_timeout");
	t->connect_timeout_s = (int)connect;
}

static int l_ssh_run(lua_State *L)
{
	nv_ssh_target t;
	nv_proc_opts o = {0};
	nv_proc_result r;
	nv_ssh_frame frame;
	char program[4096], nonce[NV_SSH_NONCE_LEN + 1];
	const char *input = NULL;
	size_t input_len = 0, nwords, out_cap;
	lua_Integer max_output;
	double timeout;
	run_box *box;
	nv_err err;
	int rc;

	luaL_checktype(L, 1, LUA_TTABLE);
	luaL_checkstack(L, 32, "ssh.run");
	read_target(L, &t, &timeout);
	lua_getfield(L, 1, "max_output");
	max_output =
		nv_lua_optrange(L, -1, 0, SSH_MAX_OUTPUT_MAX,
				SSH_MAX_OUTPUT_DEFAULT, "ssh.run: max_output");
	lua_getfield(L, 1, "stdin");
	if (!lua_isnil(L, -1))
		input = luaL_checklstring(L, -1, &input_len);
	lua_getfield(L, 1, "command"); // [args, .., command]
	luaL_argcheck(L, lua_istable(L, -1), 1,
		      "ssh.run: command is a list of words");
	nwords = lua_rawlen(L, -1);
	luaL_argcheck(L, nwords >= 1 && nwords <= SSH_WORDS_MAX, 1,
		      "ssh.run: command has 1 to 1024 words");
	if (nv_exec_forbidden(L)) {
		nv_err_set(&err, NV_ENOTRUN, NULL,
			   "ssh to %s not run (plan mode or a read-only "
			   "command)",
			   t.host);
		return push_error_reason(L, &err, "not_run");
	}
	out_cap = (size_t)max_output + SSH_OUTSIDE_MAX + 1;
	box = lua_newuserdatauv(L, sizeof(*box) + out_cap + SSH_STDERR_MAX,
				0); // [args, .., command, box]
	for (size_t i = 0; i < nwords; i++) {
		lua_rawgeti(L, -2, (lua_Integer)i + 1);
		luaL_argcheck(L, lua_type(L, -1) == LUA_TSTRING, 1,
			      "ssh.run: command's words are strings");
		/* anchored by the command table, which stays on the stack */
		box->words[i] = lua_tolstring(L, -1, &box->lens[i]);
		lua_pop(L, 1);
	}
	if (openssh_program("ssh", "NAVETTE_SSH", program, sizeof(program),
			    &err))
		return push_error_reason(L, &err, "no_ssh");
	if ((rc = nv_random_hex(nonce, NV_SSH_NONCE_LEN / 2, &err)) ||
	    (rc = nv_ssh_remote_command(box->words, box->lens, nwords, nonce,
					box->command, sizeof(box->command),
					&err)) ||
	    (rc = nv_ssh_build_argv(&t, program, box->command, &box->argv,
				    &err)))
		return nv_lua_push_error(L, &err);
	make_env(box);
	o.argv = box->argv.argv;
	o.program = program;
	o.envp = box->envp;
	o.input = input;
	o.input_len = input_len;
	o.out = (nv_proc_stream){NV_PROC_CAPTURE, box->out, out_cap, 0};
	o.err = (nv_proc_stream){NV_PROC_CAPTURE, box->out + out_cap,
				 SSH_STDERR_MAX, 0};
	o.timeout_s = timeout;
	o.own_group = 1;
	o.stop_at_cap = 1;
	if (nv_proc_run(&o, &r, NULL, &err) != 0)
		return push_error_reason(
			L, &err, err.code == NV_ENOTFOUND ? "no_ssh" : "ssh");
	if (r.timed_out) {
		nv_err_set(&err, NV_EBACKEND,
			   "check that the host answers (`navette doctor`), "
			   "or give the command more time",
			   "ssh to %s: no end within %.0f s", t.host, timeout);
		return push_error_reason(L, &err, "timeout");
	}
	if (r.err_dropped) {
		nv_err_set(&err, NV_ENOMEM, "ask for less",
			   "ssh to %s: the error output is over %zu bytes",
			   t.host, SSH_STDERR_MAX - 1);
		return push_error_reason(L, &err, "too_big");
	}
	rc = nv_ssh_frame_parse(box->out, r.out_len, nonce, r.out_dropped != 0,
				(size_t)max_output, &frame, &err);
	/* with no frame begun, ssh's own failure explains it best */
	if (rc && frame.problem == NV_SSH_FRAME_NO_BEGIN &&
	    (r.exit_status == 255 || !r.exited))
		return push_ssh_failure(L, &t, box->out + out_cap, r.err_len,
					nv_proc_status(&r));
	if (rc && r.err_len && frame.problem != NV_SSH_FRAME_TOO_BIG) {
		/* what ssh or the shell said is part of the story */
		char said[256];
		size_t at = strlen(err.message);

		nv_utf8_show(said, sizeof(said), box->out + out_cap,
			     r.err_len < 120 ? r.err_len : 120);
		snprintf(err.message + at, sizeof(err.message) - at,
			 " (ssh: status %d, said '%s')", nv_proc_status(&r),
			 said);
	}
	if (rc)
		return push_error_reason(
			L, &err,
			frame.problem == NV_SSH_FRAME_TOO_BIG  ? "too_big"
			: frame.problem == NV_SSH_FRAME_NO_END ? "cut"
							       : "no_frame");
	lua_createtable(L, 0, 3); // [args, .., command, box, result]
	lua_pushinteger(L, frame.status);
	lua_setfield(L, -2, "status");
	lua_pushlstring(L, frame.output, frame.output_len);
	lua_setfield(L, -2, "stdout");
	lua_pushlstring(L, box->out + out_cap, r.err_len);
	lua_setfield(L, -2, "stderr");
	return 1;
}

static int l_ssh_fingerprint(lua_State *L)
{
	size_t len;
	const char *line = luaL_checklstring(L, 1, &len);
	char fp[NV_SSH_FINGERPRINT_MAX];
	nv_err err;
	int rc;

	rc = nv_ssh_fingerprint(line, len, fp, &err);
	return nv_lua_string_result(L, rc, fp, &err);
}

static int l_ssh_known_hosts_line(lua_State *L)
{
	const char *host = luaL_checkstring(L, 1);
	int port = (int)nv_lua_checkrange(L, 2, 1, 65535,
					  "ssh.known_hosts_line: port");
	const char *type = luaL_checkstring(L, 3);
	const char *b64 = luaL_checkstring(L, 4);
	char *line;
	nv_err err;
	int rc;

	line = lua_newuserdatauv(L, NV_SSH_KNOWN_HOSTS_LINE_MAX, 0);
	rc = nv_ssh_known_hosts_line(host, port, type, b64, line,
				     NV_SSH_KNOWN_HOSTS_LINE_MAX, &err);
	return nv_lua_string_result(L, rc, line, &err);
}

/* Runs argv (bounded output, timeout_s) into out (cap bytes): 0 with
 * *status and *len, or an error pushed (returns its count). */
static int run_tool(lua_State *L, const char *program, const char **argv,
		    double timeout_s, char *out, size_t cap, size_t *len,
		    int *status)
{
	nv_proc_opts o = {0};
	nv_proc_result r;
	nv_err err;

	o.argv = argv;
	o.program = program;
	o.out = (nv_proc_stream){NV_PROC_CAPTURE, out, cap, 0};
	o.err = (nv_proc_stream){NV_PROC_NULL, NULL, 0, 0};
	o.timeout_s = timeout_s;
	o.own_group = 1;
	o.stop_at_cap = 1;
	if (nv_proc_run(&o, &r, NULL, &err) != 0)
		return push_error_reason(L, &err, "ssh");
	if (r.timed_out) {
		nv_err_set(&err, NV_EBACKEND,
			   "check the host and port of the profile",
			   "%s: no answer within %.0f s", argv[0], timeout_s);
		return push_error_reason(L, &err, "unreachable");
	}
	*len = r.out_len;
	*status = nv_proc_status(&r);
	return 0;
}

/* ssh.scan{host=, port=22, timeout=15} -> "known_hosts lines" | nil, err:
 * the host keys the host shows (ssh-keyscan: a key exchange, no login, no
 * command), for the caller to compare with its pin. ssh-keyscan is
 * NAVETTE_SSH_KEYSCAN when set, else from PATH. */
static int l_ssh_scan(lua_State *L)
{
	char program[4096], port[16], timeout[16], *out;
	const char *argv[10], *host;
	size_t len = 0, cap = 256 * 1024;
	int p, status = 0, n;
	lua_Integer t;
	nv_err err;

	luaL_checktype(L, 1, LUA_TTABLE);
	host = need_string(L, 1, "host");
	lua_getfield(L, 1, "port");
	p = (int)nv_lua_optrange(L, -1, 1, 65535, 22, "ssh.scan: port");
	lua_getfield(L, 1, "timeout");
	t = nv_lua_optrange(L, -1, 1, 600, 15, "ssh.scan: timeout");
	if (nv_ssh_check_host("host", host, &err))
		return push_error_reason(L, &err, "ssh");
	if (nv_exec_forbidden(L)) {
		nv_err_set(&err, NV_ENOTRUN, NULL,
			   "ssh-keyscan of %s not run (plan mode or a "
			   "read-only command)",
			   host);
		return push_error_reason(L, &err, "not_run");
	}
	if (openssh_program("ssh-keyscan", "NAVETTE_SSH_KEYSCAN", program,
			    sizeof(program), &err))
		return push_error_reason(L, &err, "no_ssh");
	snprintf(port, sizeof(port), "%d", p);
	snprintf(timeout, sizeof(timeout), "%d", (int)t);
	n = 0;
	argv[n++] = program;
	argv[n++] = "-p";
	argv[n++] = port;
	argv[n++] = "-T";
	argv[n++] = timeout;
	argv[n++] = "--";
	argv[n++] = host;
	argv[n] = NULL;
	out = lua_newuserdatauv(L, cap, 0);
	if ((n = run_tool(L, program, argv, (double)t + 5, out, cap, &len,
			  &status)))
		return n;
	if (len == 0) {
		nv_err_set(&err, NV_EBACKEND,
			   "check the host and port of the profile, and the "
			   "network",
			   "ssh: %s port %d showed no host key (ssh-keyscan, "
			   "status %d)",
			   host, p, status);
		return push_error_reason(L, &err, "unreachable");
	}
	lua_pushlstring(L, out, len);
	return 1;
}

/* ssh.probe{host=, port=22, user=, known_hosts=, timeout=30} -> {status,
 * stderr} | nil, err. ssh is NAVETTE_SSH when set, else from PATH. */
static int l_ssh_probe(lua_State *L)
{
	char program[4096], *errbuf;
	nv_ssh_target t;
	nv_ssh_argv *argv;
	nv_proc_opts o = {0};
	nv_proc_result r;
	lua_Integer timeout;
	nv_err err;

	luaL_checktype(L, 1, LUA_TTABLE);
	memset(&t, 0, sizeof(t));
	t.host = need_string(L, 1, "host");
	t.user = need_string(L, 1, "user");
	t.known_hosts = need_string(L, 1, "known_hosts");
	lua_getfield(L, 1, "port");
	t.port = (int)nv_lua_optrange(L, -1, 1, 65535, 22, "ssh.probe: port");
	lua_getfield(L, 1, "timeout");
	timeout = nv_lua_optrange(L, -1, 1, 600, 30, "ssh.probe: timeout");
	t.connect_timeout_s = (int)timeout;
	if (nv_exec_forbidden(L)) {
		nv_err_set(&err, NV_ENOTRUN, NULL,
			   "ssh to %s not run (plan mode or a read-only "
			   "command)",
			   t.host);
		return push_error_reason(L, &err, "not_run");
	}
	if (openssh_program("ssh", "NAVETTE_SSH", program, sizeof(program),
			    &err))
		return push_error_reason(L, &err, "no_ssh");
	argv = lua_newuserdatauv(L, sizeof(*argv) + SSH_STDERR_MAX, 0);
	errbuf = (char *)(argv + 1);
	if (nv_ssh_build_probe_argv(&t, program, argv, &err))
		return push_error_reason(L, &err, "ssh");
	o.argv = argv->argv;
	o.program = program;
	o.out = (nv_proc_stream){NV_PROC_NULL, NULL, 0, 0};
	o.err = (nv_proc_stream){NV_PROC_CAPTURE, errbuf, SSH_STDERR_MAX, 0};
	o.timeout_s = (double)timeout + 5;
	o.own_group = 1;
	o.stop_at_cap = 1;
	if (nv_proc_run(&o, &r, NULL, &err) != 0)
		return push_error_reason(
			L, &err, err.code == NV_ENOTFOUND ? "no_ssh" : "ssh");
	if (r.timed_out) {
		nv_err_set(&err, NV_EBACKEND,
			   "check the host and port of the profile, and the "
			   "network",
			   "ssh to %s port %d: no end within %.0f s", t.host,
			   t.port, o.timeout_s);
		return push_error_reason(L, &err, "unreachable");
	}
	lua_createtable(L, 0, 2);
	lua_pushinteger(L, nv_proc_status(&r));
	lua_setfield(L, -2, "status");
	lua_pushlstring(L, errbuf, r.err_len);
	lua_setfield(L, -2, "stderr");
	return 1;
}

/* ssh.exit_master(control_path) -> true: asks the ControlMaster listening
 * at control_path to end (ssh -O exit); none listening is not an error. */
static int l_ssh_exit_master(lua_State *L)
{
	const char *path = luaL_checkstring(L, 1), *argv[12];
	char program[4096], option[NV_SSH_PATH_MAX + 32], out[256];
	size_t len;
	int status, n;
	nv_err err;

	if (nv_ssh_check_path("control_path", path, NV_SSH_CONTROL_PATH_MAX,
			      &err))
		return push_error_reason(L, &err, "ssh");
	if (strpbrk(path, "%\" \\")) {
		nv_err_set(&err, NV_EINVAL, NULL,
			   "ssh: control_path holds %%, a quote or a space");
		return push_error_reason(L, &err, "ssh");
	}
	if (nv_exec_forbidden(L)) {
		lua_pushboolean(L, 1);
		return 1;
	}
	if (openssh_program("ssh", "NAVETTE_SSH", program, sizeof(program),
			    &err)) {
		lua_pushboolean(L, 1); /* no ssh: no master either */
		return 1;
	}
	snprintf(option, sizeof(option), "ControlPath=%s", path);
	n = 0;
	argv[n++] = program;
	argv[n++] = "-F";
	argv[n++] = "none";
	argv[n++] = "-o";
	argv[n++] = option;
	argv[n++] = "-o";
	argv[n++] = "LogLevel=QUIET";
	argv[n++] = "-O";
	argv[n++] = "exit";
	argv[n++] = "--";
	argv[n++] = "navette-master";
	argv[n] = NULL;
	if ((n = run_tool(L, program, argv, 10, out, sizeof(out), &len,
			  &status)))
		return n;
	lua_pushboolean(L, 1);
	return 1;
}

/* ssh.keygen(words[, stdin]) -> {status, stdout, stderr} | nil, err: runs
 * OpenSSH's ssh-keygen (NAVETTE_SSH_KEYGEN when set, else from PATH) with
 * words as its arguments and stdin as its input (none: /dev/null), in
 * the C locale and UTC (so that -L shows times in UTC). The team layer's
 * certificates and KRL (sign, ssh-keygen -k, -Q). Where programs may not
 * run (plan mode, a read-only command), only the reading words -Q, -L
 * and -y run: they change nothing. */
static int l_ssh_keygen(lua_State *L)
{
	enum { WORDS_MAX = 32, OUT_CAP = 1024 * 1024, ERR_CAP = 16 * 1024 };
	const char *argv[WORDS_MAX + 2], *envp[4], *input = NULL, *path;
	char program[4096], path_env[4096 + 8], *out;
	size_t nwords, input_len = 0;
	nv_proc_opts o = {0};
	nv_proc_result r;
	nv_err err;

	luaL_checktype(L, 1, LUA_TTABLE);
	nwords = lua_rawlen(L, 1);
	luaL_argcheck(L, nwords >= 1 && nwords <= WORDS_MAX, 1,
		      "ssh.keygen: 1 to 32 words");
	if (!lua_isnoneornil(L, 2))
		input = luaL_checklstring(L, 2, &input_len);
	for (size_t i = 0; i < nwords; i++) {
		lua_rawgeti(L, 1, (lua_Integer)i + 1);
		luaL_argcheck(L, lua_type(L, -1) == LUA_TSTRING, 1,
			      "ssh.keygen: words are strings");
		/* anchored by the table at 1 */
		argv[i + 1] = lua_tostring(L, -1);
		lua_pop(L, 1);
	}
	argv[nwords + 1] = NULL;
	if (nv_exec_forbidden(L) && strcmp(argv[1], "-Q") != 0 &&
	    strcmp(argv[1], "-L") != 0 && strcmp(argv[1], "-y") != 0) {
		nv_err_set(&err, NV_ENOTRUN, NULL,
			   "ssh-keygen %s not run (plan mode or a read-only "
			   "command)",
			   argv[1]);
		return push_error_reason(L, &err, "not_run");
	}
	if (openssh_program("ssh-keygen", "NAVETTE_SSH_KEYGEN", program,
			    sizeof(program), &err))
		return push_error_reason(L, &err, "no_ssh");
	argv[0] = program;
	path = getenv("PATH");
	snprintf(path_env, sizeof(path_env), "PATH=%s",
		 path ? path : "/usr/bin:/bin");
	envp[0] = path_env;
	envp[1] = "TZ=UTC0";
	envp[2] = "LC_ALL=C";
	envp[3] = NULL;
	out = lua_newuserdatauv(L, OUT_CAP + ERR_CAP, 0);
	o.argv = argv;
	o.program = program;
	o.envp = (char *const *)envp;
	o.input = input;
	o.input_len = input_len;
	o.out = (nv_proc_stream){NV_PROC_CAPTURE, out, OUT_CAP, 0};
	o.err = (nv_proc_stream){NV_PROC_CAPTURE, out + OUT_CAP, ERR_CAP, 0};
	o.timeout_s = 30;
	o.own_group = 1;
	o.stop_at_cap = 1;
	if (nv_proc_run(&o, &r, NULL, &err) != 0)
		return push_error_reason(L, &err, "ssh");
	if (r.timed_out || r.over_cap) {
		nv_err_set(&err, NV_EBACKEND,
			   "run the same ssh-keygen by hand to see why",
			   "ssh-keygen %s: %s", argv[1],
			   r.timed_out ? "no end within 30 s"
				       : "its output is too big");
		return push_error_reason(L, &err, "ssh");
	}
	lua_createtable(L, 0, 3);
	lua_pushinteger(L, nv_proc_status(&r));
	lua_setfield(L, -2, "status");
	lua_pushlstring(L, out, r.out_len);
	lua_setfield(L, -2, "stdout");
	lua_pushlstring(L, out + OUT_CAP, r.err_len);
	lua_setfield(L, -2, "stderr");
	return 1;
}

int luaopen_navette_ssh(lua_State *L)
{
	static const luaL_Reg fns[] = {
		{"run", l_ssh_run},
		{"fingerprint", l_ssh_fingerprint},
		{"known_hosts_line", l_ssh_known_hosts_line},
		{"scan", l_ssh_scan},
		{"probe", l_ssh_probe},
		{"exit_master", l_ssh_exit_master},
		{"keygen", l_ssh_keygen},
		{NULL, NULL}};
	luaL_newlib(L, fns);
	return 1;
}
