# Messages on stderr never carry a control character from user input raw:
# a job name, a recipe's own error, a job id, a command and a recipe path
# holding ESC sequences (colour, clear screen, window title), CR, BEL, a C1
# CSI and a right-to-left override are shown as visible escapes (\x1b,
# \x0d, \x07, \u009b, \u202e), with the message's own newlines kept.
. "$(dirname "$0")/lib.sh"

# no_raw_controls WHAT ESCAPE...: the last stderr holds no character a
# terminal acts on (C0 but tab and newline, DEL, C1 in UTF-8 or as a lone
# byte, bidirectional overrides) and shows each ESCAPE given.
no_raw_controls() {
	local what=$1 found
	shift
	found=$(python3 - "$T/.err" "$@" <<'PY'
import sys
data = open(sys.argv[1], "rb").read()
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
	check_eq "$what: stderr shows controls as escapes" "$found" clean
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

finish
