/* See ssh_key.h. A key's blob (RFC 4253 6.6) starts with its type as an
 * SSH string: a 32-bit big-endian length and the name. Base64 is read
 * strictly (the standard alphabet, padding only at the end, nothing
 * else): a pinned fingerprint must come from the bytes ssh will see. */
#include "ssh/ssh_key.h"

#include <stdio.h>
#include <string.h>

#include "core/hex.h"
#include "core/sha256.h"
#include "ssh/ssh_cmd.h"

static const char b64_digits[] =
	"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

static int b64_value(unsigned char c)
{
	const char *p = c ? strchr(b64_digits, c) : NULL;
	return p ? (int)(p - b64_digits) : -1;
}

/* Strict base64 of in[0..len) into out (cap bytes); -1 when malformed or
 * too long, else the decoded length. */
long nv_ssh_b64_decode(const char *in, size_t len, unsigned char *out,
		       size_t cap)
{
	size_t at = 0;

	if (len == 0 || len % 4 != 0 || len / 4 * 3 > cap)
		return -1;
	for (size_t i = 0; i < len; i += 4) {
		int v[4], pad = 0;
		unsigned long group;

		for (int k = 0; k < 4; k++) {
			unsigned char c = (unsigned char)in[i + k];
			if (c == '=' && i + 4 == len && k >= 2) {
				v[k] = 0;
				pad++;
				continue;
			}
			if (pad || (v[k] = b64_value(c)) < 0)
				return -1; /* a digit after '=', or no digit */
		}
		group = ((unsigned long)v[0] << 18) |
			((unsigned long)v[1] << 12) |
			((unsigned long)v[2] << 6) | (unsigned long)v[3];
		out[at++] = (unsigned char)(group >> 16);
		if (pad < 2)
			out[at++] = (unsigned char)(group >> 8);
		if (pad < 1)
			out[at++] = (unsigned char)group;
	}
	return (long)at;
}

static int is_type_char(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
	       c == '@' || c == '.';
}

/* A key type's name as ssh writes them ("ssh-ed25519",
 * "ecdsa-sha2-nistp256", "sk-ssh-ed25519@openssh.com"...). */
static int is_key_type(const char *s, size_t n)
{
	if (n == 0 || n > NV_SSH_KEY_TYPE_MAX)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!is_type_char((unsigned char)s[i]))
			return 0;
	return (n > 4 && memcmp(s, "ssh-", 4) == 0) ||
	       (n > 6 && memcmp(s, "ecdsa-", 6) == 0) ||
	       (n > 3 && memcmp(s, "sk-", 3) == 0);
}

/* Decodes b64 (n bytes) and checks that its blob names type (tn bytes).
 * -> the blob's length, or NV_EINVAL. */
static int check_blob(const char *type, size_t tn, const char *b64, size_t n,
		      unsigned char *blob, size_t *blob_len, nv_err *err)
{
	long got = nv_ssh_b64_decode(b64, n, blob, NV_SSH_KEY_BLOB_MAX);
	unsigned long name_len;

	if (got < 0)
		return nv_err_set(err, NV_EINVAL,
				  "copy the whole line of the .pub file or of "
				  "ssh-keyscan",
				  "ssh: the key is not base64 (or is over %zu "
				  "bytes)",
				  NV_SSH_KEY_BLOB_MAX);
	if (got < 4)
		return nv_err_set(err, NV_EINVAL, NULL,
				  "ssh: the key's blob is too short");
	name_len = ((unsigned long)blob[0] << 24) |
		   ((unsigned long)blob[1] << 16) |
		   ((unsigned long)blob[2] << 8) | blob[3];
	if (name_len != tn || (size_t)got - 4 < tn ||
	    memcmp(blob + 4, type, tn) != 0)
		return nv_err_set(err, NV_EINVAL,
				  "the type before the key must be the key's "
				  "own",
				  "ssh: the key's blob is not a %.*s key",
				  (int)tn, type);
	*blob_len = (size_t)got;
	return 0;
}

/* Splits line into at most 3 words at blanks. -> how many. */
static int split_words(const char *line, size_t len, const char *w[3],
		       size_t n[3])
{
	int count = 0;
	size_t i = 0;

	while (i < len && count < 3) {
		while (i < len && (line[i] == ' ' || line[i] == '\t'))
			i++;
		if (i >= len || line[i] == '\n' || line[i] == '\r')
			break;
		w[count] = line + i;
		while (i < len && line[i] != ' ' && line[i] != '\t' &&
		       line[i] != '\n' && line[i] != '\r')
			i++;
		n[count] = (size_t)(line + i - w[count]);
		count++;
	}
	return count;
}

