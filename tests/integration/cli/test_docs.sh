# What ships beside the binary for its users, and that it cannot drift:
# the man page (lint-clean; every command `navette help` lists, every flag
# the parser accepts, every exit code of the manual (doc/cli.md) and every
# variable of its doc/files.md are in it), the shell completions (valid
# scripts; bash and fish complete commands, verbs and options) and the
# LuaLS definitions command. The scripts built by install_docs.cmake are
# what the binary prints.
set -eu -o pipefail
. "$(dirname "$0")/../lib.sh"
set +e # each check reports its own failure; finish sets the status

MAN=$NAVETTE_SOURCE/host/cli/navette.1
DOC=$NAVETTE_SOURCE/lua/navette/doc

# ---- the man page ---------------------------------------------------------

if command -v mandoc >/dev/null 2>&1; then
	lint=$(mandoc -Tlint -W warning "$MAN" 2>&1)
	check_eq "man page: mandoc -Tlint -W warning is clean" "$?:$lint" "0:"
elif command -v groff >/dev/null 2>&1; then
	lint=$(groff -ww -z -man "$MAN" 2>&1)
	check_eq "man page: groff -ww -z -man is clean" "$?:$lint" "0:"
else
	fail "man page: neither mandoc nor groff is installed to check it"
fi

# The page's text with roff's escapes undone (\- is -, fonts dropped).
man_text=$(perl -pe 's/\\-/-/g; s/\\f[BIRP]//g; s/\\&//g' "$MAN")

nv help
check_rc "help: exits 0" 0
commands=$(printf '%s\n' "$OUT" | sed -n 's/^  navette \([a-z][a-z-]*\).*/\1/p' |
	sort -u)
check_ne "help: lists commands" "$(printf '%s' "$commands" | wc -l |
	tr -d ' ')" 0
for c in $commands; do
	check_match "man page: command $c has an entry" "$man_text" "^\.B $c( |\$)"
done
# two-word entries the help lists (creds list, audit show...)
printf '%s\n' "$OUT" |
	sed -n 's/^  navette \([a-z][a-z-]*\) \([a-z][a-z-]*\)\( .*\)\{0,1\}$/\1 \2/p' |
	while read -r c v; do
		printf '%s %s\n' "$c" "$v"
	done >"$T/pairs"
while read -r c v; do
	check_match "man page: '$c $v' has an entry" "$man_text" "^\.B $c $v( |\$)"
done <"$T/pairs"
for group in storage image; do
	nv "$group" help
	verbs=$(printf '%s\n' "$OUT" | sed -n '/^verbs:/,/^$/s/^  \([a-z][a-z-]*\).*/\1/p')
	check_ne "$group help: lists verbs" "$verbs" ""
	for v in $verbs; do
		check_match "man page: $group verb $v has an entry" "$man_text" \
			"^\.B $v( |\$)"
	done
done

# every flag any command's parser accepts (read from the completion
# script, which is made from those tables)
nv completion bash
check_rc "completion bash: exits 0" 0
printf '%s\n' "$OUT" >"$T/navette.bash"
flags=$(sed -n "s/.*flags='\([^']*\)'.*/\1/p" "$T/navette.bash" | tr ' ' '\n' |
	sort -u)
check_match "completion bash: has run's --wait" "$flags" '^--wait$'
for f in $flags; do
	case $man_text in
	*"$f"[!a-z-]* | *"$f") pass "man page: option $f is documented" ;;
	*) fail "man page: option $f is not documented (host/cli/navette.1)" ;;
	esac
done

# the manual's exit codes, and its environment variables
codes=$(sed -n '/^## Exit codes/,/^## /s/^| \([0-9][0-9]*\) |.*/\1/p' "$DOC/cli.md")
check_ne "doc/cli.md: has an exit-code table" "$codes" ""
for code in $codes; do
	check_match "man page: exit status $code" "$man_text" "^\.B $code\$"
done
vars=$(grep -oE 'NAVETTE_[A-Z_]+' "$DOC/files.md" | sort -u)
check_ne "doc/files.md: names environment variables" "$vars" ""
for v in $vars; do
	check_contains "man page: environment variable $v" "$man_text" "$v"
done

# ---- the manual's topics (lua/navette/doc/*.md, compiled in) -------------

nv help topics
check_rc "help topics: exits 0" 0
topics_out=$OUT
listed=$(printf '%s\n' "$OUT" | sed -n 's/^  \([a-z][a-z0-9-]*\)  .*/\1/p')
pages=$(cd "$DOC" && ls -- *.md | sed 's/\.md$//')
check_eq "help topics: lists every page of lua/navette/doc" "$listed" "$pages"
for topic in $pages; do
	nv help "$topic"
	check_rc "help $topic: exits 0" 0
	check_eq "help $topic: prints lua/navette/doc/$topic.md" "$OUT" \
		"$(cat "$DOC/$topic.md")"
	check_match "help topics: $topic's title" "$topics_out" \
		"^  $topic +$(sed -n '1s/^# //p' "$DOC/$topic.md")\$"
done
nv help securty
check_rc "help with a misspelt topic: exits 2" 2
check_contains "help securty: suggests the topic" "$ERR" \
	"(did you mean 'security'?)"
nv help stauts
check_contains "help stauts: suggests the command" "$ERR" \
	"(did you mean 'status'?)"
