# The image builds of one evaluation are bounded in all (issue 26, L2).
# The recipe's clock stops while a builder runs (a build is not the
# recipe's own time), so a loop of failing image.build calls once escaped
# NAVETTE_RECIPE_TIMEOUT: now the builds share NAVETTE_BUILD_TIMEOUT, the
# evaluation ends once it is spent (the recipe catching the errors or
# not), and the message names the builds. The builder is a stand-in: a
# `buildah` first on PATH that sleeps and fails.
set -eu -o pipefail
. "$(dirname "$0")/../lib.sh"

BIN=$T/bin
case $BIN in "$T"/*) ;; *) exit 1 ;; esac
mkdir -p "$BIN"
cat >"$BIN/buildah" <<'EOF'
#!/bin/sh
echo "buildah stand-in: $*" >>"$NAVETTE_BUILD_LOG"
sleep 1
echo "error: the stand-in builder always fails" >&2
exit 1
EOF
chmod +x "$BIN/buildah"
export NAVETTE_BUILD_LOG=$T/builds.log
: >"$NAVETTE_BUILD_LOG"

R=$(new_repo budget)
put_file "$R" Containerfile <<'EOF'
FROM scratch
EOF
put_file "$R" loop.lua <<'EOF'
local navette = require "navette"
local failed = 0
for _ = 1, 12 do
  local ok = pcall(navette.image.build, {
    builder = "buildah", to = "127.0.0.1:5999/budget/app" })
  if not ok then failed = failed + 1 end
end
print("builds failed: " .. failed)
navette.job { name = "after-builds", command = { "true" } }
EOF
commit_all "$R" >/dev/null

start=$(date +%s)
(cd "$R" && PATH="$BIN:$PATH" NAVETTE_RECIPE_TIMEOUT=30 \
	NAVETTE_BUILD_TIMEOUT=3 "$NAVETTE" run loop.lua) >"$T/.out" 2>"$T/.err" && RC=0 || RC=$?
OUT=$(cat "$T/.out")
ERR=$(cat "$T/.err")
LAST_CMD="(in $R) navette run loop.lua (NAVETTE_BUILD_TIMEOUT=3)"
elapsed=$(($(date +%s) - start))
builds=$(grep -c 'stand-in:.* bud ' "$NAVETTE_BUILD_LOG" || true)
check_rc "a loop of failing builds ends the evaluation (exit 2)" 2
check_contains "the message names the builds' bound" "$ERR" \
	"NAVETTE_BUILD_TIMEOUT"
check_match "and what they took" "$ERR" \
	'image builds of this evaluation took longer than 3 s'
check_true "it ends within the bound (took ${elapsed}s, 12 builds take 12s)" \
	[ "$elapsed" -lt 9 ]
check_true "no build starts once the budget is spent ($builds ran)" \
	[ "$builds" -ge 2 -a "$builds" -le 4 ]
check_no_match "the loop did not go on" "$OUT" 'builds failed'
nv jobs --json
check_eq "nothing was submitted" "$(printf '%s' "$OUT" | json 'len(d)')" 0

# Within its budget a failing build is an error the recipe may catch.
: >"$NAVETTE_BUILD_LOG"
put_file "$R" once.lua <<'EOF'
local navette = require "navette"
local ok, e = pcall(navette.image.build, {
  builder = "buildah", to = "127.0.0.1:5999/budget/app" })
print("caught: " .. tostring(not ok))
navette.job { name = "after-one-build", command = { "true" } }
EOF
commit_all "$R" >/dev/null
(cd "$R" && PATH="$BIN:$PATH" NAVETTE_BUILD_TIMEOUT=30 "$NAVETTE" run \
	once.lua --wait) >"$T/.out" 2>"$T/.err" && RC=0 || RC=$?
OUT=$(cat "$T/.out")
ERR=$(cat "$T/.err")
LAST_CMD="(in $R) navette run once.lua (NAVETTE_BUILD_TIMEOUT=30)"
check_rc "one failing build, caught, within the budget: the run goes on" 0
check_contains "the recipe caught the build's error" "$OUT" "caught: true"

# One build that hangs past the budget: the watchdog ends the process one
# second after it, saying why.
cat >"$BIN/buildah" <<'EOF'
#!/bin/sh
sleep 20
exit 1
EOF
start=$(date +%s)
(cd "$R" && PATH="$BIN:$PATH" NAVETTE_BUILD_TIMEOUT=2 "$NAVETTE" run \
	once.lua) >"$T/.out" 2>"$T/.err" && RC=0 || RC=$?
OUT=$(cat "$T/.out")
ERR=$(cat "$T/.err")
LAST_CMD="(in $R) navette run once.lua (a hanging builder)"
elapsed=$(($(date +%s) - start))
check_rc "a build hanging past the budget ends the process (exit 2)" 2
check_contains "the watchdog names the builds' bound" "$ERR" \
	"an image build ran past the 2 s"
check_true "within the budget and a second (took ${elapsed}s)" \
	[ "$elapsed" -lt 8 ]

finish
