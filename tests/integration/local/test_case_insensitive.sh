# Names a case-insensitive volume (APFS by default) takes for one: tested
# on any system through NAVETTE_FS_CASE_INSENSITIVE=1, which forces the
# rules. A job's output named like its log in another case is refused and
# the log stays the log; keys that differ only in case or NFC/NFD form are
# refused by the file store, naming both; the store's marker cannot be
# reached in another case, on any volume.
set -eu -o pipefail
. "$(dirname "$0")/../lib.sh"
set +e # each check reports its own failure; finish sets the status

R=$(new_repo folding)
put_file "$R" README <<'EOF'
upper
EOF
put_file "$R" log.lua <<'EOF'
local navette = require "navette"
navette.job {
  name = "log-named",
  command = { "sh", "-c", "echo the real log; echo mine >\"$NAVETTE_OUTPUTS/Navette.log\"" },
}
EOF
put_file "$R" keys.lua <<'EOF'
local navette = require "navette"
navette.storage.put("inputs/README", "README")
local ok, err = pcall(navette.storage.put, "inputs/readme", "README")
print("lower: " .. (ok and "stored" or tostring(err.message or err)))
ok, err = pcall(navette.storage.put, "inputs/caf\u{e9}", "README")
print("nfc: " .. (ok and "stored" or tostring(err.message or err)))
ok, err = pcall(navette.storage.put, "inputs/cafe\u{301}", "README")
print("nfd: " .. (ok and "stored" or tostring(err.message or err)))
ok, err = pcall(navette.storage.put, ".NAVETTE-STORE/meta/x", "README")
print("marker: " .. (ok and "stored" or tostring(err.message or err)))
EOF
commit_all "$R" >/dev/null

# ---- an output named like the log, in another case ---------------------------

nv_in "$R" run log.lua --wait
check_rc "the job with an output named Navette.log fails" 1
ID=$(submitted_id)
check_eq "at outputs_published" \
	"$("$NAVETTE" status "$ID" --json 2>/dev/null |
		json 'd["failure"]["phase"]' 2>&1)" outputs_published
check_contains "the reason names the output and the log" \
	"$("$NAVETTE" status "$ID" --json 2>/dev/null |
		json 'd["failure"]["reason"]' 2>&1)" \
	"output 'Navette.log' has a reserved name (navette's 'navette.log'"
check_contains "the published log is the job's log" \
	"$(cat "$(store_dir folding "$ID")/navette.log" 2>&1)" "the real log"

# ---- keys that fold to one -----------------------------------------------------

NAVETTE_FS_CASE_INSENSITIVE=1 nv_in "$R" run keys.lua
check_rc "the recipe runs" 0
check_match "a key differing only in case is refused, both named" "$OUT" \
	"^lower: .*key 'inputs/readme' collides with the existing 'inputs/README'"
check_match "the NFC form is stored" "$OUT" "^nfc: stored$"
check_match "its NFD form is refused" "$OUT" \
	"^nfd: .*key 'inputs/cafe.*' collides with the existing 'inputs/caf"
check_match "the marker in capitals is reserved" "$OUT" \
	"^marker: .*invalid key '.NAVETTE-STORE/meta/x'.*reserved"

finish
