# need_dir NAME...: refuses to go on (exit 2) unless each variable NAME
# holds a folder this script may write under: absolute, not /, no '..',
# inside TMPDIR, /tmp, NEED_DIR_ROOT or a build folder (one with a
# CMakeCache.txt). The guard of the test-side scripts that do not source
# tests/integration/lib.sh (which has its own, bound to the test's $T);
# sourced by sh and bash alike: . "$(dirname "$0")/.../need_dir_lib.sh"
# (its callers run with set -eu; sourced alone, it says so too)
set -u
need_dir() {
	for nd_name in "$@"; do
		eval "nd_value=\${$nd_name-}"
		case $nd_value in
		'' | / | //* | [!/]* | *..*)
			echo "$0: refusing to run: $nd_name='$nd_value' is not a folder it may write under" >&2
			exit 2 ;;
		esac
		for nd_root in "${TMPDIR:-/tmp}" /tmp "${NEED_DIR_ROOT:-/nonexistent}"; do
			for nd_root in "$nd_root" "$(cd "$nd_root" 2>/dev/null && pwd -P)"; do
				case ${nd_root%/} in '' | /) continue ;; esac
				case $nd_value/ in "${nd_root%/}"/?*) continue 3 ;; esac
			done
		done
		nd_root=$nd_value
		while [ "$nd_root" != / ]; do
			[ -f "$nd_root/CMakeCache.txt" ] && continue 2
			nd_root=$(dirname "$nd_root")
		done
		echo "$0: refusing to run: $nd_name='$nd_value' is outside TMPDIR, /tmp and any build folder" >&2
		exit 2
	done
}
