/* _navette.ssh_cert: an ssh-cert credential's key and certificate as ssh
 * needs them, and a fresh certificate from a signer. The key and the
 * certificate stay in C (a credential handle); Lua gets paths and
 * metadata only.
 *
 * ssh_cert.write_identity(handle, dir) -> {identity = path, certificate =
 *   path | nil} | nil, err: the key (and certificate) written 0600, with
 *   O_EXCL and random names, into dir (the caller's 0700 folder), for ssh
 *   to read at its login; the caller removes them once it has.
 * ssh_cert.public_key(handle) -> "TYPE BASE64": the key's public part
 *   (from its certificate, else from the key file's clear header).
 * ssh_cert.sign(handle, {command = {argv...}} | {ca = handle, key_id =,
 *   principals = {...}, lifetime = seconds, serial = n, dir = path})
 *   -> a new handle (the same key, the new certificate) | nil, err.
 *   command: runs argv (no shell) with the public key on its standard
 *   input and in NAVETTE_SSH_PUBKEY; it prints {"Version": 1,
 *   "Certificate": "..."}. ca: runs `ssh-keygen -s CA -I key_id -n
 *   principals -V -5m:+lifetime -z serial -O clear KEY.pub` in a new 0700
 *   folder under dir, holding the CA key 0600 for that one call. The new
 *   certificate must be a user certificate for the same key; its validity
 *   is read from it. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <lauxlib.h>
#include <lua.h>
#include <openssl/crypto.h>

#include "core/clock.h"
#include "core/fsutil.h"
#include "core/nv_lua.h"
#include "core/proc.h"
#include "creds/creds_lua.h"
#include "creds/source.h"
#include "ssh/ssh_cert.h"

extern char **environ;

#define SIGNER_OUTPUT_MAX ((size_t)64 * 1024)
#define SIGNER_TIMEOUT_S  60
#define SIGNER_ARGV_MAX   32
#define SIGNER_ENV_MAX    4096

/* Writes len bytes to a new file (O_EXCL, 0600). */
static int write_new(const char *path, const void *data, size_t len,
		     nv_err *err)
{
	int fd =
		open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
		     0600);
	int rc;

	if (fd < 0)
		return nv_err_set_errno(err, NV_EIO, errno, NULL,
					"cannot create %s", path);
	rc = nv_write_all(fd, data, len);
	if (close(fd) != 0 || rc != 0) {
		unlink(path);
		return nv_err_set(err, NV_EIO, NULL, "cannot write %s", path);
	}
	return 0;
}

/* The value of field with a final newline (an OpenSSH key file wants one),
 * written to path. */
static int write_field(const char *path, const nv_secret_field *f, nv_err *err)
{
	int rc = write_new(path, f->value, f->len, err);

	if (!rc && f->len && f->value[f->len - 1] != '\n') {
		int fd = open(path,
			      O_WRONLY | O_APPEND | O_NOFOLLOW | O_CLOEXEC);
		rc = fd < 0 || nv_write_all(fd, "\n", 1) != 0;
		if (fd >= 0)
			close(fd);
		if (rc)
			rc = nv_err_set(err, NV_EIO, NULL, "cannot write %s",
					path);
	}
	return rc;
}

static int l_ssh_cert_write_identity(lua_State *L)
{
	const nv_secret *s = nv_creds_check(L, 1);
	const char *dir = luaL_checkstring(L, 2);
	const nv_secret_field *key = nv_secret_get(s, "key");
	const nv_secret_field *cert = nv_secret_get(s, "certificate");
	char rnd[17], kp[1024], cp[1100];
	nv_err err;

	luaL_argcheck(L, s->kind == NV_SECRET_SSH_CERT && key, 1,
		      "an ssh-cert credential");
	if (nv_random_hex(rnd, 8, &err) != 0)
		return nv_lua_push_error(L, &err);
	if ((size_t)snprintf(kp, sizeof(kp), "%s/id-%s", dir, rnd) >=
	    sizeof(kp))
		return luaL_argerror(L, 2, "too long");
	snprintf(cp, sizeof(cp), "%s-cert.pub", kp);
	if (write_field(kp, key, &err) != 0)
		return nv_lua_push_error(L, &err);
	if (cert && write_field(cp, cert, &err) != 0) {
		unlink(kp);
		return nv_lua_push_error(L, &err);
	}
	lua_createtable(L, 0, 2);
	lua_pushstring(L, kp);
	lua_setfield(L, -2, "identity");
	if (cert) {
		lua_pushstring(L, cp);
		lua_setfield(L, -2, "certificate");
	}
	return 1;
}