void nv_ssh_b64_encode(const unsigned char *in, size_t len, char *out, int pad)
{
	size_t at = 0, i;

	for (i = 0; i + 2 < len; i += 3) {
		unsigned long g = ((unsigned long)in[i] << 16) |
				  ((unsigned long)in[i + 1] << 8) | in[i + 2];
		out[at++] = b64_digits[(g >> 18) & 63];
		out[at++] = b64_digits[(g >> 12) & 63];
		out[at++] = b64_digits[(g >> 6) & 63];
		out[at++] = b64_digits[g & 63];
	}
	if (i < len) {
		unsigned long g = (unsigned long)in[i] << 16;
		if (i + 1 < len)
			g |= (unsigned long)in[i + 1] << 8;
		out[at++] = b64_digits[(g >> 18) & 63];
		out[at++] = b64_digits[(g >> 12) & 63];
		if (i + 1 < len)
			out[at++] = b64_digits[(g >> 6) & 63];
		while (pad && at % 4)
			out[at++] = '=';
	}
	out[at] = '\0';
}

int nv_ssh_fingerprint(const char *line, size_t len,
		       char out[NV_SSH_FINGERPRINT_MAX], nv_err *err)
{
	unsigned char blob[NV_SSH_KEY_BLOB_MAX];
	const char *w[3] = {NULL, NULL, NULL};
	size_t n[3] = {0, 0, 0}, blob_len = 0;
	int count = split_words(line, len, w, n), t, rc;

	out[0] = '\0';
	if (memchr(line, '\0', len))
		return nv_err_set(err, NV_EINVAL, NULL,
				  "ssh: the key line holds a NUL byte");
	if (count >= 2 && is_key_type(w[0], n[0]))
		t = 0;
	else if (count >= 3 && is_key_type(w[1], n[1]))
		t = 1;
	else
		return nv_err_set(err, NV_EINVAL,
				  "give the public key as \"TYPE BASE64\" (a "
				  ".pub file) or as ssh-keyscan prints it",
				  "ssh: no public key in the line");
	rc = check_blob(w[t], n[t], w[t + 1], n[t + 1], blob, &blob_len, err);
	if (rc)
		return rc;
	return nv_ssh_blob_fingerprint(blob, blob_len, out, err);
}

int nv_ssh_blob_fingerprint(const unsigned char *blob, size_t blob_len,
			    char out[NV_SSH_FINGERPRINT_MAX], nv_err *err)
{
	unsigned char digest[32];
	char hex[NV_SHA256_HEX_LEN + 1];
	int rc = nv_sha256_bytes(blob, blob_len, hex, err);

	out[0] = '\0';
	if (rc)
		return rc;
	for (int i = 0; i < 32; i++)
		digest[i] =
			(unsigned char)(nv_hex_value((unsigned char)hex[2 * i])
						<< 4 |
					nv_hex_value(
						(unsigned char)hex[2 * i + 1]));
	memcpy(out, "SHA256:", 7);
	nv_ssh_b64_encode(digest, sizeof(digest), out + 7, 0);
	return 0;
}

int nv_ssh_known_hosts_line(const char *host, int port, const char *type,
			    const char *b64, char *out, size_t cap, nv_err *err)
{
	unsigned char blob[NV_SSH_KEY_BLOB_MAX];
	char lower[256];
	size_t tn = type ? strlen(type) : 0, blob_len = 0, hn;
	int rc, w;

	if (cap)
		out[0] = '\0';
	rc = nv_ssh_check_host("host", host, err);
	if (rc)
		return rc;
	if (port < 1 || port > 65535)
		return nv_err_set(err, NV_EINVAL, NULL,
				  "ssh: port must be from 1 to 65535 (got %d)",
				  port);
	if (!is_key_type(type, tn))
		return nv_err_set(err, NV_EINVAL,
				  "a key type is as ssh-keyscan prints it "
				  "(ssh-ed25519, ecdsa-sha2-nistp256, "
				  "ssh-rsa...)",
				  "ssh: bad key type");
	rc = check_blob(type, tn, b64 ? b64 : "", b64 ? strlen(b64) : 0, blob,
			&blob_len, err);
	if (rc)
		return rc;
	hn = strlen(host); /* at most 253: checked */
	for (size_t i = 0; i <= hn; i++)
		lower[i] =
			(char)(host[i] >= 'A' && host[i] <= 'Z' ? host[i] + 32
								: host[i]);
	if (port == 22)
		w = snprintf(out, cap, "%s %s %s", lower, type, b64);
	else
		w = snprintf(out, cap, "[%s]:%d %s %s", lower, port, type, b64);
	if (w < 0 || (size_t)w >= cap) {
		if (cap)
			out[0] = '\0';
		return nv_err_set(err, NV_ENOMEM, NULL,
				  "ssh: the known_hosts line is over %zu bytes",
				  cap);
	}
	return 0;
}
