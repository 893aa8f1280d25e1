/* A job's secrets as files (secrets.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

#include "core/fsutil.h"
#include "core/jobid.h"
#include "jobs/secrets.h"

/* A folder that is ours alone: made 0700 when missing; an existing one
 * must be a real folder of this user that no one else may enter. */
static int private_dir(const char *path, nv_err *err)
{
	struct stat st;

	if (mkdir(path, 0700) != 0 && errno != EEXIST)
		return nv_err_set_errno(err, NV_EIO, errno, NULL,
					"cannot create %s", path);
	if (lstat(path, &st) != 0)
		return nv_err_set_errno(err, NV_EIO, errno, NULL,
					"cannot read %s", path);
	if (!S_ISDIR(st.st_mode) || st.st_uid != geteuid() ||
	    (st.st_mode & 077) != 0)
		return nv_err_set(err, NV_EREFUSED,
				  "remove it: navette makes it again, 0700",
				  "%s is not a folder of yours that only you "
				  "can open",
				  path);
	return 0;
}

static int usable_base(const char *dir)
{
	struct stat st;
	return dir && dir[0] == '/' && stat(dir, &st) == 0 &&
	       S_ISDIR(st.st_mode) && access(dir, W_OK | X_OK) == 0;
}

int nv_job_secrets_root(const char *home, char *out, size_t cap, nv_err *err)
{
	const char *xdg = getenv("XDG_RUNTIME_DIR");
	struct stat st;
	nv_err ignored;

	/* the user's runtime folder (a tmpfs, emptied at logout) */
	if (usable_base(xdg) && stat(xdg, &st) == 0 && st.st_uid == geteuid() &&
	    nv_pathf(out, cap, "%s/navette-secrets", xdg) == 0 &&
	    private_dir(out, &ignored) == 0)
		return 0;
	/* a shared tmpfs: a folder of our own in it */
	if (usable_base("/dev/shm") &&
	    nv_pathf(out, cap, "/dev/shm/navette-secrets-%lu",
		     (unsigned long)geteuid()) == 0 &&
	    private_dir(out, &ignored) == 0)
		return 0;
	if (nv_pathf(out, cap, "%s/secrets", home) != 0)
		return nv_err_set(err, NV_EINVAL, "check NAVETTE_HOME's path",
				  "the secrets folder's path is too long");
	return private_dir(out, err);
}

int nv_job_secrets_roots(const char *home, char roots[][4096], int cap,
			 int *count)
{
	const char *xdg = getenv("XDG_RUNTIME_DIR");
	char path[4096];
	struct stat st;

	*count = 0;
	for (int i = 0; i < 3 && *count < cap; i++) {
		int rc = i == 0   ? (xdg && xdg[0] == '/'
					     ? nv_pathf(path, sizeof(path),
							"%s/navette-secrets", xdg)
					     : -1)
			 : i == 1 ? nv_pathf(path, sizeof(path),
					     "/dev/shm/navette-secrets-%lu",
					     (unsigned long)geteuid())
				  : nv_pathf(path, sizeof(path), "%s/secrets",
					     home);
		if (rc == 0 && lstat(path, &st) == 0 && S_ISDIR(st.st_mode) &&
		    st.st_uid == geteuid())
			memcpy(roots[(*count)++], path, strlen(path) + 1);
	}
	return 0;
}

int nv_job_secrets_dir_make(const char *root, const char *id, char *out,
			    size_t cap, nv_err *err)
{
	if (nv_job_id_check(id, err) != 0)
		return err ? err->code : NV_EINVAL;
	if (nv_pathf(out, cap, "%s/%s", root, id) != 0)
		return nv_err_set(err, NV_EINVAL, "check NAVETTE_HOME's path",
				  "the secrets folder's path is too long");
	if (nv_remove_tree(out, err) != 0)
		return err ? err->code : NV_EIO;
	return private_dir(out, err);
}

/* Where a value's bytes go: a file, or a cipher then a file. */
typedef struct sink {
	int fd;
	EVP_CIPHER_CTX *cipher; /* NULL: plain */
} sink;