/* The public key line of s into out. */
static int public_of(const nv_secret *s, char *out, size_t cap, nv_err *err)
{
	const nv_secret_field *key = nv_secret_get(s, "key");
	const nv_secret_field *cert = nv_secret_get(s, "certificate");
	nv_ssh_cert c;

	if (cert && nv_ssh_cert_parse((const char *)cert->value, cert->len, &c,
				      out, cap, err) == 0)
		return 0;
	if (key && nv_ssh_private_key_public((const char *)key->value, key->len,
					     out, cap, err) == 0)
		return 0;
	return nv_err_set(err, NV_EREFUSED,
			  "an ssh-cert's key must be in the OpenSSH format "
			  "(ssh-keygen -t ed25519), or come with a "
			  "certificate",
			  "credential %s: its public key cannot be read",
			  s->name);
}

static int l_ssh_cert_public_key(lua_State *L)
{
	const nv_secret *s = nv_creds_check(L, 1);
	char line[NV_SSH_PUBLIC_LINE_MAX];
	nv_err err;

	if (public_of(s, line, sizeof(line), &err) != 0)
		return nv_lua_push_error(L, &err);
	lua_pushstring(L, line);
	return 1;
}

/* Runs argv (envp: NULL for ours), input on stdin; its stdout into out
 * (cap bytes, NUL-ended). */
static int run_signer(const char *const *argv, char *const *envp,
		      const char *cwd, const char *input, char *out, size_t cap,
		      size_t *len, nv_err *err)
{
	nv_proc_opts o = {0};
	nv_proc_result r;
	int why = 0;

	o.argv = argv;
	o.search_path = 1;
	o.envp = envp;
	o.cwd = cwd;
	o.input = input;
	o.input_len = input ? strlen(input) : 0;
	o.out = (nv_proc_stream){NV_PROC_CAPTURE, out, cap, 0};
	o.err.to = NV_PROC_INHERIT;
	o.timeout_s = SIGNER_TIMEOUT_S;
	o.own_group = 1;
	o.stop_at_cap = 1;
	if (nv_proc_run(&o, &r, &why, err) != 0)
		return why ? nv_err_set(err, NV_EREFUSED,
					"check that it is installed and on "
					"PATH",
					"the ssh signer %s cannot run: %s",
					argv[0], strerror(why))
			   : err->code;
	if (r.timed_out || r.over_cap || !r.exited || r.exit_status != 0)
		return nv_err_set(err, NV_EREFUSED, "run it by hand to see why",
				  "the ssh signer %s failed (%s)", argv[0],
				  r.timed_out  ? "no end within 60 s"
				  : r.over_cap ? "too much output"
					       : "a non-zero exit status");
	*len = r.out_len;
	return 0;
}

/* A new handle at the top of the stack holding s's key and cert (len
 * bytes). */
static int push_renewed(lua_State *L, const nv_secret *s, const char *cert,
			size_t len, const char *how)
{
	nv_secret **slot = nv_creds_push_slot(L); // [.., handle]
	const nv_secret_field *key = nv_secret_get(s, "key");
	nv_secret *n;
	nv_err err;

	while (len && (cert[len - 1] == '\n' || cert[len - 1] == '\r' ||
		       cert[len - 1] == ' '))
		len--;
	n = nv_secret_new(s->name, NV_SECRET_SSH_CERT, s->source, &err);
	if (!n)
		return nv_lua_push_error(L, &err);
	*slot = n; /* owned by the handle from here on */
	snprintf(n->origin, sizeof(n->origin), "%.200s, certificate from %s",
		 s->origin, how);
	n->loaded_at = nv_now();
	n->created_at = n->loaded_at;
	if (nv_secret_set(n, "key", key->value, key->len, &err) != 0 ||
	    nv_secret_set(n, "certificate", cert, len, &err) != 0 ||
	    nv_creds_ssh_cert_check(n, &err) != 0)
		return nv_lua_push_error(L, &err);
	nv_secret_announce(n);
	return 1;
}

