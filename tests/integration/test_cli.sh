# The command line itself: usage, unknown commands and options, help,
# version, an empty home.
. "$(dirname "$0")/lib.sh"

nv
check_rc "no command: exits 2" 2
check_match "no command: prints usage" "$OUT$ERR" '^usage: navette COMMAND'
check_match "no command: lists run" "$OUT$ERR" 'navette run RECIPE'

nv frobnicate
check_rc "unknown command: exits 2" 2
check_contains "unknown command: named" "$ERR" frobnicate
check_contains "unknown command: suggests help" "$ERR" "navette help"
nv statsu
check_rc "misspelt command: exits 2" 2
check_match "misspelt command: suggests the right one" "$ERR" \
	"did you mean .status"

nv status no-such-job
check_rc "status of an unknown job: exits 2" 2
check_contains "status of an unknown job: named" "$ERR" no-such-job

nv run --bogus x
check_rc "run --bogus: exits 2" 2
check_contains "run --bogus: names the option" "$ERR" --bogus
nv run
check_rc "run without a recipe: exits 2" 2
nv jobs --limit zero
check_rc "jobs --limit zero: exits 2" 2

nv version
check_rc "version: exits 0" 0
check_match "version: prints navette's version" "$OUT" \
	'^navette [0-9]+\.[0-9]+(\.[0-9]+)?'
check_match "version: prints Lua's version" "$OUT" '^ *lua +(Lua )?5\.4'
check_match "version: prints libgit2's version" "$OUT" '^ *libgit2 +[0-9]'
check_match "version: prints SQLite's version" "$OUT" '^ *sqlite +[0-9]'
check_match "version: prints libcurl's version" "$OUT" '^ *libcurl +[0-9]'
nv --version
check_rc "--version: exits 0" 0
check_match "--version: prints navette's version" "$OUT" '^navette [0-9]'
nv version --json
check_rc "version --json: exits 0" 0
check_match "version --json: navette's version" \
	"$(printf '%s' "$OUT" | json 'd["navette"]' 2>&1)" '^[0-9]+\.[0-9]+'

nv help run
check_rc "help run: exits 0" 0
check_match "help run: prints run's usage" "$OUT" '^usage: navette run RECIPE'
check_contains "help run: documents --wait" "$OUT" --wait
nv run --help
check_rc "run --help: exits 0" 0
check_match "run --help: prints run's usage" "$OUT" '^usage: navette run RECIPE'
nv help
check_rc "help: exits 0" 0
check_match "help: prints usage" "$OUT" '^usage: navette COMMAND'
nv help frobnicate
check_rc "help of an unknown command: exits 2" 2

nv jobs
check_rc "jobs on a fresh home: exits 0" 0
check_match "jobs on a fresh home: no jobs yet" "$OUT" '^no jobs yet$'
nv jobs --json
check_rc "jobs --json on a fresh home: exits 0" 0
check_eq "jobs --json on a fresh home: []" \
	"$(printf '%s' "$OUT" | json 'd' 2>&1)" "[]"

check_no_match "NO_COLOR: no escape sequences in output" "$OUT" $'\033'

finish
