/* See ssh_cert.h. The blob is a sequence of SSH wire values (RFC 4251
 * 5): uint32 and uint64 big-endian, strings as a uint32 length and its
 * bytes. A reader walks it with every length checked against what is
 * left, so no value can point outside the decoded blob. */
#include "ssh/ssh_cert.h"

#include <stdio.h>
#include <string.h>

#define CERT_SUFFIX   "-cert-v01@openssh.com"
#define PRIVATE_BEGIN "-----BEGIN OPENSSH PRIVATE KEY-----"
#define PRIVATE_END   "-----END OPENSSH PRIVATE KEY-----"
#define PRIVATE_MAGIC "openssh-key-v1"

/* The certificate types OpenSSH signs: the plain key's type and how many
 * strings its public part has between the nonce and the serial. */
static const struct {
	const char *type, *key_type;
	int fields;
} cert_types[] = {
	{"ssh-ed25519-cert-v01@openssh.com", "ssh-ed25519", 1},
	{"ssh-rsa-cert-v01@openssh.com", "ssh-rsa", 2},
	{"ecdsa-sha2-nistp256-cert-v01@openssh.com", "ecdsa-sha2-nistp256", 2},
	{"ecdsa-sha2-nistp384-cert-v01@openssh.com", "ecdsa-sha2-nistp384", 2},
	{"ecdsa-sha2-nistp521-cert-v01@openssh.com", "ecdsa-sha2-nistp521", 2},
	{"sk-ssh-ed25519-cert-v01@openssh.com", "sk-ssh-ed25519@openssh.com",
	 2},
	{"sk-ecdsa-sha2-nistp256-cert-v01@openssh.com",
	 "sk-ecdsa-sha2-nistp256@openssh.com", 3},
	{"ssh-dss-cert-v01@openssh.com", "ssh-dss", 4},
};

typedef struct reader {
	const unsigned char *p;
	size_t len, at;
	const char *what; /* the value being read, for messages */
} reader;

static int short_blob(nv_err *err, const char *what)
{
	return nv_err_set(err, NV_EINVAL,
			  "copy the whole line of the KEY-cert.pub file",
			  "ssh certificate: it ends inside its %s", what);
}

static int get_u32(reader *r, uint32_t *v, nv_err *err)
{
	if (r->len - r->at < 4)
		return short_blob(err, r->what);
	*v = (uint32_t)r->p[r->at] << 24 | (uint32_t)r->p[r->at + 1] << 16 |
	     (uint32_t)r->p[r->at + 2] << 8 | (uint32_t)r->p[r->at + 3];
	r->at += 4;
	return 0;
}

static int get_u64(reader *r, uint64_t *v, nv_err *err)
{
	uint32_t hi = 0, lo = 0;
	int rc = get_u32(r, &hi, err);

	if (!rc)
		rc = get_u32(r, &lo, err);
	*v = (uint64_t)hi << 32 | lo;
	return rc;
}

static int get_string(reader *r, const unsigned char **s, size_t *n,
		      nv_err *err)
{
	uint32_t len = 0;
	int rc = get_u32(r, &len, err);

	if (rc)
		return rc;
	if (len > r->len - r->at)
		return short_blob(err, r->what);
	*s = r->p + r->at;
	*n = len;
	r->at += len;
	return 0;
}

/* A name or text of the certificate: printable ASCII, bounded. */
static int get_text(reader *r, char *out, size_t cap, nv_err *err)
{
	const unsigned char *s;
	size_t n;
	int rc = get_string(r, &s, &n, err);

	if (rc)
		return rc;
	if (n >= cap)
		return nv_err_set(err, NV_EINVAL, NULL,
				  "ssh certificate: its %s is over %zu bytes",
				  r->what, cap - 1);
	for (size_t i = 0; i < n; i++)
		if (s[i] < 0x20 || s[i] > 0x7e)
			return nv_err_set(err, NV_EINVAL, NULL,
					  "ssh certificate: its %s holds a "
					  "byte that is not printable ASCII",
					  r->what);
	memcpy(out, s, n);
	out[n] = '\0';
	return 0;
}

