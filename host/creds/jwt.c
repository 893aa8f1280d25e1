/* HS256 JWTs (see jwt.h). The token is a secret like any other: it is
 * built in memory that is wiped, and handed back as an nv_secret. */
#include "creds/jwt.h"

#include <math.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "core/clock.h"

size_t nv_base64url(const unsigned char *in, size_t len, char *out)
{
	static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghij"
				       "klmnopqrstuvwxyz0123456789-_";
	size_t o = 0, i = 0;

	for (; i + 2 < len; i += 3) {
		unsigned v = (unsigned)in[i] << 16 | (unsigned)in[i + 1] << 8 |
			     in[i + 2];
		out[o++] = alphabet[(v >> 18) & 63];
		out[o++] = alphabet[(v >> 12) & 63];
		out[o++] = alphabet[(v >> 6) & 63];
		out[o++] = alphabet[v & 63];
	}
	if (len - i == 1) {
		unsigned v = (unsigned)in[i] << 16;
		out[o++] = alphabet[(v >> 18) & 63];
		out[o++] = alphabet[(v >> 12) & 63];
	} else if (len - i == 2) {
		unsigned v = (unsigned)in[i] << 16 | (unsigned)in[i + 1] << 8;
		out[o++] = alphabet[(v >> 18) & 63];
		out[o++] = alphabet[(v >> 12) & 63];
		out[o++] = alphabet[(v >> 6) & 63];
	}
	out[o] = '\0';
	return o;
}

int nv_jwt_mint_hs256(const nv_secret *key, const char *name,
		      const char *claims_json, double lifespan_s,
		      nv_secret **token_out, nv_err *err)
{
	static const char header[] = "{\"alg\":\"HS256\",\"typ\":\"JWT\"}";
	const nv_secret_field *k = nv_secret_get(key, "key");
	cJSON *claims;
	char *payload;
	char *token = NULL;
	size_t hlen, plen, cap, used;
	unsigned char mac[EVP_MAX_MD_SIZE];
	unsigned int maclen = 0;
	double now = floor(nv_now());
	int rc = 0;

	*token_out = NULL;
	if (key->kind != NV_SECRET_HS256 || !k)
		return nv_err_set(err, NV_EINVAL,
				  "declare the signing key with kind = "
				  "\"hs256\"",
				  "credential %s is not an HS256 key",
				  key->name);
	if (!(lifespan_s > 0))
		return nv_err_set(err, NV_EINVAL, NULL,
				  "a token's lifespan must be positive");
	claims = cJSON_Parse(claims_json);
	if (!cJSON_IsObject(claims)) {
		cJSON_Delete(claims);
		return nv_err_set(err, NV_EINVAL, NULL,
				  "JWT claims must be an object");
	}
	cJSON_DeleteItemFromObjectCaseSensitive(claims, "iat");
	cJSON_DeleteItemFromObjectCaseSensitive(claims, "exp");
	cJSON_AddNumberToObject(claims, "iat", now);
	cJSON_AddNumberToObject(claims, "exp", now + ceil(lifespan_s));
	payload = cJSON_PrintUnformatted(claims);
	cJSON_Delete(claims);
	if (!payload)
		return nv_err_set(err, NV_ENOMEM, NULL, "out of memory");

	hlen = strlen(header);
	plen = strlen(payload);
	cap = 4 * ((hlen + 2) / 3) + 4 * ((plen + 2) / 3) + 4 * 11 + 8;
	token = malloc(cap);
	if (!token) {
		free(payload);
		return nv_err_set(err, NV_ENOMEM, NULL, "out of memory");
	}
	used = nv_base64url((const unsigned char *)header, hlen, token);
	token[used++] = '.';
	used += nv_base64url((const unsigned char *)payload, plen,
			     token + used);
	free(payload);
	if (!HMAC(EVP_sha256(), k->value, (int)k->len,
		  (const unsigned char *)token, used, mac, &maclen)) {
		rc = nv_err_set(err, NV_EIO, NULL, "HMAC failed");
		goto out;
	}
	token[used++] = '.';
	used += nv_base64url(mac, maclen, token + used);
	OPENSSL_cleanse(mac, sizeof(mac));

	nv_secret *t = nv_secret_new(name, NV_SECRET_BEARER, "minted", err);
	if (!t) {
		rc = err->code;
		goto out;
	}
	snprintf(t->origin, sizeof(t->origin), "HS256 with %s", key->name);
	t->loaded_at = t->created_at = now;
	t->expires_at = now + ceil(lifespan_s);
	rc = nv_secret_set(t, "token", token, used, err);
	if (rc) {
		nv_secret_free(t);
		goto out;
	}
	nv_secret_announce(t);
	*token_out = t;
out:
	OPENSSL_cleanse(token, cap);
	free(token);
	return rc;
}
