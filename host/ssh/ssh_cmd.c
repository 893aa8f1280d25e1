/* See ssh_cmd.h. ssh reads an -o value as its config parser reads a line
 * (OpenSSH 8.7 and later): words split at blanks unless in quotes, a
 * backslash escaping a quote or itself, and %-tokens expanded in the
 * paths. So a path is given in double quotes with " and \ escaped and %
 * doubled, and must be absolute (no ~ expansion, no "none"). A host or a
 * user is checked against the characters names are made of instead: ssh
 * reads "a@b" or "-oX" in them as more than a name. */
#include "ssh/ssh_cmd.h"

#include <stdio.h>
#include <string.h>

#include "core/hex.h"

/* ssh's own default for ServerAliveInterval is none: a dead link would
 * then hang until the caller's time limit. */
#define SERVER_ALIVE_DEFAULT 15
#define HOST_MAX             253
#define USER_MAX             64

static int is_name_char(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c >= '0' && c <= '9') || c == '.' || c == '-' || c == '_';
}

int nv_ssh_check_host(const char *field, const char *host, nv_err *err)
{
	size_t n = host ? strlen(host) : 0;

	if (n == 0 || n > HOST_MAX)
		return nv_err_set(err, NV_EINVAL,
				  "give a host name or address, without "
				  "user@ or :port",
				  "ssh: %s must be 1 to %d characters", field,
				  HOST_MAX);
	if (host[0] == '-')
		return nv_err_set(err, NV_EINVAL, NULL,
				  "ssh: %s must not start with '-' (ssh would "
				  "read it as an option)",
				  field);
	for (size_t i = 0; i < n; i++)
		if (!is_name_char((unsigned char)host[i]) && host[i] != ':')
			return nv_err_set(
				err, NV_EINVAL,
				"a host is letters, digits, '.', '-', '_' "
				"and ':' (IPv6); give the port on its own",
				"ssh: %s holds a character ssh would misread "
				"(byte %zu, 0x%02x)",
				field, i + 1, (unsigned char)host[i]);
	return 0;
}

int nv_ssh_check_user(const char *field, const char *user, nv_err *err)
{
	size_t n = user ? strlen(user) : 0;

	if (n == 0 || n > USER_MAX)
		return nv_err_set(err, NV_EINVAL, "give the login's name",
				  "ssh: %s must be 1 to %d characters", field,
				  USER_MAX);
	if (user[0] == '-')
		return nv_err_set(err, NV_EINVAL, NULL,
				  "ssh: %s must not start with '-' (ssh would "
				  "read it as an option)",
				  field);
	for (size_t i = 0; i < n; i++)
		if (!is_name_char((unsigned char)user[i]) && user[i] != '@')
			return nv_err_set(
				err, NV_EINVAL,
				"a login is letters, digits, '.', '-', '_' "
				"and '@'",
				"ssh: %s holds a character ssh would misread "
				"(byte %zu, 0x%02x)",
				field, i + 1, (unsigned char)user[i]);
	return 0;
}

int nv_ssh_check_path(const char *field, const char *path, size_t max,
		      nv_err *err)
{
	size_t n = path ? strlen(path) : 0;

	if (n == 0 || path[0] != '/')
		return nv_err_set(err, NV_EINVAL,
				  "navette gives ssh absolute paths only (no "
				  "~, no relative path)",
				  "ssh: %s must be an absolute path", field);
	if (n > max)
		return nv_err_set(
			err, NV_EINVAL,
			max == NV_SSH_CONTROL_PATH_MAX
				? "ssh adds 17 bytes to it and a Unix "
				  "socket's path holds 103 on macOS: "
				  "use a shorter runtime folder"
				: NULL,
			"ssh: %s is %zu bytes long, over the %zu "
			"allowed",
			field, n, max);
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)path[i] < 0x20 || path[i] == 0x7f)
			return nv_err_set(err, NV_EINVAL, NULL,
					  "ssh: %s holds a control byte (byte "
					  "%zu, 0x%02x)",
					  field, i + 1, (unsigned char)path[i]);
	return 0;
}

/* Appends len bytes of s to out; NV_ENOMEM when they do not fit. */
static int put(char *out, size_t cap, size_t *at, const char *s, size_t len,
	       nv_err *err)
{
	if (cap == 0 || len >= cap - *at)
		return nv_err_set(
			err, NV_ENOMEM, "shorten the command or its arguments",
			"ssh: the command line is over %zu bytes", cap);
	memcpy(out + *at, s, len);
	*at += len;
	out[*at] = '\0';
	return 0;
}

