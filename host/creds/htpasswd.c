/* New secrets and htpasswd lines (see htpasswd.h). */
#include "creds/htpasswd.h"

#include <crypt.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/rand.h>

static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
			       "abcdefghijklmnopqrstuvwxyz0123456789";

/* len characters of the alphabet, uniformly: a random byte is kept only
 * below the largest multiple of the alphabet's size (248 for 62). */
static int random_text(unsigned char *out, size_t len, nv_err *err)
{
	const unsigned n = sizeof(alphabet) - 1, limit = 256 - 256 % n;
	unsigned char pool[64];
	size_t got = 0, used = sizeof(pool);

	while (got < len) {
		if (used == sizeof(pool)) {
			if (RAND_bytes(pool, sizeof(pool)) != 1) {
				OPENSSL_cleanse(pool, sizeof(pool));
				return nv_err_set(err, NV_EIO, NULL,
						  "the random generator "
						  "failed");
			}
			used = 0;
		}
		if (pool[used] < limit)
			out[got++] = (unsigned char)alphabet[pool[used] % n];
		used++;
	}
	OPENSSL_cleanse(pool, sizeof(pool));
	return 0;
}

static int user_ok(const char *user)
{
	size_t n = user ? strlen(user) : 0;

	if (n == 0 || n > 255)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (user[i] <= ' ' || user[i] == ':' || user[i] == 0x7f)
			return 0;
	return 1;
}

nv_secret *nv_secret_generate(const char *name, nv_secret_kind kind,
			      const char *user, size_t len, nv_err *err)
{
	unsigned char buf[NV_GENERATE_MAX];
	nv_secret *s;
	int rc;

	if (len == 0)
		len = 32;
	if (len < NV_GENERATE_MIN || len > NV_GENERATE_MAX) {
		nv_err_set(err, NV_EINVAL, "ask for 16 to 512",
			   "credential %s: cannot make a secret of %zu bytes",
			   name, len);
		return NULL;
	}
	if (kind != NV_SECRET_HS256 && kind != NV_SECRET_BASIC) {
		nv_err_set(err, NV_EINVAL,
			   "an s3 key is made by the storage server "
			   "(navette.storage.create_key); a token by its "
			   "issuer",
			   "credential %s: navette makes secrets of kind hs256 "
			   "or basic, not %s",
			   name, nv_secret_kind_name(kind));
		return NULL;
	}
	if (kind == NV_SECRET_BASIC && !user_ok(user)) {
		nv_err_set(err, NV_EINVAL,
			   "give the user name the server knows: 1 to 255 "
			   "printable characters, no ':' or space",
			   "credential %s: no usable user name", name);
		return NULL;
	}
	s = nv_secret_new(name, kind, "generated", err);
	if (!s)
		return NULL;
	if (kind == NV_SECRET_HS256)
		rc = RAND_bytes(buf, (int)len) == 1
			     ? 0
			     : nv_err_set(err, NV_EIO, NULL,
					  "the random generator failed");
	else
		rc = random_text(buf, len, err);
	if (!rc && kind == NV_SECRET_BASIC)
		rc = nv_secret_set(s, "user", user, strlen(user), err);
	if (!rc)
		rc = nv_secret_set(s,
				   kind == NV_SECRET_HS256 ? "key" : "password",
				   buf, len, err);
	OPENSSL_cleanse(buf, sizeof(buf));
	if (rc) {
		nv_secret_free(s);
		return NULL;
	}
	return s;
}

int nv_htpasswd_line(const nv_secret *s, int cost, char *out, size_t cap,
		     nv_err *err)
{
	const nv_secret_field *user, *password;
	char setting[CRYPT_GENSALT_OUTPUT_SIZE];
	char pw[73];
	struct crypt_data *data;
	const char *hash;
	int rc = 0;

	if (cap)
		out[0] = '\0';
	if (!s || s->kind != NV_SECRET_BASIC)
		return nv_err_set(err, NV_EINVAL, NULL,
				  "an htpasswd line is made of a basic "
				  "credential (user, password)");
	if (cost == 0)
		cost = NV_HTPASSWD_COST_DEFAULT;
	if (cost < NV_HTPASSWD_COST_MIN || cost > NV_HTPASSWD_COST_MAX)
		return nv_err_set(err, NV_EINVAL, "a cost of 4 to 14",
				  "bcrypt cost %d is out of range", cost);
	user = nv_secret_get(s, "user");
	password = nv_secret_get(s, "password");
	if (!user || !user_ok((const char *)user->value) ||
	    strlen((const char *)user->value) != user->len)
		return nv_err_set(err, NV_EINVAL,
				  "an htpasswd user has no ':', space or "
				  "control character",
				  "credential %s: its user cannot be written "
				  "in an htpasswd line",
				  s->name);
	if (!password || password->len == 0 || password->len > 72 ||
	    memchr(password->value, '\0', password->len))
		return nv_err_set(err, NV_EINVAL,
				  "bcrypt reads 1 to 72 bytes, no NUL",
				  "credential %s: its password cannot be "
				  "hashed with bcrypt whole",
				  s->name);
	if (!crypt_gensalt_rn("$2y$", (unsigned long)cost, NULL, 0, setting,
			      sizeof(setting)))
		return nv_err_set(err, NV_EIO, NULL,
				  "cannot make a bcrypt salt (libxcrypt)");
	data = OPENSSL_zalloc(sizeof(*data));
	if (!data)
		return nv_err_set(err, NV_ENOMEM, NULL, "out of memory");
	memcpy(pw, password->value, password->len);
	pw[password->len] = '\0';
	hash = crypt_rn(pw, setting, data, (int)sizeof(*data));
	if (!hash || hash[0] != '$' || strlen(hash) != 60)
		rc = nv_err_set(err, NV_EIO, NULL, "bcrypt failed (libxcrypt)");
	else if (user->len + 1 + 60 + 1 > cap)
		rc = nv_err_set(err, NV_ENOMEM, NULL, "htpasswd line too long");
	else {
		memcpy(out, user->value, user->len);
		out[user->len] = ':';
		memcpy(out + user->len + 1, hash, 61);
	}
	OPENSSL_cleanse(pw, sizeof(pw));
	OPENSSL_clear_free(data, sizeof(*data));
	return rc;
}

int nv_htpasswd_check(const char *hash, const unsigned char *password,
		      size_t len)
{
	struct crypt_data *data;
	char pw[73];
	const char *out;
	int rc;

	if (!hash || strlen(hash) != 60 ||
	    (strncmp(hash, "$2y$", 4) != 0 && strncmp(hash, "$2b$", 4) != 0))
		return -1;
	if (len > 72 || memchr(password, '\0', len))
		return 0;
	data = OPENSSL_zalloc(sizeof(*data));
	if (!data)
		return -1;
	memcpy(pw, password, len);
	pw[len] = '\0';
	out = crypt_rn(pw, hash, data, (int)sizeof(*data));
	rc = out && out[0] == '$' ? CRYPTO_memcmp(out, hash, 60) == 0 : -1;
	OPENSSL_cleanse(pw, sizeof(pw));
	OPENSSL_clear_free(data, sizeof(*data));
	return rc;
}
