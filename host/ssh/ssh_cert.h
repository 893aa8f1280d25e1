/* OpenSSH certificates (PROTOCOL.certkeys), read as navette needs them:
 * what a `...-cert-v01@openssh.com AAAA...` line says (its key type,
 * serial, user or host, key id, principals, validity as exact epoch
 * seconds, the signing CA's fingerprint) and the plain public key it
 * certifies; and the public key an OpenSSH private key file carries in
 * clear, so that a signer can be given it. Nothing here checks the CA's
 * signature: sshd does; navette reads the validity to renew before sshd
 * would refuse. Every length is bounded; a malformed or hostile line is
 * refused with NV_EINVAL saying what is wrong. No Lua, no allocation. */
#ifndef NV_SSH_CERT_H
#define NV_SSH_CERT_H

#include <stddef.h>
#include <stdint.h>

#include "core/nv_err.h"
#include "ssh/ssh_key.h"

#define NV_SSH_CERT_PRINCIPALS_MAX 32
#define NV_SSH_CERT_TEXT_MAX       255 /* a key id, a principal */
/* "TYPE BASE64" of the certified key (an RSA key of 16384 bits at most) */
#define NV_SSH_PUBLIC_LINE_MAX                                                 \
	(NV_SSH_KEY_TYPE_MAX + 2 + 4 * ((NV_SSH_KEY_BLOB_MAX + 2) / 3) + 1)
/* valid_before of a certificate that never expires */
#define NV_SSH_CERT_FOREVER UINT64_MAX

enum { NV_SSH_CERT_USER = 1, NV_SSH_CERT_HOST = 2 };

typedef struct nv_ssh_cert {
	char type[NV_SSH_KEY_TYPE_MAX + 1];     /* ssh-ed25519-cert-v01@... */
	char key_type[NV_SSH_KEY_TYPE_MAX + 1]; /* ssh-ed25519 */
	int cert_type;                          /* NV_SSH_CERT_USER, _HOST */
	uint64_t serial;
	char key_id[NV_SSH_CERT_TEXT_MAX + 1];
	char principals[NV_SSH_CERT_PRINCIPALS_MAX][NV_SSH_CERT_TEXT_MAX + 1];
	int nprincipals;       /* 0: any principal (ssh-keygen without -n) */
	uint64_t valid_after;  /* epoch seconds; 0: always */
	uint64_t valid_before; /* epoch seconds; NV_SSH_CERT_FOREVER */
	char ca_type[NV_SSH_KEY_TYPE_MAX + 1];
	char ca_fingerprint[NV_SSH_FINGERPRINT_MAX]; /* SHA256:... */
	char fingerprint[NV_SSH_FINGERPRINT_MAX];    /* the certified key's */
} nv_ssh_cert;

/* Reads a certificate line (len bytes: "TYPE BASE64 [comment]", as in a
 * KEY-cert.pub file; leading and trailing blanks and one final newline
 * allowed) into *c. With public_line (cap bytes), also writes the plain
 * public key it certifies as "KEY_TYPE BASE64". NV_EINVAL: not a
 * certificate, or malformed (it says where). */
int nv_ssh_cert_parse(const char *line, size_t len, nv_ssh_cert *c,
		      char *public_line, size_t cap, nv_err *err);

/* The public key of an OpenSSH private key (len bytes: the text of
 * "-----BEGIN OPENSSH PRIVATE KEY-----" ... "-----END ...", encrypted or
 * not: the public part is in clear) as "TYPE BASE64" into out (cap
 * bytes). NV_EINVAL when it is not one key in that format. */
int nv_ssh_private_key_public(const char *text, size_t len, char *out,
			      size_t cap, nv_err *err);

#endif
