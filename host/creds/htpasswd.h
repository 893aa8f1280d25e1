/* New secrets and the htpasswd line of a password: what a rotation of a
 * registry's password or a Slurm JWT key makes before the server holds it.
 * Pure C; no Lua. */
#ifndef NV_HTPASSWD_H
#define NV_HTPASSWD_H

#include <stddef.h>

#include "core/nv_err.h"
#include "creds/secret.h"

/* Sizes of what nv_secret_generate makes: an hs256 key of `len` random
 * bytes, a basic password of `len` characters drawn uniformly from
 * [A-Za-z0-9]. */
#define NV_GENERATE_MIN 16
#define NV_GENERATE_MAX 512

/* A new secret of kind hs256 (field key) or basic (fields user, password;
 * user given, 1..255 bytes, printable ASCII without ':'), its bytes from
 * the OpenSSL CSPRNG; source "generated". len 0 means 32. Other kinds are
 * refused (NV_EINVAL): they are issued by a server, not made here. The
 * caller frees with nv_secret_free. */
nv_secret *nv_secret_generate(const char *name, nv_secret_kind kind,
			      const char *user, size_t len, nv_err *err);

/* Cost bounds of bcrypt (2^cost rounds); htpasswd -B uses 5 by default,
 * registries accept any. */
#define NV_HTPASSWD_COST_MIN     4
#define NV_HTPASSWD_COST_MAX     14
#define NV_HTPASSWD_COST_DEFAULT 10
/* "user:$2y$CC$" + 53 characters, with room. */
#define NV_HTPASSWD_LINE_MAX 384

/* The htpasswd line "user:$2y$..." of a basic secret (bcrypt, a fresh
 * random salt), NUL-terminated in out. The user may not hold ':', a
 * control byte or a space; the password may not hold a NUL byte (bcrypt
 * stops there) and is cut by bcrypt at 72 bytes: longer is refused. */
int nv_htpasswd_line(const nv_secret *s, int cost, char *out, size_t cap,
		     nv_err *err);

/* 1 when password matches the bcrypt hash ("$2y$..." or "$2b$..."), 0
 * when not, -1 on a malformed hash. */
int nv_htpasswd_check(const char *hash, const unsigned char *password,
		      size_t len);

#endif
