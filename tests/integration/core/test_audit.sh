# The audit log through the CLI: side effects add hash-chained lines,
# mirrored to the store; `audit verify` names tampering (exit 1).
set -eu -o pipefail
. "$(dirname "$0")/../lib.sh"
set +e # each check reports its own failure; finish sets the status

R=$(new_repo audited)
printf 'data\n' | put_file "$R" data.txt
put_file "$R" job.lua <<'EOF2'
local navette = require "navette"
local d = navette.storage.put("inputs/data.txt", "data.txt")
navette.job { name = "audited", inputs = { d = d.url },
              command = { "sh", "-c", "sleep 30" } }
EOF2
commit_all "$R" >/dev/null
nv_in "$R" run job.lua
check_rc "run submits" 0
ID=$(submitted_id)
wait_state "$ID" "running" 60
nv cancel "$ID"
check_rc "cancel" 0
wait_state "$ID" "cancelled" 60

nv audit show --json
check_eq "three lines: upload, submit, cancel" \
	"$(printf '%s' "$OUT" | json '[e["action"] for e in d]')" \
	'["storage.put", "job.submit", "job.cancel"]'
check_eq "the submit names the job" \
	"$(printf '%s' "$OUT" | json 'd[1]["job"]')" "$ID"
nv audit show --job "$ID"
check_match "show --job filters" "$OUT" 'job.submit'
check_no_match "show --job leaves other jobs' lines out" "$OUT" 'storage.put'
nv audit verify
check_rc "an untouched log verifies" 0
check_match "and says so" "$OUT" 'intact: 3 line'

LOG=$NAVETTE_HOME/audit/audit.jsonl
MIRROR=$(find "$NAVETTE_HOME/store/_audit" -name audit.jsonl | head -1)
check_true "the log is mirrored to the store" test -n "$MIRROR"
check_true "the mirror matches the log" cmp -s "$LOG" "$MIRROR"

cp "$LOG" "$T/audit.orig"
# (sed into the log rather than sed -i, which BSD sed spells differently)
sed '2s/"job.submit"/"job.submiT"/' "$T/audit.orig" >"$LOG"
nv audit verify
check_rc "an edited line fails verification" 1
check_match "the edited line is named" "$OUT" 'edited at line 2'

cp "$T/audit.orig" "$LOG"
sed '2d' "$T/audit.orig" >"$LOG"
nv audit verify
check_rc "a removed line fails verification" 1
check_match "the removal is named" "$OUT" 'removed at line 2'

cp "$T/audit.orig" "$LOG"
awk 'NR==1{a=$0} NR==2{b=$0} NR==3{c=$0} END{print a; print c; print b}' \
	"$T/audit.orig" >"$LOG"
nv audit verify
check_rc "swapped lines fail verification" 1
check_match "the swap is named" "$OUT" 'reordered at line 2'

cp "$T/audit.orig" "$LOG"
# all but the last 20 bytes (head -c -N is GNU's only)
head -c "$(($(wc -c <"$T/audit.orig") - 20))" "$T/audit.orig" >"$LOG"
nv audit verify
check_rc "a truncated log fails verification" 1
check_match "the truncation is named" "$OUT" 'truncated'

# the last line cut off whole, at a line boundary: only audit/head tells
head -n 2 "$T/audit.orig" >"$LOG"
nv audit verify
check_rc "a log cut at a line boundary fails verification" 1
check_match "the cut at a line boundary is named" "$OUT" \
	'truncated at line 3: .*cut off the end'
nv audit show
check_rc "show on a log cut at a line boundary exits 1" 1
check_contains "show names the damage" "$ERR" "truncated at line 3"

# show on a damaged log: the lines it can read, then the damage, exit 1
awk 'NR==2{print "not a record"; next} {print}' "$T/audit.orig" >"$LOG"
nv audit show
check_rc "show on a log with a broken line exits 1" 1
check_no_match "show never prints nil for a broken line" "$OUT" 'nil'
check_match "show lists the lines that are records" "$OUT" \
	'^ +1 .*storage\.put'
check_contains "show names the broken line" "$ERR" "line 2"
check_contains "show says the log is damaged" "$ERR" "audit log is damaged"
check_contains "show says what to check: the mirror" "$ERR" "_audit/"
check_contains "show says what to check: verify" "$ERR" "navette audit verify"
nv audit show --json
check_rc "show --json on a damaged log exits 1" 1
check_eq "show --json lists the records it could read" \
	"$(printf '%s' "$OUT" | json '[e["seq"] for e in d]')" '[1, 3]'
cp "$T/audit.orig" "$LOG"
sed '2s/"job.submit"/"job.submiT"/' "$T/audit.orig" >"$LOG"
nv audit show --job "$ID"
check_rc "show --job on a log with an edited line exits 1" 1
check_contains "the edit is named" "$ERR" "edited at line 2"

cp "$T/audit.orig" "$LOG"
nv audit verify
check_rc "restored, it verifies again" 0
nv audit show
check_rc "restored, show exits 0" 0
check_eq "restored, show prints nothing on stderr" "$ERR" ""

finish
