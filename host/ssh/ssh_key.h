/* Host keys as navette pins them: the SHA256 fingerprint of a public key
 * (what `ssh-keygen -l` and ssh's own messages show: "SHA256:" and the
 * unpadded base64 of the sha256 of the key's blob), and the known_hosts
 * line that makes ssh trust that one key for one host and port. No Lua. */
#ifndef NV_SSH_KEY_H
#define NV_SSH_KEY_H

#include <stddef.h>

#include "core/nv_err.h"

/* "SHA256:" + 43 characters + NUL */
#define NV_SSH_FINGERPRINT_MAX 51
/* A key's blob once decoded (an RSA key of 16384 bits, a certificate). */
#define NV_SSH_KEY_BLOB_MAX ((size_t)16 * 1024)
#define NV_SSH_KEY_TYPE_MAX 64
/* "[host]:port type base64" */
#define NV_SSH_KNOWN_HOSTS_LINE_MAX                                            \
	(256 + 8 + NV_SSH_KEY_TYPE_MAX + 4 * NV_SSH_KEY_BLOB_MAX / 3 + 8)

/* The fingerprint of a public key line (len bytes): "TYPE BASE64
 * [comment]" as in a .pub file, or "HOST TYPE BASE64" as ssh-keyscan and
 * known_hosts write it. The blob must decode (strict base64) and name
 * TYPE as its own type. Into out; NV_EINVAL saying what is wrong. */
int nv_ssh_fingerprint(const char *line, size_t len,
		       char out[NV_SSH_FINGERPRINT_MAX], nv_err *err);

/* The known_hosts line trusting key (type, base64 blob) for host on port:
 * "host type b64", or "[host]:port type b64" for a port other than 22;
 * the host in lowercase, as ssh looks it up. Into out (cap bytes).
 * NV_EINVAL for a host ssh would misread, a bad type or blob. */
int nv_ssh_known_hosts_line(const char *host, int port, const char *type,
			    const char *b64, char *out, size_t cap,
			    nv_err *err);

/* Strict base64 (the standard alphabet, '=' only at the end) of in[0..len)
 * into out (cap bytes): the decoded length, or -1 when malformed or over
 * cap. */
long nv_ssh_b64_decode(const char *in, size_t len, unsigned char *out,
		       size_t cap);
/* Base64 of in into out (4 * ceil(len / 3) + 1 bytes), '=' padded when pad
 * (a .pub line) or not (a fingerprint). */
void nv_ssh_b64_encode(const unsigned char *in, size_t len, char *out, int pad);
/* "SHA256:..." of a key's blob (as ssh-keygen -l shows it). */
int nv_ssh_blob_fingerprint(const unsigned char *blob, size_t len,
			    char out[NV_SSH_FINGERPRINT_MAX], nv_err *err);

#endif