static int put(sink *k, const void *data, size_t len)
{
	const unsigned char *p = data;
	unsigned char out[4096];
	int n;

	if (!k->cipher)
		return nv_write_all(k->fd, data, len);
	while (len > 0) {
		size_t part = len < 2048 ? len : 2048;
		if (EVP_EncryptUpdate(k->cipher, out, &n, p, (int)part) != 1 ||
		    nv_write_all(k->fd, out, (size_t)n) != 0) {
			OPENSSL_cleanse(out, sizeof(out));
			return -1;
		}
		p += part;
		len -= part;
	}
	OPENSSL_cleanse(out, sizeof(out));
	return 0;
}

static int write_field(sink *k, const nv_secret *s, const char *field)
{
	const nv_secret_field *f = nv_secret_get(s, field);
	return f ? put(k, f->value, f->len) : 0;
}

/* A JSON string of a field's bytes: '"' and '\\' escaped, control bytes
 * as \u00XX (keys and tokens hold none, but a file source could). */
static int write_json_field(sink *k, const nv_secret *s, const char *field,
			    const char *key, int first)
{
	const nv_secret_field *f = nv_secret_get(s, field);
	char esc[8];

	if (!f)
		return 0;
	if (put(k, first ? "\"" : ",\"", first ? 1 : 2) ||
	    put(k, key, strlen(key)) || put(k, "\":\"", 3))
		return -1;
	for (size_t i = 0; i < f->len; i++) {
		unsigned char c = f->value[i];
		int rc;
		if (c == '"' || c == '\\') {
			esc[0] = '\\';
			esc[1] = (char)c;
			rc = put(k, esc, 2);
		} else if (c < 0x20) {
			snprintf(esc, sizeof(esc), "\\u%04x", c);
			rc = put(k, esc, 6);
		} else {
			rc = put(k, &c, 1);
		}
		if (rc)
			return -1;
	}
	return put(k, "\"", 1);
}

static int write_value(sink *k, const nv_secret *s)
{
	switch (s->kind) {
	case NV_SECRET_BEARER: return write_field(k, s, "token");
	case NV_SECRET_BASIC:
		return write_field(k, s, "user") || put(k, ":", 1) ||
		       write_field(k, s, "password");
	case NV_SECRET_HS256:
	case NV_SECRET_PEM:
	case NV_SECRET_SSH_CERT: return write_field(k, s, "key");
	case NV_SECRET_S3:
		/* the form of AWS's credential_process: tools read it */
		return put(k, "{\"Version\":1", 12) ||
		       write_json_field(k, s, "access_key_id", "AccessKeyId",
					0) ||
		       write_json_field(k, s, "secret_access_key",
					"SecretAccessKey", 0) ||
		       write_json_field(k, s, "session_token", "SessionToken",
					0) ||
		       put(k, "}\n", 2);
	}
	return -1;
}

static int name_ok(const char *name)
{
	if (!name[0] || strlen(name) > 128)
		return 0;
	for (const char *p = name; *p; p++)
		if (!((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') ||
		      (*p >= '0' && *p <= '9') || *p == '_'))
			return 0;
	return 1;
}

int nv_job_secret_write(const char *dir, const char *name, const nv_secret *s,
			nv_err *err)
{
	char path[4200];
	sink k = {-1, NULL};
	int fd;

	if (!name_ok(name))
		return nv_err_set(err, NV_EINVAL, NULL,
				  "'%s' is not a secret's variable name", name);
	if (nv_pathf(path, sizeof(path), "%s/%s", dir, name) != 0)
		return nv_err_set(err, NV_EINVAL, NULL,
				  "the secret's path is too long");
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
		  0400);
	if (fd < 0)
		return nv_err_set_errno(err, NV_EIO, errno, NULL,
					"cannot create %s", path);
	/* (the umask cannot widen 0400, but fchmod says it plainly) */
	k.fd = fd;
	if (fchmod(fd, 0400) != 0 || write_value(&k, s) != 0) {
		int e = errno;
		close(fd);
		unlink(path);
		return nv_err_set_errno(err, NV_EIO, e, NULL, "cannot write %s",
					path);
	}
	if (close(fd) != 0) {
		unlink(path);
		return nv_err_set_errno(err, NV_EIO, errno, NULL,
					"cannot write %s", path);
	}
	return 0;
}