static int put_str(char *out, size_t cap, size_t *at, const char *s,
		   nv_err *err)
{
	return put(out, cap, at, s, strlen(s), err);
}

int nv_ssh_quote_word(const char *word, size_t len, char *out, size_t cap,
		      size_t *out_len, nv_err *err)
{
	int open = 0, rc = 0;

	if (memchr(word, '\0', len))
		return nv_err_set(err, NV_EINVAL,
				  "a command's arguments cannot hold NUL "
				  "bytes",
				  "ssh: a word of the remote command holds a "
				  "NUL byte");
	if (len == 0)
		return put(out, cap, out_len, "''", 2, err);
	for (size_t i = 0; i < len && !rc; i++) {
		if (word[i] == '\'' || word[i] == '\\') {
			if (open)
				rc = put(out, cap, out_len, "'", 1, err);
			open = 0;
			if (!rc)
				rc = put(out, cap, out_len,
					 word[i] == '\'' ? "\\'" : "\\\\", 2,
					 err);
			continue;
		}
		if (!open)
			rc = put(out, cap, out_len, "'", 1, err);
		open = 1;
		if (!rc)
			rc = put(out, cap, out_len, word + i, 1, err);
	}
	if (!rc && open)
		rc = put(out, cap, out_len, "'", 1, err);
	return rc;
}

int nv_ssh_remote_command(const char *const *words, const size_t *lens,
			  size_t n, const char *nonce, char *out, size_t cap,
			  nv_err *err)
{
	/* the script is built in the second half of out, then quoted into
	 * the first: no buffer of our own, and both bounded by cap */
	size_t half = cap / 2, at = 0, script_len = 0;
	char *script = out + half;
	int rc = 0;

	if (cap < 4)
		return nv_err_set(err, NV_ENOMEM, NULL, "ssh: no room");
	if (n == 0)
		return nv_err_set(err, NV_EINVAL, NULL,
				  "ssh: the remote command is empty");
	if (!nonce || strlen(nonce) != NV_SSH_NONCE_LEN ||
	    !nv_hex_is_lower(nonce, NV_SSH_NONCE_LEN))
		return nv_err_set(err, NV_EINVAL, NULL,
				  "ssh: a frame's nonce is %d hex digits",
				  NV_SSH_NONCE_LEN);
	script[0] = '\0';
	/* a newline first: a profile's text that does not end its line
	 * would otherwise hide the BEGIN line in its own */
	rc = put_str(script, cap - half, &script_len,
		     "printf '\\n%s\\n' 'NAVETTE-BEGIN-", err);
	if (!rc)
		rc = put_str(script, cap - half, &script_len, nonce, err);
	if (!rc)
		rc = put_str(script, cap - half, &script_len, "'; ", err);
	for (size_t i = 0; i < n && !rc; i++) {
		if (i)
			rc = put(script, cap - half, &script_len, " ", 1, err);
		if (!rc)
			rc = nv_ssh_quote_word(words[i], lens[i], script,
					       cap - half, &script_len, err);
	}
	/* the END line on a line of its own even when the output does not
	 * end in a newline: the parser takes that one newline back */
	if (!rc)
		rc = put_str(script, cap - half, &script_len,
			     "; rc=$?; printf '\\n%s %d\\n' 'NAVETTE-END-",
			     err);
	if (!rc)
		rc = put_str(script, cap - half, &script_len, nonce, err);
	if (!rc)
		rc = put_str(script, cap - half, &script_len, "' \"$rc\"", err);
	if (!rc)
		rc = put_str(out, half, &at, "sh -c ", err);
	if (!rc)
		rc = nv_ssh_quote_word(script, script_len, out, half, &at, err);
	script[0] = '\0';
	return rc;
}

/* Adds one word to a's argv. */
static int add_word(nv_ssh_argv *a, const char *word, nv_err *err)
{
	size_t start = a->used;
	int rc;

	if (a->argc >= NV_SSH_ARGS_MAX)
		return nv_err_set(err, NV_ENOMEM, NULL,
				  "ssh: over %d arguments", NV_SSH_ARGS_MAX);
	rc = put(a->text, sizeof(a->text), &a->used, word, strlen(word), err);
	if (rc)
		return rc;
	a->used++; /* past the NUL */
	a->argv[a->argc++] = a->text + start;
	a->argv[a->argc] = NULL;
	return 0;
}

/* "-o" and "Name=value", written straight into a's text (a jump
 * host's ProxyCommand is long). */