/* Splits line into its first two words (type, base64). */
static int two_words(const char *line, size_t len, const char **w0, size_t *n0,
		     const char **w1, size_t *n1)
{
	size_t i = 0;

	while (i < len && (line[i] == ' ' || line[i] == '\t'))
		i++;
	*w0 = line + i;
	while (i < len && line[i] != ' ' && line[i] != '\t' &&
	       line[i] != '\n' && line[i] != '\r')
		i++;
	*n0 = (size_t)(line + i - *w0);
	while (i < len && (line[i] == ' ' || line[i] == '\t'))
		i++;
	*w1 = line + i;
	while (i < len && line[i] != ' ' && line[i] != '\t' &&
	       line[i] != '\n' && line[i] != '\r')
		i++;
	*n1 = (size_t)(line + i - *w1);
	/* what follows is a comment, then at most one line end */
	while (i < len && line[i] != '\n' && line[i] != '\r')
		i++;
	if (i < len && line[i] == '\r')
		i++;
	if (i < len && line[i] == '\n')
		i++;
	return *n0 > 0 && *n1 > 0 && i == len;
}

/* The first place of needle (n bytes) in hay (len bytes), or NULL. */
static const char *find(const char *hay, size_t len, const char *needle,
			size_t n)
{
	for (size_t i = 0; n && i + n <= len; i++)
		if (hay[i] == needle[0] && memcmp(hay + i, needle, n) == 0)
			return hay + i;
	return NULL;
}

static int public_line(const char *type, const unsigned char *blob,
		       size_t blob_len, char *out, size_t cap, nv_err *err)
{
	size_t tn = strlen(type);

	if (tn + 2 + 4 * ((blob_len + 2) / 3) + 1 > cap)
		return nv_err_set(err, NV_ENOMEM, NULL,
				  "ssh: the public key line is over %zu bytes",
				  cap);
	memcpy(out, type, tn);
	out[tn] = ' ';
	nv_ssh_b64_encode(blob, blob_len, out + tn + 1, 1);
	return 0;
}