/* {command = {...}}: the signer's JSON on its stdout. */
static int sign_by_command(lua_State *L, const nv_secret *s, const char *pub)
{
	const char *argv[SIGNER_ARGV_MAX + 1];
	char *envp[SIGNER_ENV_MAX + 2], *out, *var;
	size_t n = 0, len = 0, nargs;
	cJSON *o, *c;
	nv_err err;
	int rc;

	lua_getfield(L, 2, "command"); // [.., argv]
	nargs = lua_rawlen(L, -1);
	luaL_argcheck(L, nargs >= 1 && nargs <= SIGNER_ARGV_MAX, 2,
		      "command has 1 to 32 words");
	for (size_t i = 0; i < nargs; i++) {
		lua_rawgeti(L, -1, (lua_Integer)i + 1);
		argv[i] = luaL_checkstring(L, -1);
		lua_pop(L, 1); /* anchored by the table */
	}
	argv[nargs] = NULL;
	lua_pushfstring(L, "NAVETTE_SSH_PUBKEY=%s", pub); // [.., var]
	var = (char *)lua_tostring(L, -1);
	for (char **e = environ; e && *e && n < SIGNER_ENV_MAX; e++)
		if (strncmp(*e, "NAVETTE_SSH_PUBKEY=", 19) != 0)
			envp[n++] = *e;
	envp[n++] = var;
	envp[n] = NULL;
	out = lua_newuserdatauv(L, SIGNER_OUTPUT_MAX + 1, 0); // [.., out]
	lua_pushfstring(L, "%s\n", pub);
	rc = run_signer(argv, envp, NULL, lua_tostring(L, -1), out,
			SIGNER_OUTPUT_MAX + 1, &len, &err);
	lua_pop(L, 1);
	if (rc)
		return nv_lua_push_error(L, &err);
	o = cJSON_ParseWithLength(out, len);
	OPENSSL_cleanse(out, len);
	c = cJSON_GetObjectItemCaseSensitive(o, "Certificate");
	if (!cJSON_IsString(c)) {
		cJSON_Delete(o);
		nv_err_set(&err, NV_EREFUSED,
			   "it must print {\"Version\": 1, \"Certificate\": "
			   "\"ssh-...-cert-v01@openssh.com AAAA...\"}",
			   "the ssh signer %s printed no \"Certificate\"",
			   argv[0]);
		return nv_lua_push_error(L, &err);
	}
	/* the certificate is copied into the handle before cJSON's is freed;
	 * push_renewed raises nothing before that copy is owned */
	luaL_checkstack(L, 8, NULL);
	lua_pushstring(L, c->valuestring); // [.., out, cert]
	cJSON_Delete(o);
	return push_renewed(L, s, lua_tostring(L, -1), lua_rawlen(L, -1),
			    argv[0]);
}

