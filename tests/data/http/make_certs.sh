#!/bin/sh
# Makes a throw-away CA and a server certificate for 127.0.0.1/localhost in
# DIR (a temp folder of the test: private keys are never committed), plus
# the server's public key and its pin computed by the openssl CLI, so the
# test can check nv_http_pin_from_pem against an independent computation.
set -eu
. "$(dirname "$0")/../../need_dir_lib.sh"
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
# A client certificate (CN navette-client) from the same CA, for TLS client
# identities (a kubeconfig's client-certificate and client-key)
openssl req $ec -keyout client.key -out client.csr \
	-subj /CN=navette-client 2>/dev/null
printf '%s\n' 'basicConstraints=CA:FALSE' \
	'keyUsage=critical,digitalSignature' \
	'extendedKeyUsage=clientAuth' >client.cnf
openssl x509 -req -in client.csr -CA ca.pem -CAkey ca.key \
	-CAcreateserial -out client.pem -days 2 -extfile client.cnf 2>/dev/null
