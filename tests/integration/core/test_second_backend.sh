#!/usr/bin/env bash
# The rooms are ready for the next backends (issue 28): a second, throwaway
# backend (tests/second_backend/: podq, a toy Job controller) is added to a
# clone of this commit as a new backend would be: its Lua file, its C
# client and binding, and the one wiring line. The change, replayed as a
# patch on another clone, touches those files and nothing else; the clone
# builds; and the backend works through the contract alone: found by its
# file name, its settings validated, a credential of its own
# (navette.podq.check_credential), an endpoint that isolation attributes to
# its profile, a sweep sent as one indexed manifest whose launcher reads
# its task from JOB_COMPLETION_INDEX, its answers read back by status, and
# a command of its own on the command line, listed by `navette help`.
set -eu -o pipefail
. "$(dirname "$0")/../lib.sh"

SB=$NAVETTE_SOURCE/tests/second_backend # (read only)

# ---- adding it --------------------------------------------------------------

# add_podq TREE: what adding the backend is, in a clone of this commit
add_podq() {
	mkdir -p "$1/host/podq"
	cp "$SB/podq.lua" "$1/lua/navette/backends/podq.lua"
	cp "$SB/podq.h" "$SB/podq.c" "$SB/podq_lua.c" "$1/host/podq/"
	printf 'NV_NATIVE(podq)\n' >>"$1/host/lib/natives.def"
}

git clone -q "$NAVETTE_SOURCE" "$T/tree"
add_podq "$T/tree"
git -C "$T/tree" add -A
git -C "$T/tree" diff --cached --binary >"$T/podq.patch"

git clone -q "$NAVETTE_SOURCE" "$T/replay"
git -C "$T/replay" apply --index "$T/podq.patch"
touched=$(git -C "$T/replay" diff --cached --numstat | awk '{print $3 " " $1 " " $2}' | sort)
check_eq "adding a backend touches its own files and the one wiring line" \
	"$touched" "host/lib/natives.def 1 0
host/podq/podq.c $(wc -l <"$SB/podq.c" | tr -d ' ') 0
host/podq/podq.h $(wc -l <"$SB/podq.h" | tr -d ' ') 0
host/podq/podq_lua.c $(wc -l <"$SB/podq_lua.c" | tr -d ' ') 0
lua/navette/backends/podq.lua $(wc -l <"$SB/podq.lua" | tr -d ' ') 0"

# ---- building it ------------------------------------------------------------

if ! (cmake -S "$T/tree" -B "$T/tree/build" -DCMAKE_BUILD_TYPE=RelWithDebInfo &&
	cmake --build "$T/tree/build" --target navette -j "${NAVETTE_TEST_JOBS:-2}") \
	>"$T/build.log" 2>&1; then
	tail -30 "$T/build.log" >&2
fi
check_true "the clone with the backend builds" test -x "$T/tree/build/navette"
NAVETTE=$T/tree/build/navette
export NAVETTE

# ---- using it ---------------------------------------------------------------

start_fake_s3
INBOX=$T/inbox
R=$(NO_PROJECT_FILE=1 new_repo pods)
cat >"$R/navette.lua" <<EOF
return {
  name = "pods", default_profile = "pods",
  credentials = {
    podq_token = { kind = "bearer", source = "env", env = { token = "PODQ_TOKEN" } },
  },
  profiles = {
    pods = { backend = "podq", storage = "s3://pods-b/", require_pushed = false,
             s3 = { endpoint = "$EP" },
             podq = { endpoint = "http://127.0.0.1:9/podq", inbox = "$INBOX",
                      credential = "podq_token" } },
    other = { storage = "file://$T/other-store/", require_pushed = false },
  },
}
EOF
cat >"$R/train.lua" <<'EOF'
local navette = require "navette"
navette.job { name = "prep", command = { "true" } }
navette.sweep { job = { name = "part", command = { "sh", "-c", "echo $LR" },
                        env = { LR = "{lr}" } },
                matrix = { lr = { "0.1", "0.2", "0.3" } } }
EOF
cat >"$R/check.lua" <<'EOF'
local navette = require "navette"
print("accepted: " .. tostring(navette.podq.check_credential {
  credential = "podq_token" }))
EOF
cat >"$R/reach.lua" <<'EOF'
local navette = require "navette"
navette.http.get("http://127.0.0.1:9/podq/jobs")
EOF
commit_all "$R" >/dev/null
export PODQ_TOKEN=not-a-real-token-0123456789
curl -sf -X PUT "$EP/pods-b" >/dev/null || true

nv_in "$R" run train.lua
check_rc "a run on the new backend submits" 0
check_eq "four jobs recorded on it" \
	"$("$NAVETTE" jobs --json | json '",".join(sorted(set(j["backend"] for j in d)))')" podq
manifests=$(cd "$INBOX" && ls ./*.json | wc -l | tr -d ' ')
check_eq "two manifests: the plain job, and the sweep's three tasks as one" \
	"$manifests" 2
kinds=$(python3 - "$INBOX" <<'PY'
import glob, json, sys
out = []
for p in sorted(glob.glob(sys.argv[1] + "/*.json")):
    m = json.load(open(p))
    out.append("%s %d" % (m["spec"]["completionMode"], m["spec"]["completions"]))
print(",".join(sorted(out)))
PY
)
check_eq "the sweep is one indexed manifest" "$kinds" "Indexed 3,NonIndexed 1"
python3 - "$INBOX" "$T/launchers" <<'PY'
import glob, json, os, sys
os.makedirs(sys.argv[2])
for p in glob.glob(sys.argv[1] + "/*.json"):
    m = json.load(open(p))
    kind = m["spec"]["completionMode"]
    open(os.path.join(sys.argv[2], kind), "w").write(m["spec"]["container"]["command"][2])
PY
check_match "the sweep's launcher reads its task from JOB_COMPLETION_INDEX" \
	"$(cat "$T/launchers/Indexed")" 'case \$\{JOB_COMPLETION_INDEX:-\} in'
check_no_match "and names no other scheduler's variable" \
	"$(cat "$T/launchers/Indexed")" 'SLURM_[A-Z_]*[:}]'

part=$("$NAVETTE" jobs --json | json '[j["id"] for j in d if j["name"] == "part[lr=0.2]"][0]')
remote=$("$NAVETTE" status "$part" --json | json 'd["remote_id"]')
check_match "each task is its manifest's index" "$remote" '/1$'
printf '{"state": "succeeded"}' >"$INBOX/${remote%/*}.1.status"
check_eq "status reads the controller's answer" \
	"$("$NAVETTE" status "$part" --json | json 'd["state"]')" succeeded

nv_in "$R" podq inbox pods
check_rc "the backend's own command runs" 0
check_eq "it answers" "$OUT" "2 manifests in $INBOX"
nv help
check_contains "navette help lists it" "$OUT" "navette podq inbox PROFILE"

nv_in "$R" run check.lua
check_rc "the backend's check_credential is in the recipe API" 0
check_contains "it answers" "$OUT" "accepted: true"

nv_in "$R" run reach.lua --profile other
check_rc "another profile reaching the backend's endpoint is refused" 3
check_contains "isolation names the profile that owns it" "$ERR" "pods"

finish
