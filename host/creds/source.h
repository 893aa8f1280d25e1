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

typedef struct nv_creds_decl {
	const char *name;
	nv_secret_kind kind;
	const char *source; /* "env", "file", "keychain", "command" */
	/* env: one variable per field of the kind, in the kind's order
	 * (NULL: the default names, e.g. AWS_ACCESS_KEY_ID for s3) */
	const char *env[NV_SECRET_FIELDS_MAX];
	const char *path;    /* file */
	const char *service; /* keychain */
	const char *account; /* keychain; also the user of a basic cred */
	const char *argv[NV_CREDS_ARGV_MAX + 1]; /* command, NULL-ended */
} nv_creds_decl;

/* Loads the credential; *out is freed with nv_secret_free. Refusals
 * (bad file mode, missing variable, expired) are NV_EREFUSED with the
 * reason and what to do. */
int nv_creds_load(const nv_creds_decl *decl, nv_secret **out, nv_err *err);

/* Forgets cached command results (tests). */
void nv_creds_cache_clear(void);

/* "2026-12-02T15:51:54Z" (optionally with fraction or +00:00) -> epoch
 * seconds; -1 when malformed. */
double nv_creds_parse_time(const char *iso);

#endif