nv help
check_contains "help: ends with where the topics are" "$OUT" \
	"navette help topics"
check_match "man page: help takes a TOPIC" "$man_text" '^\.B help .*TOPIC'

# ---- completions ----------------------------------------------------------

nv completion
check_rc "completion without a shell: exits 2" 2
nv completion tcsh
check_rc "completion tcsh: exits 2" 2
check_contains "completion tcsh: names the shells" "$ERR" "bash, zsh, fish"
nv completion --help
check_rc "completion --help: exits 0" 0

check_true "completion bash: bash -n accepts it" bash -n "$T/navette.bash"
nv completion zsh
check_rc "completion zsh: exits 0" 0
printf '%s\n' "$OUT" >"$T/_navette"
check_match "completion zsh: a #compdef file" "$OUT" '^#compdef navette$'
if command -v zsh >/dev/null 2>&1; then
	check_true "completion zsh: zsh -n accepts it" zsh -n "$T/_navette"
else
	skip "completion zsh: zsh -n" \
		"zsh is not installed (vendor/packages.txt, group test)"
fi
nv completion fish
check_rc "completion fish: exits 0" 0
printf '%s\n' "$OUT" >"$T/navette.fish"
if command -v fish >/dev/null 2>&1; then
	check_true "completion fish: fish -n accepts it" fish -n "$T/navette.fish"
	got=$(HOME=$T/home fish -N -c "source $T/navette.fish; complete -C 'navette ru'" 2>&1)
	check_match "completion fish: 'navette ru' offers run" "$got" '^run	'
	got=$(HOME=$T/home fish -N -c "source $T/navette.fish; complete -C 'navette storage ls --rec'" 2>&1)
	check_match "completion fish: 'storage ls --rec' offers --recursive" \
		"$got" '^--recursive'
else
	skip "completion fish: fish -n and its completions" \
		"fish is not installed (vendor/packages.txt, group test)"
fi

# bash: what COMPREPLY holds for a command line (the last word is the one
# being completed)
complete_bash() {
	bash -c '. "$1"; shift
		COMP_WORDS=("$@"); COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
		_navette; printf "%s\n" "${COMPREPLY[@]}"' _ "$T/navette.bash" "$@"
}
check_eq "completion bash: 'navette ru' gives run" \
	"$(complete_bash navette ru)" "run"
got=$(complete_bash navette '')
for c in $commands; do
	check_match "completion bash: 'navette ' offers $c" "$got" "^$c\$"
done
check_eq "completion bash: 'navette run --w' gives --wait" \
	"$(complete_bash navette run --w)" "--wait"
check_eq "completion bash: 'navette plan --w' gives nothing" \
	"$(complete_bash navette plan --w)" ""
check_eq "completion bash: 'navette storage pre' gives presign" \
	"$(complete_bash navette storage pre)" "presign"
check_eq "completion bash: 'navette storage ls --rec' gives --recursive" \
	"$(complete_bash navette storage ls --rec)" "--recursive"
check_eq "completion bash: a value flag's value is skipped" \
	"$(complete_bash navette jobs --profile gpu --li)" "--limit"
check_eq "completion bash: 'navette creds ch' gives check" \
	"$(complete_bash navette creds ch)" "check"
check_eq "completion bash: 'navette completion z' gives zsh" \
	"$(complete_bash navette completion z)" "zsh"
check_eq "completion bash: 'navette help mig' gives migrate" \
	"$(complete_bash navette help mig)" "migrate"
check_eq "completion bash: 'navette help secu' gives security" \
	"$(complete_bash navette help secu)" "security"

# ---- LuaLS definitions ----------------------------------------------------

nv definitions "$T/navette.lua"
check_rc "definitions FILE: exits 0" 0
check_file "definitions FILE: written" "$T/navette.lua"
check_eq "definitions: a ---@meta file" "$(head -1 "$T/navette.lua")" \
	"---@meta navette"
check_match "definitions: navette.job's spec" "$(cat "$T/navette.lua")" \
	'^---@class navette\.job\.Spec$'
check_match "definitions: command is required, a list of strings" \
	"$(cat "$T/navette.lua")" '^---@field command string\[\] '
nv definitions
check_eq "definitions: printed the same without FILE" "$OUT" \
	"$(cat "$T/navette.lua")"
nv definitions a b
check_rc "definitions with two files: exits 2" 2

# ---- what the build made --------------------------------------------------

share=$(dirname "$NAVETTE")/share
if [ -d "$share" ]; then
	check_eq "build: the bash completion is the binary's" \
		"$(cat "$share/bash-completion/completions/navette")" \
		"$(cat "$T/navette.bash")"
	check_eq "build: the zsh completion is the binary's" \
		"$(cat "$share/zsh/site-functions/_navette")" "$(cat "$T/_navette")"
	check_eq "build: the fish completion is the binary's" \
		"$(cat "$share/fish/vendor_completions.d/navette.fish")" \
		"$(cat "$T/navette.fish")"
	check_eq "build: the definitions are the binary's" \
		"$(cat "$share/navette/lua/navette.lua")" "$(cat "$T/navette.lua")"
else
	skip "build: the installed completions and definitions" \
		"$share not built (the navette_docs target)"
fi

finish