static int add_option(nv_ssh_argv *a, const char *name, const char *value,
		      nv_err *err)
{
	size_t start;
	int rc;

	if (add_word(a, "-o", err))
		return err ? err->code : NV_ENOMEM;
	if (a->argc >= NV_SSH_ARGS_MAX)
		return nv_err_set(err, NV_ENOMEM, NULL,
				  "ssh: over %d arguments", NV_SSH_ARGS_MAX);
	start = a->used;
	rc = put_str(a->text, sizeof(a->text), &a->used, name, err);
	if (!rc)
		rc = put(a->text, sizeof(a->text), &a->used, "=", 1, err);
	if (!rc)
		rc = put_str(a->text, sizeof(a->text), &a->used, value, err);
	if (rc)
		return rc;
	a->used++;
	a->argv[a->argc++] = a->text + start;
	a->argv[a->argc] = NULL;
	return 0;
}

static int add_number_option(nv_ssh_argv *a, const char *name, int value,
			     nv_err *err)
{
	char text[16];

	snprintf(text, sizeof(text), "%d", value);
	return add_option(a, name, text, err);
}

/* A checked path as one quoted config word: "…" with " and \ escaped and
 * % doubled (ssh expands %-tokens in these paths). */
static int add_path_option(nv_ssh_argv *a, const char *name, const char *field,
			   const char *path, size_t max, nv_err *err)
{
	char value[2 * NV_SSH_PATH_MAX + 3];
	size_t at = 0;
	int rc = nv_ssh_check_path(field, path, max, err);

	value[at++] = '"';
	for (const char *p = path; !rc && *p; p++) {
		if (*p == '"' || *p == '\\')
			value[at++] = '\\';
		else if (*p == '%')
			value[at++] = '%';
		value[at++] = *p;
	}
	if (rc)
		return rc;
	value[at++] = '"';
	value[at] = '\0';
	return add_option(a, name, value, err);
}

static int check_range(const char *field, int v, int min, int max, nv_err *err)
{
	if (v < min || v > max)
		return nv_err_set(err, NV_EINVAL, NULL,
				  "ssh: %s must be from %d to %d (got %d)",
				  field, min, max, v);
	return 0;
}

/* The options every connection has, the jump host's included. */
static int add_fixed(const nv_ssh_target *t, nv_ssh_argv *a, nv_err *err)
{
	static const char *const fixed[][2] = {
		{"BatchMode", "yes"},
		{"StrictHostKeyChecking", "yes"},
		{"GlobalKnownHostsFile", "/dev/null"},
		{"UpdateHostKeys", "no"},
		{"IdentitiesOnly", "yes"},
		{"ForwardAgent", "no"},
		{"ForwardX11", "no"},
		{"ClearAllForwardings", "yes"},
		{"PermitLocalCommand", "no"},
		{"ServerAliveCountMax", "3"},
		{"LogLevel", "ERROR"},
	};
	int rc = 0;

	if (add_word(a, "-F", err) || add_word(a, "none", err) ||
	    add_word(a, "-T", err))
		return err ? err->code : NV_ENOMEM;
	for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]) && !rc; i++)
		rc = add_option(a, fixed[i][0], fixed[i][1], err);
	if (!rc)
		rc = add_path_option(a, "UserKnownHostsFile", "known_hosts",
				     t->known_hosts, NV_SSH_PATH_MAX, err);
	if (!rc)
		rc = add_path_option(a, "IdentityFile", "identity", t->identity,
				     NV_SSH_PATH_MAX, err);
	if (!rc && t->certificate)
		rc = add_path_option(a, "CertificateFile", "certificate",
				     t->certificate, NV_SSH_PATH_MAX, err);
	if (!rc)
		rc = add_number_option(a, "ServerAliveInterval",
				       t->server_alive_s ? t->server_alive_s
							 : SERVER_ALIVE_DEFAULT,
				       err);
	if (!rc)
		rc = add_number_option(a, "ConnectTimeout",
				       t->connect_timeout_s, err);
	return rc;
}

static int add_port_user(nv_ssh_argv *a, int port, const char *user,
			 nv_err *err)
{
	char text[16];

	snprintf(text, sizeof(text), "%d", port);
	if (add_word(a, "-p", err) || add_word(a, text, err) ||
	    add_word(a, "-l", err) || add_word(a, user, err))
		return err ? err->code : NV_ENOMEM;
	return 0;
}

/* proxy_jump "[user@]host[:port]" or "[user@][addr]:port" read into its
 * parts (host and user copied into the caller's arrays). */
