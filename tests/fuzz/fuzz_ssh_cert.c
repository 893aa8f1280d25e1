/* Fuzz target: an OpenSSH certificate line (host/ssh/ssh_cert.c), as a
 * credential source or a signer hands it to navette, and the same bytes
 * as a private key file whose public part is read. Checks invariants,
 * not just the absence of crashes: a refusal says why and leaves no
 * public key; an accepted certificate has a validity that makes sense,
 * bounded texts, fingerprints of the right shape and a public key line of
 * the certified type. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ssh/ssh_cert.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_fp(const char *fp)
{
	if (strlen(fp) != NV_SSH_FINGERPRINT_MAX - 1 ||
	    memcmp(fp, "SHA256:", 7) != 0)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char pub[NV_SSH_PUBLIC_LINE_MAX];
	nv_ssh_cert c;
	nv_err err;
	const char *text = (const char *)data;

	if (nv_ssh_cert_parse(text, size, &c, pub, sizeof(pub), &err) != 0) {
		if (!err.message[0] || pub[0])
			abort();
	} else {
		size_t kt = strlen(c.key_type);
		if (c.valid_after >= c.valid_before ||
		    (c.cert_type != NV_SSH_CERT_USER &&
		     c.cert_type != NV_SSH_CERT_HOST) ||
		    c.nprincipals < 0 ||
		    c.nprincipals > NV_SSH_CERT_PRINCIPALS_MAX ||
		    strlen(c.key_id) > NV_SSH_CERT_TEXT_MAX ||
		    strncmp(pub, c.key_type, kt) != 0 || pub[kt] != ' ' ||
		    !strstr(c.type, "-cert-v01@openssh.com"))
			abort();
		for (int i = 0; i < c.nprincipals; i++)
			if (strlen(c.principals[i]) > NV_SSH_CERT_TEXT_MAX)
				abort();
		check_fp(c.fingerprint);
		check_fp(c.ca_fingerprint);
	}
	if (nv_ssh_private_key_public(text, size, pub, sizeof(pub), &err) !=
	    0) {
		if (!err.message[0] || pub[0])
			abort();
	} else if (!strchr(pub, ' ') || strstr(pub, "-cert-v01@")) {
		abort();
	}
	return 0;
}
