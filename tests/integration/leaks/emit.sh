#!/bin/sh
# The command of the leak test's jobs (tests/integration/creds/test_leaks.sh
# copies it into its temporary project). It holds no secret: it reads the
# corpus, generated at test time, from files outside the repository and
# outside NAVETTE_HOME, named by the job's environment:
#
#   CORPUS    lines "INDEX<TAB>MODE<TAB>LABEL<TAB>VALUE"; MODE reg (a loaded
#             credential's value or an encoding of it: printed alone and in
#             framings) or self (a value whose own shape gives it away: a
#             JWT, an AWS key id); ctx values only show inside FRAMED
#   FRAMED    whole lines holding shapes in context (presigned URLs,
#             Authorization headers, PEM blocks, URLs with passwords...)
#   SPLITS    a folder of N.a/N.b pairs printed with a pause in between,
#             so a value is cut across writes (and pipe reads)
#   LONG      lines "SEP<TAB>COUNT<TAB>VALUE": one long line repeating VALUE
#   ORDINARY  lines that must come out verbatim
#   WAIT_FOR  (optional) print the first half, then wait for this file
set -eu
tab=$(printf '\t')

emit_corpus() {
	while IFS="$tab" read -r idx mode label value; do
		case $mode in
		reg)
			printf '%s\n' "$value"
			printf 'stderr: %s\n' "$value" >&2
			printf '{"entry": %s, "kind": "%s", "token": "%s"}\n' \
				"$idx" "$label" "$value"
			printf 'GET https://api.example.com/v1/items?access_token=%s&page=2\n' \
				"$value"
			printf 'value=%s; (%s)\n' "$value" "$value" >&2
			;;
		self)
			printf '%s\n' "$value"
			printf '{"entry": %s, "value": "%s"}\n' "$idx" "$value" >&2
			;;
		esac
	done <"$CORPUS"
	cat "$FRAMED"
	sed 's/^/stderr| /' "$FRAMED" >&2
}

emit_long() {
	while IFS="$tab" read -r sep count value; do
		case $sep in
		comma) s=, ;;
		space) s=' ' ;;
		*) s= ;;
		esac
		line=
		i=0
		while [ "$i" -lt "$count" ]; do
			line=$line$value$s
			i=$((i + 1))
		done
		printf 'long: %s\n' "$line"
	done <"$LONG"
}

emit_splits() {
	for a in "$SPLITS"/*.a; do
		cat "$a"
		sleep 0.3
		cat "${a%.a}.b"
	done
}

emit_ordinary() {
	echo "ordinary: commit $NAVETTE_COMMIT"
	sum=$(shasum -a 256 "$NAVETTE_INPUTS/ordinary" | cut -d' ' -f1)
	echo "ordinary: sha256 $sum"
	cat "$ORDINARY"
}

emit_ordinary
emit_corpus
emit_long
if [ -n "${WAIT_FOR:-}" ]; then
	echo "slow: waiting"
	i=0
	while [ ! -e "$WAIT_FOR" ] && [ "$i" -lt 300 ]; do
		sleep 0.1
		i=$((i + 1))
	done
	echo "slow: going on"
fi
emit_splits
emit_ordinary
echo "emit: done"
