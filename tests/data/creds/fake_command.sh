#!/bin/sh
# Stand-in credential command for tests/unit/test_creds.c, run as
#   sh fake_command.sh COUNTER EXPFILE [MODE]
# Appends one line to COUNTER per run and prints the credential_process JSON
# with the Expiration read from EXPFILE; the secrets carry the run number so
# a cached result can be told from a fresh one. MODE: ok (default),
# malformed, v2, fail.
counter=$1
expfile=$2
mode=${3:-ok}
echo run >>"$counter"
n=$(wc -l <"$counter" | tr -d ' ')
exp=$(cat "$expfile")
version=1
case $mode in
malformed)
	echo '{"Version": 1, "AccessKeyId": "AKIDTEST",'
	exit 0
	;;
v2) version=2 ;;
fail)
	echo 'fake_command: no credentials today' >&2
	exit 1
	;;
esac
printf '{"Version":%s,"AccessKeyId":"AKIDTEST%s","SecretAccessKey":"secret-%s","SessionToken":"token-%s","Expiration":"%s"}\n' \
	"$version" "$n" "$n" "$n" "$exp"
