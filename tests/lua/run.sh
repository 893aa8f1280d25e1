#!/usr/bin/env bash
# tests/lua/run.sh NAVETTE FILE: runs one of navette's Lua test files
# (navette test --host FILE), as ctest does, in a home of its own made for
# this run: NAVETTE_HOME and XDG_CONFIG_HOME in a fresh temporary folder,
# removed when it ends. Nothing a run leaves (a staged value, an audit
# line, a credentials folder), passed or failed, is seen by the next one,
# and never the user's own home.
set -eu -o pipefail
if [ $# -ne 2 ] || [ -z "$1" ] || [ -z "$2" ]; then
	echo "usage: $0 NAVETTE FILE" >&2
	exit 2
fi
navette=$1
file=$2
base=$(cd "${TMPDIR:-/tmp}" && pwd -P)
home=$(mktemp -d "$base/navette-lua.XXXXXX")
# (the guard of tests/integration/lib.sh's need_dir: a fresh folder of
# mktemp's, inside TMPDIR, never / nor empty)
case $home in
"$base"/navette-lua.?*) ;;
*)
	echo "$0: refusing to run: no temporary home in $base (got '$home')" >&2
	exit 2
	;;
esac
trap 'rm -rf -- "$home"' EXIT
export NAVETTE_HOME=$home/navette-home
export XDG_CONFIG_HOME=$home/config
"$navette" test --host "$file"
