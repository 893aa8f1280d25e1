# What `navette run` refuses before anything is submitted: a dirty tree, a
# folder outside git (exit 3), malformed recipes and sandbox escapes
# (exit 2, located at RECIPE.lua:LINE:).
set -eu -o pipefail
. "$(dirname "$0")/../lib.sh"
set +e # each check reports its own failure; finish sets the status

# no_job_submitted WHAT: `navette jobs --json` is an empty list.
no_job_submitted() {
	local list
	list=$("$NAVETTE" jobs --json 2>&1)
	check_eq "$1: nothing submitted" \
		"$(printf '%s' "$list" | json 'len(d)' 2>&1)" 0
}

R=$(new_repo refuse)
put_file "$R" ok.lua <<'EOF'
local navette = require "navette"
navette.job { name = "ok", command = { "true" } }
EOF
put_file "$R" data.txt <<'EOF'
tracked data
EOF
commit_all "$R" >/dev/null

# ---- dirty trees
echo "changed" >>"$R/data.txt"
nv_in "$R" run ok.lua
check_rc "modified tracked file: run exits 3" 3
check_contains "modified tracked file: stderr names it" "$ERR" data.txt
no_job_submitted "modified tracked file"
git -C "$R" checkout -q -- data.txt

echo "scratch" >"$R/untracked-notes.txt"
nv_in "$R" run ok.lua --wait
check_rc "untracked file: run exits 3" 3
check_contains "untracked file: stderr names it" "$ERR" untracked-notes.txt
no_job_submitted "untracked file"
check_no_match "untracked file: no word of Finder" "$ERR" 'DS_Store'
rm -f "$R/untracked-notes.txt"

# A .DS_Store left by the Mac's Finder (here and in a subfolder): the hint
# says how to ignore it for good.
mkdir -p "$R/docs"
printf 'x\n' >"$R/docs/readme.txt"
commit_all "$R" >/dev/null
printf '\0\0\0\1Bud1' >"$R/docs/.DS_Store"
nv_in "$R" run ok.lua
check_rc ".DS_Store: run exits 3" 3
check_contains ".DS_Store: stderr names it" "$ERR" docs/.DS_Store
check_contains ".DS_Store: the hint names a global gitignore" "$ERR" \
	'git config --global core.excludesFile ~/.gitignore_global'
no_job_submitted ".DS_Store"
printf '\0\0\0\1Bud1' >"$R/.DS_Store"
rm -f "$R/docs/.DS_Store"
nv_in "$R" run ok.lua
check_contains ".DS_Store at the top: the same hint" "$ERR" \
	'core.excludesFile'
no_job_submitted ".DS_Store at the top"
rm -f "$R/.DS_Store"

# ---- malformed recipes (each committed, so only the recipe is wrong)
put_file "$R" syntax.lua <<'EOF'
local navette = require "navette"

navette.job {
  name = "syntax"
  command = { "true" },
}
EOF
put_file "$R" unknown.lua <<'EOF'
local navette = require "navette"
-- line 2
navette.job {
  name = "unknown",
  command = { "true" },
  gpu_count = 2,
}
EOF
put_file "$R" cmdstring.lua <<'EOF'
local navette = require "navette"
navette.job {
  name = "cmdstring",
  command = "echo hi",
}
EOF
put_file "$R" namenum.lua <<'EOF'
local navette = require "navette"


navette.job { name = 3, command = { "true" } }
EOF
put_file "$R" nocommand.lua <<'EOF'
local navette = require "navette"
navette.job {
  name = "nocommand",
}
EOF
put_file "$R" escape.lua <<'EOF'
local navette = require "navette"
navette.job {
  name = "escape",
  command = { "sh", "-c", "echo x >\"$NAVETTE_OUTPUTS/x.txt\"" },
  outputs = "../escape/",
}
EOF
put_file "$R" putescape.lua <<'EOF'
local navette = require "navette"
navette.storage.put("../../putescape.txt", "data.txt")
EOF
put_file "$R" osexec.lua <<'EOF'
local navette = require "navette"
os.execute("touch ../PWNED-os")
EOF
put_file "$R" ioopen.lua <<'EOF'
local navette = require "navette"
local f = io.open("../PWNED-io", "w")
f:write("x")
EOF
put_file "$R" dofile.lua <<'EOF'
local navette = require "navette"
dofile("ok.lua")
EOF
put_file "$R" requireos.lua <<'EOF'
local navette = require "navette"
local sys = require "os"
sys.execute("touch ../PWNED-require")
EOF
put_file "$R" requireio.lua <<'EOF'
local navette = require "navette"
local sysio = require "io"
sysio.open("../PWNED-requireio", "w")
EOF
put_file "$R" global.lua <<'EOF'
local navette = require "navette"
x = 1
navette.job { name = "global", command = { "true" } }
EOF
commit_all "$R" >/dev/null

