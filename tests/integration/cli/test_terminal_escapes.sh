# Messages on stderr never carry a control character from user input raw:
# a job name, a recipe's own error, a job id, a command and a recipe path
# holding ESC sequences (colour, clear screen, window title), CR, BEL, a C1
# CSI and a right-to-left override are shown as visible escapes (\x1b,
# \x0d, \x07, \u009b, \u202e), with the message's own newlines kept.
set -eu -o pipefail
. "$(dirname "$0")/../lib.sh"
set +e # each check reports its own failure; finish sets the status

# no_raw_controls WHAT ESCAPE...: the last stderr holds no character a
# terminal acts on (C0 but tab and newline, DEL, C1 in UTF-8 or as a lone
# byte, bidirectional overrides) and shows each ESCAPE given.
no_raw_controls() {
	no_raw_controls_in "$T/.err" "$1: stderr" "${@:2}"
}

# no_raw_controls_in FILE WHAT ESCAPE...: the same for any file (with
# FROM_TTY=1, what pty_run.py read from a terminal, which writes CR LF).
no_raw_controls_in() {
	local file=$1 what=$2 found
	shift 2
	found=$(python3 - "$file" "$@" <<'PY'
import os, sys
data = open(sys.argv[1], "rb").read()
if os.environ.get("FROM_TTY"):  # the terminal's own CR before each LF
    data = data.replace(b"\r\n", b"\n")
text = data.decode("utf-8", "surrogateescape")
bad = sorted({hex(ord(c)) for c in text
              if (ord(c) < 0x20 and c not in "\t\n") or ord(c) == 0x7f
              or 0x80 <= ord(c) <= 0x9f or 0xdc80 <= ord(c) <= 0xdc9f
              or 0x202a <= ord(c) <= 0x202e or 0x2066 <= ord(c) <= 0x2069})
missing = [s for s in sys.argv[2:] if s not in text]
if bad:
    print("raw characters: " + " ".join(bad))
elif missing:
    print("escapes not shown: " + " ".join(missing))
else:
    print("clean")
PY
)
	check_eq "$what shows controls as escapes" "$found" clean
}

R=$(new_repo escapes)
put_file "$R" name.lua <<'EOF'
local navette = require "navette"
navette.job { name = "x\27[31mred\r\27]0;title\7", command = { "true" } }
EOF
put_file "$R" boom.lua <<'EOF'
error("bad \27[2J\r\27]0;pwned\7 \194\155 \226\128\174 value\nsecond line")
EOF
commit_all "$R" >/dev/null

nv_in "$R" plan name.lua
check_rc "job name with escapes: plan exits 2" 2
no_raw_controls "job name" '\x1b[31mred\x0d\x1b]0;title\x07'

nv_in "$R" plan boom.lua
check_rc "recipe error with escapes: plan exits 2" 2
no_raw_controls "recipe error" '\x1b[2J\x0d\x1b]0;pwned\x07' '\u009b' \
	'\u202e'
check_contains "recipe error: its own newline is kept" "$ERR" \
	"value
second line"

nv_in "$R" logs "$(printf '\033[31mjob\r')"
check_rc "job id with escapes: logs exits 2" 2
no_raw_controls "job id" '\x1b[31mjob\x0d'

nv_in "$R" "$(printf 'st\033]0;t\007atus\233')"
check_rc "command with escapes: exit 2" 2
no_raw_controls "unknown command" '\x1b]0;t\x07' '\x9b'

nv_in "$R" plan "$(printf 'no\033[2Jsuch\r.lua')"
check_ne "recipe path with escapes: plan fails" "$RC" 0
no_raw_controls "recipe path" '\x1b[2J'

# A recipe's print is untrusted output: under plan (and run), on a pipe as
# on a terminal, an OSC 52 clipboard write, a screen clear, CR, BEL, a C1
# CSI and a bidi override show as escapes; tab and newline stay
# (issue 26, L6).
put_file "$R" prints.lua <<'EOF'
print("copy\27]52;c;ZXZpbA==\7", "clear\27[2J\r", "c1 \194\155 \226\128\174 end")
print("second\tline")
EOF
commit_all "$R" >/dev/null
nv_in "$R" plan prints.lua
check_rc "a recipe that prints escapes: plan runs" 0
no_raw_controls_in "$T/.out" "print under plan (a pipe)" \
	'copy\x1b]52;c;ZXZpbA==\x07' '\x1b[2J\x0d' '\u009b' '\u202e'
check_contains "print keeps its tab and newline" "$OUT" "second	line"
NO_COLOR=1 TERM=xterm python3 "$(dirname "$0")/../pty_run.py" -- sh -c \
	'cd "$1" && "$2" plan prints.lua' sh "$R" "$NAVETTE" >"$T/tty.out"
FROM_TTY=1 no_raw_controls_in "$T/tty.out" "print under plan on a terminal" \
	'copy\x1b]52;c;ZXZpbA==\x07'

# navette logs: a job's output is escaped on a terminal; to a pipe or a
# file it keeps its bytes (navette logs ID > file)
put_file "$R" loud.lua <<'EOF'
local navette = require "navette"
navette.job { name = "loud", command = { "sh", "-c",
  "printf 'out \\033]52;c;ZXZpbA==\\007 \\033[2J \\302\\233 \\342\\200\\256 \\303\\251t\\303\\251\\n'" } }
EOF
commit_all "$R" >/dev/null
nv_in "$R" run loud.lua --wait
check_rc "a job printing escapes runs" 0
LOUD=$(submitted_id)
nv logs "$LOUD"
check_rc "logs to a pipe" 0
check_contains "logs to a pipe keeps the bytes" "$OUT" \
	"$(printf 'out \033]52;c;ZXZpbA==\007 \033[2J')"
NO_COLOR=1 TERM=xterm python3 "$(dirname "$0")/../pty_run.py" -- "$NAVETTE" logs "$LOUD" \
	>"$T/tty.out"
FROM_TTY=1 no_raw_controls_in "$T/tty.out" "logs on a terminal" \
	'out \x1b]52;c;ZXZpbA==\x07 \x1b[2J' '\u009b' '\u202e'
check_contains "logs on a terminal keeps other UTF-8 whole" \
	"$(cat "$T/tty.out")" "été"
NO_COLOR=1 TERM=xterm python3 "$(dirname "$0")/../pty_run.py" -- "$NAVETTE" logs "$LOUD" \
	--tail 1 >"$T/tty.out"
FROM_TTY=1 no_raw_controls_in "$T/tty.out" "logs --tail on a terminal" \
	'out \x1b]52;c;ZXZpbA==\x07'

finish
