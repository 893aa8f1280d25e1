# The audit log through the CLI: side effects add hash-chained lines,
# mirrored to the store; `audit verify` names tampering (exit 1).
. "$(dirname "$0")/lib.sh"

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

cp "$T/audit.orig" "$LOG"
nv audit verify
check_rc "restored, it verifies again" 0

finish
