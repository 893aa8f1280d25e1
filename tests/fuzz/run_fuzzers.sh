#!/usr/bin/env bash
# Runs the libFuzzer targets of a build configured with clang and
# -DNAVETTE_FUZZ=ON (-DNAVETTE_SANITIZE=ON too, for ASan and UBSan), one
# after another, each to RUNS executions; merges what each found,
# minimised (-merge=1: only inputs that add coverage), into
# tests/fuzz/corpus/TARGET/, which ctest's replay runs; and prints a
# table: target, executions, exec/s, corpus files, findings. A finding is
# a file libFuzzer left in the run's artifacts folder (crash-, leak-,
# timeout-, oom-), named in the table; a target stops at its first.
#
#   tests/fuzz/run_fuzzers.sh BUILD_DIR [RUNS] [TARGET...]
#
# RUNS defaults to 10000000; the targets to every fuzz_*.c. Each target's
# dictionary (tests/fuzz/TARGET.dict) is used when there is one. NICE (10)
# is the niceness the fuzzers run at; the logs stay in the folder printed.
set -eu -o pipefail
. "$(dirname "$0")/../need_dir_lib.sh"

if [ $# -lt 1 ]; then
	echo "usage: $0 BUILD_DIR [RUNS] [TARGET...]" >&2
	exit 2
fi
build=$1
runs=${2:-10000000}
shift
[ $# -gt 0 ] && shift
src=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/navette-fuzzrun.XXXXXX")
need_dir work

targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
	for f in "$src"/fuzz_*.c; do
		targets+=("$(basename "$f" .c)")
	done
fi

echo "logs: $work"
printf '| %-20s | %12s | %8s | %6s | %s |\n' target executions exec/s \
	corpus findings
printf '|%s|%s|%s|%s|%s|\n' ---------------------- -------------- \
	---------- -------- ----------
for t in "${targets[@]}"; do
	bin=$build/tests/$t
	if [ ! -x "$bin" ]; then
		printf '| %-20s | %12s | %8s | %6s | %s |\n' "$t" - - - \
			"not built ($bin)"
		continue
	fi
	mkdir -p "$work/$t/new" "$work/$t/artifacts" "$work/$t/seed" \
		"$src/corpus/$t"
	# the saved corpus, its NAME.hex files decoded (replay.c's format:
	# an input that looks like a secret is kept as hex digits)
	for f in "$src/corpus/$t"/*; do
		[ -f "$f" ] || continue
		case $f in
		*.hex) tr -d ' \n\r\t' <"$f" | perl -pe '$_ = pack("H*", $_)' \
			>"$work/$t/seed/$(basename "$f" .hex)" ;;
		*) cp "$f" "$work/$t/seed/" ;;
		esac
	done
	dict=()
	[ -f "$src/$t.dict" ] && dict=("-dict=$src/$t.dict")
	# a finding ends the run with a nonzero status: the table says so
	nice -n "${NICE:-10}" "$bin" -runs="$runs" -timeout=10 \
		-rss_limit_mb=2048 -max_len=8192 -print_final_stats=1 \
		-artifact_prefix="$work/$t/artifacts/" ${dict[@]+"${dict[@]}"} \
		"$work/$t/new" "$work/$t/seed" >"$work/$t/fuzz.log" 2>&1 ||
		true
	execs=$(awk '/^stat::number_of_executed_units:/ { print $2 }' \
		"$work/$t/fuzz.log")
	rate=$(awk '/^stat::average_exec_per_sec:/ { print $2 }' \
		"$work/$t/fuzz.log")
	findings=$(cd "$work/$t/artifacts" && ls | tr '\n' ' ')
	# (merged into the decoded seeds; what the merge adds is copied to
	# the saved corpus as it is: lua/own_tree_test names any that looks
	# like a secret, to be kept as hex: od -An -v -tx1 F | tr -d ' \n')
	ls "$work/$t/seed" >"$work/$t/before"
	nice -n "${NICE:-10}" "$bin" -merge=1 -timeout=10 -rss_limit_mb=2048 \
		"$work/$t/seed" "$work/$t/new" >"$work/$t/merge.log" 2>&1 ||
		echo "$t: the merge failed, see $work/$t/merge.log" >&2
	for f in "$work/$t/seed"/*; do
		[ -f "$f" ] || continue
		grep -qxF "$(basename "$f")" "$work/$t/before" ||
			cp "$f" "$src/corpus/$t/"
	done
	files=$(find "$src/corpus/$t" -type f | wc -l | tr -d ' ')
	printf '| %-20s | %12s | %8s | %6s | %s |\n' "$t" "${execs:-?}" \
		"${rate:-?}" "$files" "${findings:-none}"
done
