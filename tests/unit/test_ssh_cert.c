/* OpenSSH certificates as navette reads them (host/ssh/ssh_cert.c),
 * against lines that ssh-keygen made (tests/data/ssh/certs/gen.sh, kept
 * as hex): every field ssh-keygen -L shows, the plain public key, the
 * public part of a private key file; then hostile lines: cut anywhere,
 * lengths that lie, a type that does not match, bytes after the end. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/hex.h"
#include "ssh/ssh_cert.h"

#include "nv_test.h"

static char data_dir[1024];

/* The bytes of data_dir/NAME (hex in the file) into out; its length. */
static size_t load_hex(const char *name, char *out, size_t cap)
{
	char path[1200], *text = NULL;
	size_t n = 0, at = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", data_dir, name);
	f = fopen(path, "r");
	if (!f) {
		fprintf(stderr, "cannot read %s\n", path);
		exit(1);
	}
	text = malloc(256 * 1024);
	n = fread(text, 1, 256 * 1024, f);
	fclose(f);
	for (size_t i = 0; i + 1 < n && at + 1 < cap; i += 2) {
		if (text[i] == '\n')
			break;
		out[at++] = (char)(nv_hex_value((unsigned char)text[i]) << 4 |
				   nv_hex_value((unsigned char)text[i + 1]));
	}
	out[at] = '\0';
	free(text);
	return at;
}

static void read_text(const char *name, char *out, size_t cap)
{
	char path[1200];
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "%s/%s", data_dir, name);
	f = fopen(path, "r");
	n = f ? fread(out, 1, cap - 1, f) : 0;
	if (f)
		fclose(f);
	out[n] = '\0';
	while (n && (out[n - 1] == '\n'))
		out[--n] = '\0';
}

#define CA_FP "SHA256:w2+m1CMVAa+raLf7Zp7d3kdKBcZO1jFgnHjGmFcsfdI"

static void test_vectors(void)
{
	static char line[64 * 1024], pub[NV_SSH_PUBLIC_LINE_MAX], want[8192];
	nv_ssh_cert c;
	nv_err err;
	size_t n;

	read_text("ca.fingerprint.txt", want, sizeof(want));
	CHECK_STR(want, CA_FP); /* the vectors are the ones of this test */

	/* -I member-a -n alice,bob -z 42 -O clear -V 2030-01-01..02 */
	n = load_hex("ed25519-cert.pub.hex", line, sizeof(line));
	CHECK(nv_ssh_cert_parse(line, n, &c, pub, sizeof(pub), &err) == 0);
	CHECK_STR(c.type, "ssh-ed25519-cert-v01@openssh.com");
	CHECK_STR(c.key_type, "ssh-ed25519");
	CHECK(c.cert_type == NV_SSH_CERT_USER);
	CHECK(c.serial == 42);
	CHECK_STR(c.key_id, "member-a");
	CHECK(c.nprincipals == 2);
	CHECK_STR(c.principals[0], "alice");
	CHECK_STR(c.principals[1], "bob");
	CHECK(c.valid_after == 1893456000u);  /* 2030-01-01T00:00:00Z */
	CHECK(c.valid_before == 1893542400u); /* 2030-01-02T00:00:00Z */
	CHECK_STR(c.ca_type, "ssh-ed25519");
	CHECK_STR(c.ca_fingerprint, CA_FP);
	CHECK_STR(c.fingerprint,
		  "SHA256:vBQY/ajrXQKpzcGDfYxdi3smBm5BCXgu6NGSvORDJXE");
	read_text("ed25519.pub.txt", want, sizeof(want));
	CHECK(strncmp(pub, want, strlen(pub)) == 0 && want[strlen(pub)] == ' ');

	/* an expired one, ECDSA: -V 20200101:20200102 -z 7 */
	n = load_hex("ecdsa-cert.pub.hex", line, sizeof(line));
	CHECK(nv_ssh_cert_parse(line, n, &c, NULL, 0, &err) == 0);
	CHECK_STR(c.key_type, "ecdsa-sha2-nistp256");
	CHECK_STR(c.key_id, "member ecdsa");
	CHECK(c.serial == 7 && c.nprincipals == 1);
	CHECK(c.valid_after == 1577836800u && c.valid_before == 1577923200u);
	CHECK_STR(c.fingerprint,
		  "SHA256:NKfOZBxwBADWoFn0r8/v42TGDIMYdm0zjlEhO01oGXc");

	/* RSA, forever, no principal, the largest serial */
	n = load_hex("rsa-cert.pub.hex", line, sizeof(line));
	CHECK(nv_ssh_cert_parse(line, n, &c, pub, sizeof(pub), &err) == 0);
	CHECK(c.serial == UINT64_MAX && c.nprincipals == 0);
	CHECK(c.valid_after == 0 && c.valid_before == NV_SSH_CERT_FOREVER);
	read_text("rsa.pub.txt", want, sizeof(want));
	CHECK(strncmp(pub, want, strlen(pub)) == 0 && want[strlen(pub)] == ' ');

	/* a host certificate is told apart */
	n = load_hex("host-cert.pub.hex", line, sizeof(line));
	CHECK(nv_ssh_cert_parse(line, n, &c, NULL, 0, &err) == 0);
	CHECK(c.cert_type == NV_SSH_CERT_HOST);
	CHECK_STR(c.principals[0], "login.example.org");
}