# recipe_error NAME LINE [TEXT]: `navette run NAME.lua` exits 2, stderr
# starts the message at NAME.lua:LINE: and contains TEXT.
recipe_error() {
	nv_in "$R" run "$1.lua"
	check_rc "$1: run exits 2" 2
	check_match "$1: stderr is located at $1.lua:$2:" "$ERR" \
		"(^|[ /])$1\\.lua:$2:"
	if [ $# -ge 3 ]; then
		check_contains "$1: stderr says '$3'" "$ERR" "$3"
	fi
	check_no_match "$1: no traceback of the library" "$ERR" \
		'stack traceback|navette/[a-z]+\.lua:[0-9]'
}

recipe_error syntax 5
recipe_error unknown 3 gpu_count
recipe_error cmdstring 2 command
recipe_error namenum 4 name
recipe_error nocommand 2 command
no_job_submitted "malformed recipes"

recipe_error escape 2 outputs
check_absent "escaping outputs prefix: nothing at \$NAVETTE_HOME/escape" \
	"$NAVETTE_HOME/escape"
check_absent "escaping outputs prefix: nothing beside the home" "$T/escape"
check_absent "escaping outputs prefix: nothing beside the store" \
	"$NAVETTE_HOME/store/escape"

# A storage key climbing out of the store is the recipe's error too.
recipe_error putescape 2 "../../putescape.txt"
check_no_match "putescape: the reason is given" "$ERR" 'unknown error'
check_absent "putescape: nothing written above the store" \
	"$NAVETTE_HOME/putescape.txt"
check_absent "putescape: nothing written two levels up" "$T/putescape.txt"

recipe_error osexec 2 execute
recipe_error ioopen 2 io
recipe_error dofile 2 dofile
recipe_error requireos 2 os
recipe_error requireio 2 io
for f in PWNED-os PWNED-io PWNED-require PWNED-requireio; do
	check_absent "sandbox: the recipe could not create $f" "$T/$f"
done
recipe_error global 2 "'x'"
no_job_submitted "escaping recipes"

# ---- a recipe outside any git repository
NOGIT=$T/nogit
mkdir -p "$NOGIT"
cp "$R/ok.lua" "$NOGIT/"
if git -C "$NOGIT" rev-parse --git-dir >/dev/null 2>&1; then
	fail "setup: $NOGIT is inside a git repository; cannot test this"
else
	nv_in "$NOGIT" run ok.lua
	check_rc "recipe outside git: run exits 3" 3
	check_match "recipe outside git: stderr says so" "$ERR" 'git'
	no_job_submitted "recipe outside git"
fi

# A missing recipe is a usage error, not a refusal.
nv_in "$R" run no-such-recipe.lua
check_rc "missing recipe file: run exits 2" 2
check_contains "missing recipe file: stderr names it" "$ERR" no-such-recipe.lua

# The hint's advice works: with .DS_Store in a global gitignore, the tree
# that held one is clean again (last: this submits a job).
printf '\0\0\0\1Bud1' >"$R/.DS_Store"
# (the hint's very words: git and libgit2 expand the ~)
git config --global core.excludesFile '~/.gitignore_global'
echo .DS_Store >>"$HOME/.gitignore_global"
nv_in "$R" run ok.lua
check_rc ".DS_Store globally ignored: run submits" 0
check_no_match ".DS_Store globally ignored: no refusal" "$ERR" 'not clean'

# An input the store does not hold is refused before anything is
# submitted (the mutation experiment of issue 11: dropping this refusal
# passed every test). A new repository: a job was submitted above.
M=$(new_repo missing-input)
put_file "$M" missing.lua <<'EOF'
local navette = require "navette"
navette.job { name = "needs-input", command = { "cat", "inputs/x.csv" },
              inputs = { ["x.csv"] = navette.storage.url("inputs/never-put.csv") } }
EOF
commit_all "$M" >/dev/null
nv_in "$M" run missing.lua
check_rc "an input not in the store: run exits 3" 3
check_contains "an input not in the store: names it" "$ERR" "never-put.csv"
nv jobs --json
check_eq "an input not in the store: nothing submitted" \
	"$(printf '%s' "$OUT" | json "len([j for j in d if j['name'] == 'needs-input'])" 2>&1)" 0

finish