/* {ca = handle, ...}: ssh-keygen -s in a new 0700 folder under dir. */
static int sign_by_ca(lua_State *L, const nv_secret *s, const char *pub)
{
	const nv_secret *ca;
	const nv_secret_field *ca_key;
	const char *key_id, *dir, *argv[20];
	char folder[1024], ca_path[1100], pub_path[1100], cert_path[1100];
	char validity[64], serial[32], principals[2048], *out;
	lua_Integer lifetime, serial_n;
	size_t len = 0, used = 0, np;
	nv_err err;
	int rc, n = 0;

	lua_getfield(L, 2, "ca"); // [.., ca]
	ca = nv_creds_check(L, -1);
	ca_key = nv_secret_get(ca, "key");
	luaL_argcheck(L, ca_key != NULL, 2, "ca: a pem or ssh-cert credential");
	lua_getfield(L, 2, "key_id");
	key_id = luaL_checkstring(L, -1);
	lua_getfield(L, 2, "dir");
	dir = luaL_checkstring(L, -1);
	lua_getfield(L, 2, "lifetime");
	lifetime = nv_lua_optrange(L, -1, 60, 366 * 86400, 3600,
				   "ssh_cert.sign: lifetime");
	lua_getfield(L, 2, "serial");
	serial_n = nv_lua_optrange(L, -1, 0, LUA_MAXINTEGER, 0,
				   "ssh_cert.sign: serial");
	lua_getfield(L, 2, "principals"); // [.., principals]
	np = lua_rawlen(L, -1);
	luaL_argcheck(L, np >= 1 && np <= NV_SSH_CERT_PRINCIPALS_MAX, 2,
		      "principals: 1 to 32 names");
	for (size_t i = 0; i < np; i++) {
		lua_rawgeti(L, -1, (lua_Integer)i + 1);
		const char *p = luaL_checkstring(L, -1);
		luaL_argcheck(L, *p && !strpbrk(p, ", \t\n") && *p != '-', 2,
			      "principals: names without commas or blanks");
		used += (size_t)snprintf(principals + used,
					 sizeof(principals) > used
						 ? sizeof(principals) - used
						 : 0,
					 "%s%s", i ? "," : "", p);
		lua_pop(L, 1);
	}
	luaL_argcheck(L, used < sizeof(principals), 2, "principals: too long");
	luaL_argcheck(L, *key_id && *key_id != '-', 2, "key_id");
	if ((size_t)snprintf(folder, sizeof(folder), "%s/sign-XXXXXX", dir) >=
	    sizeof(folder))
		return luaL_argerror(L, 2, "dir: too long");
	if (!mkdtemp(folder)) {
		nv_err_set_errno(&err, NV_EIO, errno, NULL,
				 "cannot make a folder in %s", dir);
		return nv_lua_push_error(L, &err);
	}
	snprintf(ca_path, sizeof(ca_path), "%s/ca", folder);
	snprintf(pub_path, sizeof(pub_path), "%s/key.pub", folder);
	snprintf(cert_path, sizeof(cert_path), "%s/key-cert.pub", folder);
	snprintf(validity, sizeof(validity), "-5m:+%llds", (long long)lifetime);
	snprintf(serial, sizeof(serial), "%lld", (long long)serial_n);
	out = lua_newuserdatauv(L, SIGNER_OUTPUT_MAX + 1, 0); // [.., out]
	rc = write_field(ca_path, ca_key, &err);
	if (!rc) {
		lua_pushfstring(L, "%s\n", pub);
		rc = write_new(pub_path, lua_tostring(L, -1), lua_rawlen(L, -1),
			       &err);
		lua_pop(L, 1);
	}
	if (!rc) {
		argv[n++] = "ssh-keygen";
		argv[n++] = "-q";
		argv[n++] = "-s";
		argv[n++] = ca_path;
		argv[n++] = "-I";
		argv[n++] = key_id;
		argv[n++] = "-n";
		argv[n++] = principals;
		argv[n++] = "-V";
		argv[n++] = validity;
		argv[n++] = "-z";
		argv[n++] = serial;
		argv[n++] = "-O";
		argv[n++] = "clear";
		argv[n++] = pub_path;
		argv[n] = NULL;
		rc = run_signer(argv, NULL, folder, NULL, out,
				SIGNER_OUTPUT_MAX + 1, &len, &err);
	}
	/* the CA key is on disk for this one call only */
	unlink(ca_path);
	unlink(pub_path);
	if (!rc) {
		char *text = NULL;
		rc = nv_read_file(&text, &len, cert_path, SIGNER_OUTPUT_MAX,
				  &err);
		if (!rc) {
			memcpy(out, text, len);
			free(text);
		}
	}
	unlink(cert_path);
	rmdir(folder);
	if (rc)
		return nv_lua_push_error(L, &err);
	return push_renewed(L, s, out, len, "the team's CA");
}

static int l_ssh_cert_sign(lua_State *L)
{
	const nv_secret *s = nv_creds_check(L, 1);
	char pub[NV_SSH_PUBLIC_LINE_MAX];
	nv_err err;

	luaL_checktype(L, 2, LUA_TTABLE);
	luaL_checkstack(L, 24, "ssh_cert.sign");
	luaL_argcheck(L, s->kind == NV_SECRET_SSH_CERT, 1,
		      "an ssh-cert credential");
	if (nv_exec_forbidden(L)) {
		nv_err_set(&err, NV_ENOTRUN, NULL,
			   "the ssh signer was not run (plan mode or a "
			   "read-only command)");
		return nv_lua_push_error(L, &err);
	}
	if (public_of(s, pub, sizeof(pub), &err) != 0)
		return nv_lua_push_error(L, &err);
	lua_getfield(L, 2, "command");
	if (lua_istable(L, -1)) {
		lua_pop(L, 1);
		return sign_by_command(L, s, pub);
	}
	lua_pop(L, 1);
	return sign_by_ca(L, s, pub);
}

int luaopen_navette_ssh_cert(lua_State *L)
{
	static const luaL_Reg fns[] = {
		{"write_identity", l_ssh_cert_write_identity},
		{"public_key", l_ssh_cert_public_key},
		{"sign", l_ssh_cert_sign},
		{NULL, NULL}};
	luaL_newlib(L, fns);
	return 1;
}
