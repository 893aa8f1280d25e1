/* One call of OpenSSH's `ssh`, as navette makes it: the command line built
 * from a target (host, port, user, the known_hosts file navette owns, the
 * key and certificate, an optional jump host and ControlMaster socket),
 * with no user config and every option that could send or accept more
 * than the one command switched off; and the remote command, quoted for
 * the login node's shell and framed (ssh_frame.h) so that what a shell
 * profile prints around it is told apart from its output. Every value
 * that ssh would read as an option, a %-token or more than one word is
 * refused or escaped here, with a message naming the field. No Lua, no
 * allocation: the caller owns every buffer. */
#ifndef NV_SSH_CMD_H
#define NV_SSH_CMD_H

#include <stddef.h>

#include "core/nv_err.h"

/* Words of one ssh command line (options, host, remote command), and
 * room for the jump host's while its ProxyCommand is made. */
#define NV_SSH_ARGS_MAX 128
/* The remote command once quoted and framed. sshd hands it to the login
 * shell as one string: well under any system's ARG_MAX. */
#define NV_SSH_COMMAND_MAX ((size_t)64 * 1024)
/* Everything the argv's words hold (the command and the options). */
#define NV_SSH_TEXT_MAX (NV_SSH_COMMAND_MAX + (size_t)16 * 1024)
/* A path given to ssh (known_hosts, key, certificate, control socket). */
#define NV_SSH_PATH_MAX 1024
/* The control socket's path in bytes. ssh first binds PATH + "." + 16
 * random characters, then renames it; sun_path holds 104 bytes with its
 * NUL on macOS (108 on Linux): 104 - 1 - 17 = 86 on both. */
#define NV_SSH_CONTROL_PATH_MAX 86
/* A frame's nonce: 16 random bytes in hex. */
#define NV_SSH_NONCE_LEN 32

typedef struct nv_ssh_target {
	const char *host;        /* name or address; no user@, no port */
	int port;                /* 1..65535 */
	const char *user;        /* the login */
	const char *known_hosts; /* absolute path: the only hosts trusted */
	const char *identity;    /* absolute path of the private key */
	const char *certificate; /* absolute path, or NULL */
	/* "[user@]host[:port]" (IPv6 as "[addr]:port"), or NULL. It is
	 * reached with this target's options, known_hosts, key and
	 * certificate (ssh's own ProxyJump would use the user's). */
	const char *proxy_jump;
	const char *control_path; /* absolute, or NULL: no multiplexing */
	int control_persist_s;    /* 1..86400 with a control path */
	int connect_timeout_s;    /* 1..3600 */
	int server_alive_s;       /* 1..3600; 0: 15 */
} nv_ssh_target;

/* An argv of ssh: argv[0..argc-1] point into text, argv[argc] is NULL.
 * Big (NV_SSH_TEXT_MAX): the binding keeps it in a userdata. */
typedef struct nv_ssh_argv {
	const char *argv[NV_SSH_ARGS_MAX + 1];
	size_t argc;
	size_t used;
	char text[NV_SSH_TEXT_MAX];
} nv_ssh_argv;

/* word (len bytes) quoted for a POSIX shell as one word, appended to out
 * (cap bytes, NUL-terminated; *out_len its length before and after): in
 * single quotes, with each ' written as '\'' and each \ as '\\' (outside
 * the quotes, so fish reads it the same as sh). The empty word is ''.
 * NV_EINVAL for a NUL byte (no shell word holds one), NV_ENOMEM when out
 * is full. Other bytes (newlines, $, `, non-UTF-8) pass as they are. */
int nv_ssh_quote_word(const char *word, size_t len, char *out, size_t cap,
		      size_t *out_len, nv_err *err);

/* The string ssh sends as the remote command: `sh -c SCRIPT`, SCRIPT
 * printing the BEGIN line of nonce, running words (n of them, lens[i]
 * bytes each, each quoted) and printing the END line with its status
 * (ssh_frame.h). Into out (cap bytes, NUL-terminated). NV_EINVAL for no
 * word, a NUL in one or a nonce that is not NV_SSH_NONCE_LEN lowercase
 * hex digits; NV_ENOMEM past cap. */
int nv_ssh_remote_command(const char *const *words, const size_t *lens,
			  size_t n, const char *nonce, char *out, size_t cap,
			  nv_err *err);

/* The argv running remote_command on t: program (argv[0], the path of
 * ssh), the fixed options, t's, then "--", the host and the command.
 * NV_EINVAL naming the field for a value ssh would misread; NV_ENOMEM
 * past the bounds. */
int nv_ssh_build_argv(const nv_ssh_target *t, const char *program,
		      const char *remote_command, nv_ssh_argv *out,
		      nv_err *err);

/* The argv of first contact (`navette ssh trust`): program connects once
 * to t's host, port and user, accepts whatever host key it is shown
 * (StrictHostKeyChecking=no) and writes it to t->known_hosts, a
 * throwaway file in a folder of the caller's, then tries no
 * authentication at all (no key, agent, password, keyboard, GSSAPI or
 * host-based login; BatchMode) and so ends with "Permission denied" and
 * status 255, nothing run. remote_command is "true", never sent. Only
 * t's host, port, user, known_hosts and connect_timeout_s are read.
 * NV_EINVAL naming the field for a value ssh would misread. */
int nv_ssh_build_probe_argv(const nv_ssh_target *t, const char *program,
			    nv_ssh_argv *out, nv_err *err);

/* The checks of nv_ssh_build_argv, one per kind of value: 0, or NV_EINVAL
 * with a message naming field. */
int nv_ssh_check_host(const char *field, const char *host, nv_err *err);
int nv_ssh_check_user(const char *field, const char *user, nv_err *err);
int nv_ssh_check_path(const char *field, const char *path, size_t max,
		      nv_err *err);

#endif