int nv_job_secrets_dir_ok(const char *path, const char *id)
{
	const char *base = strrchr(path, '/');
	const char *parent;
	size_t plen;
	nv_err ignored;

	if (!base || path[0] != '/' || strstr(path, "/../") ||
	    nv_job_id_check(base + 1, &ignored) != 0 ||
	    (id && strcmp(base + 1, id) != 0))
		return 0;
	for (parent = base; parent > path && parent[-1] != '/'; parent--)
		;
	plen = (size_t)(base - parent);
	return (plen == 7 && strncmp(parent, "secrets", 7) == 0) ||
	       (plen >= 15 && strncmp(parent, "navette-secrets", 15) == 0);
}

int nv_job_secrets_remove(const char *path, const char *id, nv_err *err)
{
	if (!nv_job_secrets_dir_ok(path, id))
		return nv_err_set(err, NV_EINVAL, NULL,
				  "'%s' is not a job's secrets folder", path);
	return nv_remove_tree(path, err);
}

int nv_job_secret_seal(const nv_secret *s, const char *path, char *pass_hex,
		       nv_err *err)
{
	static const char digits[] = "0123456789abcdef";
	unsigned char pass[NV_JOB_SECRET_PASS_BYTES], salt[8], keyiv[48];
	unsigned char tail[32];
	sink k = {-1, NULL};
	int n = 0, rc = -1;

	if (RAND_bytes(pass, sizeof(pass)) != 1 ||
	    RAND_bytes(salt, sizeof(salt)) != 1)
		return nv_err_set(err, NV_EIO, NULL,
				  "cannot draw a random key");
	for (size_t i = 0; i < sizeof(pass); i++) {
		pass_hex[2 * i] = digits[pass[i] >> 4];
		pass_hex[2 * i + 1] = digits[pass[i] & 15];
	}
	pass_hex[2 * sizeof(pass)] = '\0';
	/* openssl enc -pbkdf2 -md sha256 -iter N: key and IV from the
	 * password (the hex text) and the salt */
	if (PKCS5_PBKDF2_HMAC(pass_hex, (int)(2 * sizeof(pass)), salt,
			      sizeof(salt), NV_JOB_SECRET_ITER, EVP_sha256(),
			      sizeof(keyiv), keyiv) != 1 ||
	    !(k.cipher = EVP_CIPHER_CTX_new()) ||
	    EVP_EncryptInit_ex(k.cipher, EVP_aes_256_ctr(), NULL, keyiv,
			       keyiv + 32) != 1) {
		nv_err_set(err, NV_EIO, NULL, "cannot set up AES-256-CTR");
		goto out;
	}
	k.fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC,
		    0600);
	if (k.fd < 0) {
		nv_err_set_errno(err, NV_EIO, errno, NULL, "cannot create %s",
				 path);
		goto out;
	}
	if (nv_write_all(k.fd, "Salted__", 8) != 0 ||
	    nv_write_all(k.fd, salt, sizeof(salt)) != 0 ||
	    write_value(&k, s) != 0 ||
	    EVP_EncryptFinal_ex(k.cipher, tail, &n) != 1 ||
	    nv_write_all(k.fd, tail, (size_t)n) != 0) {
		nv_err_set_errno(err, NV_EIO, errno, NULL, "cannot write %s",
				 path);
		goto out;
	}
	rc = 0;
out:
	if (k.fd >= 0 && close(k.fd) != 0 && rc == 0)
		rc = nv_err_set_errno(err, NV_EIO, errno, NULL,
				      "cannot write %s", path);
	if (rc != 0 && k.fd >= 0)
		unlink(path);
	EVP_CIPHER_CTX_free(k.cipher);
	OPENSSL_cleanse(pass, sizeof(pass));
	OPENSSL_cleanse(keyiv, sizeof(keyiv));
	if (rc != 0)
		OPENSSL_cleanse(pass_hex, 2 * sizeof(pass) + 1);
	return rc;
}
