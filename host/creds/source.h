/* Where credentials come from: environment variables, a file (owned by the
 * user, mode 0600 or stricter), the macOS Keychain (`security`), or a
 * credential command printing the credential_process JSON. Only the
 * declaration (names, paths, never values) comes from the project file.
 * Command results are cached in this process until shortly before they
 * expire. Pure C. */
#ifndef NV_CREDS_SOURCE_H
#define NV_CREDS_SOURCE_H

#include "creds/secret.h"

#define NV_CREDS_ARGV_MAX          32
#define NV_CREDS_OUTPUT_MAX        ((size_t)64 * 1024)
#define NV_CREDS_COMMAND_TIMEOUT_S 30
#define NV_CREDS_REFRESH_MARGIN_S  300

/* The Keychain's command, by its full path (never looked up in PATH). */
#define NV_CREDS_KEYCHAIN_TOOL "/usr/bin/security"
/* security's exit status for errSecInteractionNotAllowed (-25308, of which
 * it keeps the low byte): the Keychain is locked and cannot prompt, as in
 * an SSH session. */
#define NV_CREDS_KEYCHAIN_NO_INTERACTION 36

typedef struct nv_creds_decl {
	const char *name;
	nv_secret_kind kind;
	const char *source; /* "env", "file", "keychain", "command" */
	/* env: one variable per field of the kind, in the kind's order
	 * (NULL: the default names, e.g. AWS_ACCESS_KEY_ID for s3) */
	const char *env[NV_SECRET_FIELDS_MAX];
	const char *path; /* file */
	/* file, kind ssh-cert: the certificate's path (NULL: PATH-cert.pub
	 * beside the key, if there is one) */
	const char *certificate;
	const char *service; /* keychain */
	const char *account; /* keychain; also the user of a basic cred */
	const char *argv[NV_CREDS_ARGV_MAX + 1]; /* command, NULL-ended */
	/* the caller runs no program (plan mode, a read-only command): a
	 * source that would execute one (command, keychain) is not loaded */
	int no_exec;
} nv_creds_decl;

/* Loads the credential; *out is freed with nv_secret_free. Refusals
 * (bad file mode, missing variable, expired) are NV_EREFUSED with the
 * reason and what to do. With decl->no_exec, a source that executes a
 * program (nv_creds_source_executes) is NV_ENOTRUN and nothing runs,
 * unless this process already holds its result (the command cache). */
int nv_creds_load(const nv_creds_decl *decl, nv_secret **out, nv_err *err);

/* 1 when loading from source executes a program: "command" (the
 * declared one) and "keychain" (security). env and file only read. */
int nv_creds_source_executes(const char *source);

/* An ssh-cert credential's certificate, read from its bytes (never from a
 * command's claim): a user certificate, for the credential's own key;
 * sets s->expires_at to its valid_before (0: none, or forever).
 * NV_EREFUSED saying what is wrong. */
int nv_creds_ssh_cert_check(nv_secret *s, nv_err *err);

/* Forgets cached command results (tests). */
void nv_creds_cache_clear(void);

/* The Keychain command run (NV_CREDS_KEYCHAIN_TOOL unless a test set
 * another; NULL restores it). The path is kept, not copied. */
void nv_creds_set_keychain_tool(const char *path);
const char *nv_creds_keychain_tool(void);

/* 1 when `security -w` output looks like the hex it prints for a value of
 * several lines: hex digits that decode to text holding a newline. A hex
 * token (random bytes) is not taken for one. */
int nv_creds_keychain_hex_multiline(const unsigned char *p, size_t len);

/* "2026-12-02T15:51:54Z" (optionally with fraction or +00:00) -> epoch
 * seconds; -1 when malformed. */
double nv_creds_parse_time(const char *iso);

#endif