static int parse_jump(const char *jump, char user[USER_MAX + 1],
		      char host[HOST_MAX + 1], int *port, nv_err *err)
{
	const char *at = strchr(jump, '@'), *h = jump, *end;
	const char *hint = "proxy_jump is [user@]host[:port], one host (IPv6 "
			   "as [addr]:port)";
	size_t n;

	if (strchr(jump, ','))
		return nv_err_set(err, NV_EINVAL, hint,
				  "ssh: proxy_jump names more than one host");
	if (at) {
		n = (size_t)(at - jump);
		if (n == 0 || n > USER_MAX)
			return nv_err_set(err, NV_EINVAL, hint,
					  "ssh: proxy_jump's user is empty "
					  "or too long");
		memcpy(user, jump, n);
		user[n] = '\0';
		if (nv_ssh_check_user("proxy_jump's user", user, err))
			return NV_EINVAL;
		h = at + 1;
	}
	*port = 22;
	if (*h == '[') {
		end = strchr(h, ']');
		if (!end || (end[1] != '\0' && end[1] != ':'))
			return nv_err_set(err, NV_EINVAL, hint,
					  "ssh: proxy_jump's [address] is not "
					  "closed");
		h++;
	} else {
		end = strchr(h, ':');
		if (!end)
			end = h + strlen(h);
	}
	n = (size_t)(end - h);
	if (n == 0 || n > HOST_MAX)
		return nv_err_set(
			err, NV_EINVAL, hint,
			"ssh: proxy_jump's host is empty or too long");
	memcpy(host, h, n);
	host[n] = '\0';
	if (nv_ssh_check_host("proxy_jump's host", host, err))
		return NV_EINVAL;
	if (*end == ']')
		end++;
	if (*end == ':') {
		long v = 0;
		const char *p = end + 1;

		if (!*p)
			return nv_err_set(err, NV_EINVAL, hint,
					  "ssh: proxy_jump's port is empty");
		for (; *p; p++) {
			if (*p < '0' || *p > '9' || v > 65535)
				return nv_err_set(err, NV_EINVAL, hint,
						  "ssh: proxy_jump's port is "
						  "not a number from 1 to "
						  "65535");
			v = v * 10 + (*p - '0');
		}
		if (v < 1 || v > 65535)
			return nv_err_set(err, NV_EINVAL, hint,
					  "ssh: proxy_jump's port is not a "
					  "number from 1 to 65535");
		*port = (int)v;
	}
	return 0;
}

/* ProxyCommand reaching the target through the jump host with this
 * target's own options (ssh's ProxyJump would give the jump only -F):
 * each word shell-quoted (ssh runs it with $SHELL -c: the binding sets
 * SHELL=/bin/sh), every % doubled since ssh expands %-tokens in it, then
 * -W with the tokens that ssh fills in with the target. The words are
 * built at the end of a (then taken back): no second argv. */
static int jump_command(const nv_ssh_target *t, const char *program,
			nv_ssh_argv *a, char *out, size_t cap, nv_err *err)
{
	char user[USER_MAX + 1], host[HOST_MAX + 1];
	size_t argc0 = a->argc, used0 = a->used, at = 0;
	int port, rc;

	snprintf(user, sizeof(user), "%s", t->user);
	rc = parse_jump(t->proxy_jump, user, host, &port, err);
	if (!rc)
		rc = add_word(a, program, err);
	if (!rc)
		rc = add_fixed(t, a, err);
	if (!rc)
		rc = add_port_user(a, port, user, err);
	if (!rc)
		rc = add_word(a, "-W", err);
	for (size_t i = argc0; i < a->argc && !rc; i++) {
		/* quoted after the words, then copied with % doubled */
		size_t qstart = a->used, qlen = a->used;

		rc = nv_ssh_quote_word(a->argv[i], strlen(a->argv[i]), a->text,
				       sizeof(a->text), &qlen, err);
		for (size_t j = qstart; j < qlen && !rc; j++)
			rc = put(out, cap, &at,
				 a->text[j] == '%' ? "%%" : a->text + j,
				 a->text[j] == '%' ? 2 : 1, err);
		if (!rc)
			rc = put(out, cap, &at, " ", 1, err);
	}
	if (!rc)
		rc = put_str(out, cap, &at, "'[%h]:%p' -- ", err);
	if (!rc)
		rc = put_str(out, cap, &at, host, err);
	a->argc = argc0;
	a->used = used0;
	a->argv[a->argc] = NULL;
	return rc;
}