int nv_ssh_cert_parse(const char *line, size_t len, nv_ssh_cert *c, char *pub,
		      size_t cap, nv_err *err)
{
	unsigned char blob[NV_SSH_KEY_BLOB_MAX];
	unsigned char key[NV_SSH_KEY_BLOB_MAX];
	const char *w0, *w1;
	size_t n0, n1, kt, key_len, n;
	const unsigned char *s, *fields_at;
	long got;
	uint32_t u;
	int rc, t = -1;
	reader r = {0}, pr = {0};

	memset(c, 0, sizeof(*c));
	if (pub && cap)
		pub[0] = '\0';
	if (memchr(line, '\0', len) ||
	    !two_words(line, len, &w0, &n0, &w1, &n1))
		return nv_err_set(err, NV_EINVAL,
				  "give the certificate as one line \"TYPE "
				  "BASE64 [comment]\", as in KEY-cert.pub",
				  "ssh certificate: not one line of a type and "
				  "its base64");
	for (size_t i = 0; i < sizeof(cert_types) / sizeof(cert_types[0]); i++)
		if (strlen(cert_types[i].type) == n0 &&
		    memcmp(cert_types[i].type, w0, n0) == 0)
			t = (int)i;
	if (t < 0)
		return nv_err_set(err, NV_EINVAL,
				  "a certificate's type ends in " CERT_SUFFIX
				  " (ssh-keygen -s makes one)",
				  "ssh certificate: '%.*s' is not a "
				  "certificate type navette knows",
				  (int)(n0 < 64 ? n0 : 64), w0);
	got = nv_ssh_b64_decode(w1, n1, blob, sizeof(blob));
	if (got < 0)
		return nv_err_set(err, NV_EINVAL, NULL,
				  "ssh certificate: its key is not base64 (or "
				  "is over %zu bytes)",
				  sizeof(blob));
	r.p = blob;
	r.len = (size_t)got;
	r.what = "type";
	if ((rc = get_string(&r, &s, &n, err)))
		return rc;
	if (n != n0 || memcmp(s, w0, n) != 0)
		return nv_err_set(err, NV_EINVAL, NULL,
				  "ssh certificate: the blob is not of the "
				  "type the line names");
	snprintf(c->type, sizeof(c->type), "%s", cert_types[t].type);
	snprintf(c->key_type, sizeof(c->key_type), "%s",
		 cert_types[t].key_type);
	r.what = "nonce";
	if ((rc = get_string(&r, &s, &n, err)))
		return rc;
	r.what = "public key";
	fields_at = r.p + r.at;
	for (int i = 0; i < cert_types[t].fields; i++)
		if ((rc = get_string(&r, &s, &n, err)))
			return rc;
	/* the plain key's blob: its type, then the same fields */
	kt = strlen(c->key_type);
	key_len = 4 + kt + (size_t)(r.p + r.at - fields_at);
	if (key_len > sizeof(key))
		return nv_err_set(err, NV_EINVAL, NULL,
				  "ssh certificate: its key is too large");
	key[0] = key[1] = key[2] = 0;
	key[3] = (unsigned char)kt;
	memcpy(key + 4, c->key_type, kt);
	memcpy(key + 4 + kt, fields_at, key_len - 4 - kt);
	r.what = "serial";
	if ((rc = get_u64(&r, &c->serial, err)))
		return rc;
	r.what = "type (user or host)";
	if ((rc = get_u32(&r, &u, err)))
		return rc;
	if (u != NV_SSH_CERT_USER && u != NV_SSH_CERT_HOST)
		return nv_err_set(err, NV_EINVAL, NULL,
				  "ssh certificate: it is neither a user nor "
				  "a host certificate (type %u)",
				  (unsigned)u);
	c->cert_type = (int)u;
	r.what = "key id";
	if ((rc = get_text(&r, c->key_id, sizeof(c->key_id), err)))
		return rc;
	r.what = "principals";
	if ((rc = get_string(&r, &s, &n, err)))
		return rc;
	pr.p = s;
	pr.len = n;
	pr.what = "principal";
	while (pr.at < pr.len) {
		if (c->nprincipals == NV_SSH_CERT_PRINCIPALS_MAX)
			return nv_err_set(err, NV_EINVAL, NULL,
					  "ssh certificate: it names more "
					  "than %d principals",
					  NV_SSH_CERT_PRINCIPALS_MAX);
		if ((rc = get_text(&pr, c->principals[c->nprincipals],
				   sizeof(c->principals[0]), err)))
			return rc;
		c->nprincipals++;
	}
	r.what = "validity";
	if ((rc = get_u64(&r, &c->valid_after, err)) ||
	    (rc = get_u64(&r, &c->valid_before, err)))
		return rc;
	if (c->valid_after >= c->valid_before)
		return nv_err_set(err, NV_EINVAL, NULL,
				  "ssh certificate: it is valid from after "
				  "it is valid to");
	r.what = "critical options";
	if ((rc = get_string(&r, &s, &n, err)))
		return rc;
	r.what = "extensions";
	if ((rc = get_string(&r, &s, &n, err)))
		return rc;
	r.what = "reserved field";
	if ((rc = get_string(&r, &s, &n, err)))
		return rc;
	r.what = "signing CA key";
	if ((rc = get_string(&r, &s, &n, err)))
		return rc;
	pr.p = s;
	pr.len = n;
	pr.at = 0;
	pr.what = "signing CA key's type";
	if ((rc = get_text(&pr, c->ca_type, sizeof(c->ca_type), err)))
		return rc;
	if (strstr(c->ca_type, CERT_SUFFIX) || !c->ca_type[0])
		return nv_err_set(err, NV_EINVAL, NULL,
				  "ssh certificate: its CA key is not a plain "
				  "key");
	if ((rc = nv_ssh_blob_fingerprint(s, n, c->ca_fingerprint, err)))
		return rc;
	r.what = "signature";
	if ((rc = get_string(&r, &s, &n, err)))
		return rc;
	if (n == 0 || r.at != r.len)
		return nv_err_set(err, NV_EINVAL, NULL,
				  "ssh certificate: %s after its signature",
				  n == 0 ? "no signature, or bytes" : "bytes");
	if ((rc = nv_ssh_blob_fingerprint(key, key_len, c->fingerprint, err)))
		return rc;
	return pub ? public_line(c->key_type, key, key_len, pub, cap, err) : 0;
}

