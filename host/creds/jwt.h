/* JSON Web Tokens signed with HS256 (RFC 7519 / 7515) for backends that
 * accept them (slurmrestd's `iat`/`exp`/`sun`). Pure C over OpenSSL HMAC. */
#ifndef NV_JWT_H
#define NV_JWT_H

#include <stddef.h>

#include "creds/secret.h"

/* base64url without padding; out must hold 4*ceil(len/3)+1 bytes. Returns
 * the length written. */
size_t nv_base64url(const unsigned char *in, size_t len, char *out);

/* Signs claims_json (an object) with key, adding "iat" = now and "exp" =
 * now + lifespan_s (existing iat/exp are replaced). The token is returned
 * as a new bearer secret named `name`, expiring at exp. */
int nv_jwt_mint_hs256(const nv_secret *key, const char *name,
		      const char *claims_json, double lifespan_s,
		      nv_secret **token_out, nv_err *err);

#endif
