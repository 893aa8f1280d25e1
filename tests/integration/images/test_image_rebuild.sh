#!/usr/bin/env bash
# Rebuilding an image only when its dependencies change
# (navette.image.rebuild, and recipes/maintenance/rebuild-image.lua run by
# `navette maintain --once`) against the registries of the ctest fixture
# "registry": the first run builds the commit's Containerfile and moves
# the pointer the profile names; a second run with the same lock files
# builds nothing and says "up to date"; a new commit changing only code
# builds nothing either; a change of requirements.txt builds again and
# moves the pointer, whose image carries the new hash in its label; plan
# mode builds nothing.
set -eu -o pipefail
. "$(dirname "$0")/../lib.sh"
set +e # each check reports its own failure; finish sets the status
. "$(dirname "$0")/../image_lib.sh"

command -v buildah >/dev/null || { skip "image rebuild" "no buildah"; finish; }
BASE_DIGEST=$(make_base "$PLAIN" "base/$RUN_ID:1") || {
	echo "FAIL: cannot build the base image with buildah" >&2
	exit 1
}
POINTER=$PLAIN/team/$RUN_ID:current

R=$(NO_PROJECT_FILE=1 new_repo rebuilt)
cat >"$R/navette.lua" <<EOF
return {
  name = "rebuilt",
  maintenance = { "recipes/maintenance/rebuild-image.lua" },
  profiles = {
    ["local"] = { backend = "local", storage = "file://$T/store",
                  images = { app = "$POINTER" } },
  },
}
EOF
mkdir -p "$R/recipes/maintenance"
cp "$NAVETTE_SOURCE/recipes/maintenance/rebuild-image.lua" "$R/recipes/maintenance/"
printf 'FROM %s\nCOPY requirements.txt /requirements.txt\nCMD ["/bin/busybox", "cat", "/requirements.txt"]\n' \
	"$PLAIN/base/$RUN_ID@$BASE_DIGEST" | put_file "$R" Containerfile
printf 'numpy==1.26.4\n' | put_file "$R" requirements.txt
printf 'print("v1")\n' | put_file "$R" train.py
# the builder's state in navette's folders, by name (a recipe names no
# path: NAVETTE_HOME/image-storage/rebuild and image-run/rebuild)
put_file "$R" direct.lua <<EOF
local navette = require "navette"
local r = navette.image.rebuild { to = "$POINTER", builder = "buildah",
  storage_root = "rebuild", run_root = "rebuild" }
print(string.format("built=%s up_to_date=%s reference=%s lock=%s previous=%s",
  tostring(r.built), tostring(r.up_to_date), tostring(r.reference),
  tostring(r.lockfile_hash), tostring(r.previous and r.previous.lockfile_hash)))
EOF
# a path chosen by the recipe is refused (buildah may run as root)
put_file "$R" anywhere.lua <<EOF
local navette = require "navette"
navette.image.rebuild { to = "$POINTER", builder = "buildah",
  storage_root = "$T/containers/storage" }
EOF
commit_all "$R" >/dev/null
label() { # the pointer's image's lock-file label
	skopeo inspect --tls-verify=false "docker://$POINTER" | json 'd["Labels"]["io.navette.lockfile.sha256"]'
}

# ---- the primitive, from a recipe -------------------------------------------
nv_in "$R" plan direct.lua
check_rc "plan exits 0" 0
check_match "plan records the build it would do" "$OUT" "image build: .*$PLAIN/team/$RUN_ID:"
nv_in "$R" run anywhere.lua
check_rc "a recipe's storage_root path is refused" 3
check_contains "... saying what it may name" "$ERR" "storage_root '$T/containers/storage' is not a name"
check_contains "... and where that is" "$ERR" "$NAVETTE_HOME/image-storage/NAME"
check_false "plan built nothing: no pointer" skopeo inspect --tls-verify=false "docker://$POINTER"

nv_in "$R" run direct.lua
check_rc "the first rebuild builds" 0
check_match "it says it built" "$OUT" "built=true up_to_date=false reference=$PLAIN/team/$RUN_ID@sha256:"
FIRST=$(skopeo_digest "$POINTER")
check_match "the pointer is moved to the build" "$FIRST" '^sha256:'
check_true "the builder's storage is navette's folder of that name" test -d "$NAVETTE_HOME/image-storage/rebuild"
LOCK1=$(label)
check_match "its image carries the lock-file hash" "$LOCK1" '^[0-9a-f]{64}$'
check_match "the hash is the one printed" "$OUT" "lock=$LOCK1 previous=nil"

nv_in "$R" run direct.lua
check_rc "the second rebuild exits 0" 0
check_match "nothing changed: up to date, nothing built" "$OUT" \
	"built=false up_to_date=true reference=$PLAIN/team/$RUN_ID@$FIRST lock=$LOCK1 previous=$LOCK1"
check_eq "the pointer stays" "$(skopeo_digest "$POINTER")" "$FIRST"

printf 'print("v2")\n' >"$R/train.py"
commit_all "$R" >/dev/null
nv_in "$R" run direct.lua
check_match "a change of code only: up to date" "$OUT" "built=false up_to_date=true"

printf 'numpy==2.0.0\n' >"$R/requirements.txt"
commit_all "$R" >/dev/null
nv_in "$R" run direct.lua
check_rc "a change of the lock files: built again" 0
check_match "it names the previous hash" "$OUT" "built=true up_to_date=false .* previous=$LOCK1"
SECOND=$(skopeo_digest "$POINTER")
check_ne "the pointer moved" "$SECOND" "$FIRST"
check_ne "its label is the new hash" "$(label)" "$LOCK1"
check_eq "the audit log has the rebuild" \
	"$(grep -c '"action":"image.rebuild"' "$NAVETTE_HOME/audit/audit.jsonl")" 2

# ---- the maintenance recipe, by navette maintain --------------------------------
# (its builder: the first installed, with the default storage of this
# user, kept under $T by image_lib.sh's CONTAINERS_STORAGE_CONF)
nv_in "$R" maintain --once
check_rc "maintain --once runs the rebuild task" 0
check_match "the task finds the lock files unchanged" "$OUT" "up to date: $POINTER is $PLAIN/team/$RUN_ID@$SECOND"
printf 'numpy==2.1.0\n' >"$R/requirements.txt"
commit_all "$R" >/dev/null
nv_in "$R" maintain --list --json
check_rc "maintain --list exits 0" 0
check_eq "the task is listed with its schedule and last result" \
	"$(printf '%s' "$OUT" | json '[(t["name"], t["schedule"], t["result"]) for t in d["tasks"]]')" \
	'[["rebuild-image", "daily 03:00", "ok"]]'
finish