int nv_ssh_private_key_public(const char *text, size_t len, char *out,
			      size_t cap, nv_err *err)
{
	/* the whole key file: its private part too (an RSA key of 16384
	 * bits is about 9 KiB) */
	char b64[4 * (2 * NV_SSH_KEY_BLOB_MAX) / 3 + 4];
	unsigned char blob[2 * NV_SSH_KEY_BLOB_MAX];
	const char *begin, *end;
	const unsigned char *s, *key;
	size_t n = 0, bl = sizeof(PRIVATE_BEGIN) - 1, kn;
	char type[NV_SSH_KEY_TYPE_MAX + 1];
	uint32_t keys;
	long got;
	int rc;
	reader r = {0}, kr = {0};

	if (cap)
		out[0] = '\0';
	begin = len >= bl ? find(text, len, PRIVATE_BEGIN, bl) : NULL;
	end = begin ? find(begin, len - (size_t)(begin - text), PRIVATE_END,
			   sizeof(PRIVATE_END) - 1)
		    : NULL;
	if (!begin || !end)
		return nv_err_set(err, NV_EINVAL,
				  "give the key as ssh-keygen writes it (-----"
				  "BEGIN OPENSSH PRIVATE KEY-----)",
				  "ssh: not an OpenSSH private key");
	for (const char *p = begin + bl; p < end; p++) {
		if (*p == '\n' || *p == '\r' || *p == ' ' || *p == '\t')
			continue;
		if (n == sizeof(b64))
			return nv_err_set(err, NV_EINVAL, NULL,
					  "ssh: the private key is too large");
		b64[n++] = *p;
	}
	got = nv_ssh_b64_decode(b64, n, blob, sizeof(blob));
	if (got < (long)sizeof(PRIVATE_MAGIC) ||
	    memcmp(blob, PRIVATE_MAGIC, sizeof(PRIVATE_MAGIC)) != 0)
		return nv_err_set(err, NV_EINVAL, NULL,
				  "ssh: the private key is not base64 of an "
				  "openssh-key-v1 key");
	r.p = blob;
	r.len = (size_t)got;
	r.at = sizeof(PRIVATE_MAGIC); /* with its NUL */
	r.what = "private key's header";
	for (int i = 0; i < 3; i++) /* cipher, kdf, kdf options */
		if ((rc = get_string(&r, &s, &n, err)))
			return rc;
	if ((rc = get_u32(&r, &keys, err)))
		return rc;
	if (keys != 1)
		return nv_err_set(err, NV_EINVAL, NULL,
				  "ssh: the private key file holds %u keys, "
				  "not one",
				  (unsigned)keys);
	r.what = "public key";
	if ((rc = get_string(&r, &key, &kn, err)))
		return rc;
	kr.p = key;
	kr.len = kn;
	kr.what = "public key's type";
	if ((rc = get_text(&kr, type, sizeof(type), err)))
		return rc;
	if (!type[0] || strstr(type, CERT_SUFFIX) || kn > NV_SSH_KEY_BLOB_MAX)
		return nv_err_set(err, NV_EINVAL, NULL,
				  "ssh: the private key's public part is not "
				  "a plain key");
	return public_line(type, key, kn, out, cap, err);
}