static void test_private_key(void)
{
	static char text[64 * 1024], pub[NV_SSH_PUBLIC_LINE_MAX], want[8192];
	nv_err err;
	size_t n;

	n = load_hex("ed25519.key.hex", text, sizeof(text));
	CHECK(nv_ssh_private_key_public(text, n, pub, sizeof(pub), &err) == 0);
	read_text("ed25519.pub.txt", want, sizeof(want));
	CHECK(strncmp(pub, want, strlen(pub)) == 0 && strlen(pub) > 60);
	n = load_hex("rsa.key.hex", text, sizeof(text));
	CHECK(nv_ssh_private_key_public(text, n, pub, sizeof(pub), &err) == 0);
	read_text("rsa.pub.txt", want, sizeof(want));
	CHECK(strncmp(pub, want, strlen(pub)) == 0 && strlen(pub) > 300);
	/* not one: a PEM key, a cut key, too small a buffer */
	CHECK(nv_ssh_private_key_public("-----BEGIN RSA PRIVATE KEY-----\nAA"
					"AA\n-----END RSA PRIVATE KEY-----\n",
					70, pub, sizeof(pub),
					&err) == NV_EINVAL);
	CHECK(pub[0] == '\0');
	n = load_hex("ed25519.key.hex", text, sizeof(text));
	CHECK(nv_ssh_private_key_public(text, n / 2, pub, sizeof(pub), &err) ==
	      NV_EINVAL);
	CHECK(nv_ssh_private_key_public(text, n, pub, 20, &err) == NV_ENOMEM);
}

/* Re-encodes blob as a cert line of its own type word. */
static size_t line_of(const unsigned char *blob, size_t n, char *out)
{
	static const char type[] = "ssh-ed25519-cert-v01@openssh.com ";

	memcpy(out, type, sizeof(type) - 1);
	nv_ssh_b64_encode(blob, n, out + sizeof(type) - 1, 1);
	return strlen(out);
}

static void test_hostile(void)
{
	static char line[64 * 1024], other[64 * 1024];
	static unsigned char blob[NV_SSH_KEY_BLOB_MAX];
	nv_ssh_cert c;
	nv_err err;
	size_t n, words, cut_ok = 0;
	long bn;
	char *sp;

	n = load_hex("ed25519-cert.pub.hex", line, sizeof(line));
	sp = strchr(line, ' ');
	words = (size_t)(strchr(sp + 1, ' ') - (sp + 1));
	bn = nv_ssh_b64_decode(sp + 1, words, blob, sizeof(blob));
	CHECK(bn > 200);
	/* the blob cut at every length: refused, never read past */
	for (long k = 0; k < bn; k++) {
		size_t ln = line_of(blob, (size_t)k, other);
		if (nv_ssh_cert_parse(other, ln, &c, NULL, 0, &err) ==
			    NV_EINVAL &&
		    err.message[0])
			cut_ok++;
	}
	CHECK(cut_ok == (size_t)bn);
	/* a byte more after the signature */
	blob[bn] = 0;
	CHECK(nv_ssh_cert_parse(other, line_of(blob, (size_t)bn + 1, other), &c,
				NULL, 0, &err) == NV_EINVAL);
	CHECK(strstr(err.message, "after its signature") != NULL);
	/* a length that lies: the key id's claims 4 GiB */
	{
		unsigned char bad[NV_SSH_KEY_BLOB_MAX];
		/* type(4+32) nonce(4+32) pk(4+32) serial 8 type 4 -> key id */
		size_t at = 36 + 36 + 36 + 8 + 4;
		memcpy(bad, blob, (size_t)bn);
		bad[at] = bad[at + 1] = bad[at + 2] = bad[at + 3] = 0xff;
		CHECK(nv_ssh_cert_parse(other, line_of(bad, (size_t)bn, other),
					&c, NULL, 0, &err) == NV_EINVAL);
		CHECK(strstr(err.message, "ends inside its key id") != NULL);
		/* a control byte in the key id */
		memcpy(bad, blob, (size_t)bn);
		bad[at + 4] = '\n';
		CHECK(nv_ssh_cert_parse(other, line_of(bad, (size_t)bn, other),
					&c, NULL, 0, &err) == NV_EINVAL);
	}
	/* the line names another type than the blob */
	memcpy(other, "ssh-rsa-cert-v01@openssh.com", 28);
	memcpy(other + 28, sp, n - (size_t)(sp - line) + 1);
	CHECK(nv_ssh_cert_parse(other, strlen(other), &c, NULL, 0, &err) ==
	      NV_EINVAL);
	/* a plain public key, two lines, a NUL, nothing */
	CHECK(nv_ssh_cert_parse("ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFOsoJ7c",
				44, &c, NULL, 0, &err) == NV_EINVAL);
	memcpy(other, line, n);
	memcpy(other + n, "\nx", 2);
	CHECK(nv_ssh_cert_parse(other, n + 2, &c, NULL, 0, &err) == NV_EINVAL);
	other[10] = '\0';
	CHECK(nv_ssh_cert_parse(other, n, &c, NULL, 0, &err) == NV_EINVAL);
	CHECK(nv_ssh_cert_parse("", 0, &c, NULL, 0, &err) == NV_EINVAL);
	/* the original still parses, with its final newline */
	CHECK(nv_ssh_cert_parse(line, n, &c, NULL, 0, &err) == 0);
	CHECK(line[n - 1] == '\n');
}

int main(void)
{
	const char *data = getenv("NAVETTE_TEST_DATA");

	if (data && *data)
		snprintf(data_dir, sizeof(data_dir), "%s/ssh/certs", data);
	else {
		snprintf(data_dir, sizeof(data_dir), "%s", __FILE__);
		char *slash = strrchr(data_dir, '/');
		if (slash)
			*slash = '\0';
		strncat(data_dir, "/../data/ssh/certs",
			sizeof(data_dir) - strlen(data_dir) - 1);
	}
	test_vectors();
	test_private_key();
	test_hostile();
	return nv_test_done();
}