int nv_ssh_build_argv(const nv_ssh_target *t, const char *program,
		      const char *remote_command, nv_ssh_argv *a, nv_err *err)
{
	char jump[16 * 1024];
	int rc;

	a->argc = 0;
	a->used = 0;
	a->argv[0] = NULL;
	if (!program || !*program)
		return nv_err_set(err, NV_EINVAL, NULL,
				  "ssh: no ssh program given");
	if ((rc = nv_ssh_check_host("host", t->host, err)) ||
	    (rc = nv_ssh_check_user("user", t->user, err)) ||
	    (rc = check_range("port", t->port, 1, 65535, err)) ||
	    (rc = check_range("timeout", t->connect_timeout_s, 1, 3600, err)) ||
	    (rc = check_range("server_alive", t->server_alive_s, 0, 3600, err)))
		return rc;
	if (!remote_command || !*remote_command)
		return nv_err_set(err, NV_EINVAL, NULL,
				  "ssh: the remote command is empty");
	rc = add_word(a, program, err);
	if (!rc)
		rc = add_fixed(t, a, err);
	if (!rc && t->control_path) {
		rc = check_range("control_persist", t->control_persist_s, 1,
				 86400, err);
		if (!rc)
			rc = add_option(a, "ControlMaster", "auto", err);
		if (!rc)
			rc = add_path_option(a, "ControlPath", "control_path",
					     t->control_path,
					     NV_SSH_CONTROL_PATH_MAX, err);
		if (!rc)
			rc = add_number_option(a, "ControlPersist",
					       t->control_persist_s, err);
	}
	if (!rc && t->proxy_jump) {
		jump[0] = '\0';
		rc = jump_command(t, program, a, jump, sizeof(jump), err);
		if (!rc)
			rc = add_option(a, "ProxyCommand", jump, err);
	}
	if (!rc)
		rc = add_port_user(a, t->port, t->user, err);
	/* "--": ssh reads words after the host as options again otherwise */
	if (!rc)
		rc = add_word(a, "--", err);
	if (!rc)
		rc = add_word(a, t->host, err);
	if (!rc)
		rc = add_word(a, remote_command, err);
	if (rc) {
		a->argc = 0;
		a->argv[0] = NULL;
	}
	return rc;
}

int nv_ssh_build_probe_argv(const nv_ssh_target *t, const char *program,
			    nv_ssh_argv *a, nv_err *err)
{
	/* nothing forwarded, nothing multiplexed, no login tried: the one
	 * thing this connection does is show the host's key */
	static const char *const fixed[][2] = {
		{"BatchMode", "yes"},
		{"StrictHostKeyChecking", "no"},
		{"GlobalKnownHostsFile", "/dev/null"},
		{"HashKnownHosts", "no"},
		{"UpdateHostKeys", "no"},
		{"PubkeyAuthentication", "no"},
		{"PasswordAuthentication", "no"},
		{"KbdInteractiveAuthentication", "no"},
		{"GSSAPIAuthentication", "no"},
		{"HostbasedAuthentication", "no"},
		{"IdentitiesOnly", "yes"},
		{"IdentityAgent", "none"},
		{"ControlMaster", "no"},
		{"ControlPath", "none"},
		{"ForwardAgent", "no"},
		{"ForwardX11", "no"},
		{"ClearAllForwardings", "yes"},
		{"PermitLocalCommand", "no"},
		{"ProxyCommand", "none"},
		{"LogLevel", "ERROR"},
	};
	int rc;

	a->argc = 0;
	a->used = 0;
	a->argv[0] = NULL;
	if (!program || !*program)
		return nv_err_set(err, NV_EINVAL, NULL,
				  "ssh: no ssh program given");
	if ((rc = nv_ssh_check_host("host", t->host, err)) ||
	    (rc = nv_ssh_check_user("user", t->user, err)) ||
	    (rc = check_range("port", t->port, 1, 65535, err)) ||
	    (rc = check_range("timeout", t->connect_timeout_s, 1, 3600, err)))
		return rc;
	rc = add_word(a, program, err);
	if (!rc && (add_word(a, "-F", err) || add_word(a, "none", err) ||
		    add_word(a, "-T", err)))
		rc = err ? err->code : NV_ENOMEM;
	for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]) && !rc; i++)
		rc = add_option(a, fixed[i][0], fixed[i][1], err);
	if (!rc)
		rc = add_path_option(a, "UserKnownHostsFile", "known_hosts",
				     t->known_hosts, NV_SSH_PATH_MAX, err);
	if (!rc)
		rc = add_number_option(a, "ConnectTimeout",
				       t->connect_timeout_s, err);
	if (!rc)
		rc = add_port_user(a, t->port, t->user, err);
	if (!rc)
		rc = add_word(a, "--", err);
	if (!rc)
		rc = add_word(a, t->host, err);
	if (!rc)
		rc = add_word(a, "true", err);
	if (rc) {
		a->argc = 0;
		a->argv[0] = NULL;
	}
	return rc;
}
