#!/bin/sh
# A stand-in for OpenSSH's ssh, run by _navette.ssh.run through
# NAVETTE_SSH in tests/lua/ssh_client_test.lua. It checks the options
# navette must always give, then plays the login node that the host names:
# sshd hands the remote command to the login shell, played here by sh.
set -eu
for want in -F none -T BatchMode=yes StrictHostKeyChecking=yes \
	ForwardAgent=no ForwardX11=no ClearAllForwardings=yes \
	IdentitiesOnly=yes GlobalKnownHostsFile=/dev/null --; do
	found=0
	for a in "$@"; do
		if [ "$a" = "$want" ]; then
			found=1
		fi
	done
	if [ "$found" = 0 ]; then
		echo "fake ssh: no $want in: $*" >&2
		exit 254
	fi
done
if [ "${SHELL:-}" != /bin/sh ]; then
	echo "fake ssh: SHELL is '${SHELL:-}', not /bin/sh" >&2
	exit 254
fi
# the host follows "--", the command follows the host
while [ "$1" != "--" ]; do
	shift
done
host=$2
cmd=$3
case $host in
ok.test) exec sh -c "$cmd" ;;
banner.test)
	echo "Welcome to the login node"
	echo "stty: not a tty"
	sh -c "$cmd"
	echo "logout"
	;;
hostkey.test)
	echo "Host key verification failed." >&2
	exit 255
	;;
changed.test)
	echo "@@@ WARNING: REMOTE HOST IDENTIFICATION HAS CHANGED! @@@" >&2
	exit 255
	;;
denied.test)
	echo "alice@denied.test: Permission denied (publickey)." >&2
	exit 255
	;;
refused.test)
	echo "ssh: connect to host refused.test port 22: Connection refused" >&2
	exit 255
	;;
menu.test)
	echo "This account is restricted: use the web portal."
	exit 0
	;;
cut.test)
	sh -c "$cmd" | head -c 60
	echo "Connection to cut.test closed by remote host." >&2
	exit 255
	;;
slow.test)
	sleep 30
	;;
*)
	echo "ssh: Could not resolve hostname $host: Name or service not known" >&2
	exit 255
	;;
esac
