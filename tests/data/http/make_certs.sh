#!/bin/sh
# Makes a throw-away CA and a server certificate for 127.0.0.1/localhost in
# DIR (a temp folder of the test: private keys are never committed), plus
# the server's public key and its pin computed by the openssl CLI, so the
# test can check nv_http_pin_from_pem against an independent computation.
set -eu
# need_dir NAME...: refuses to go on (exit 2) unless each variable NAME
# holds a folder this script may write under: absolute, not /, no '..',
# inside TMPDIR, /tmp, NEED_DIR_ROOT or a build folder (one with a
# CMakeCache.txt). tests/integration/lib.sh's guard, for a script that
# does not source it (POSIX sh).
need_dir() {
	for name in "$@"; do
		eval "value=\${$name-}"
		case $value in
		'' | / | //* | [!/]* | *..*)
			echo "$0: refusing to run: $name='$value' is not a folder it may write under" >&2
			exit 2 ;;
		esac
		for root in "${TMPDIR:-/tmp}" /tmp "${NEED_DIR_ROOT:-/nonexistent}"; do
			for root in "$root" "$(cd "$root" 2>/dev/null && pwd -P)"; do
				case ${root%/} in '' | /) continue ;; esac
				case $value/ in "${root%/}"/?*) continue 3 ;; esac
			done
		done
		root=$value
		while [ "$root" != / ]; do
			[ -f "$root/CMakeCache.txt" ] && continue 2
			root=$(dirname "$root")
		done
		echo "$0: refusing to run: $name='$value' is outside TMPDIR, /tmp and any build folder" >&2
		exit 2
	done
}
dir=$1
need_dir dir
cd "$dir"
ec="-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes"
openssl req -x509 $ec -keyout ca.key -out ca.pem -days 2 \
	-subj /CN=navette-test-ca \
	-addext basicConstraints=critical,CA:TRUE \
	-addext keyUsage=critical,keyCertSign,cRLSign 2>/dev/null
openssl req $ec -keyout server.key -out server.csr \
	-subj /CN=127.0.0.1 2>/dev/null
printf '%s\n' 'subjectAltName=IP:127.0.0.1,DNS:localhost' \
	'basicConstraints=CA:FALSE' \
	'keyUsage=critical,digitalSignature' \
	'extendedKeyUsage=serverAuth' >ext.cnf
openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key \
	-CAcreateserial -out server.pem -days 2 -extfile ext.cnf 2>/dev/null
openssl pkey -in server.key -pubout -out server.pub.pem
printf 'sha256//%s' "$(openssl pkey -in server.pub.pem -pubin -outform der |
	openssl dgst -sha256 -binary | openssl base64 -A)" >pin.txt
