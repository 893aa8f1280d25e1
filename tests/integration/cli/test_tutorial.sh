# The README's Tutorial, typed as written, in a fresh folder, with the
# built navette first on PATH. Its blocks, in order:
#   ```lua file=PATH (any language, then file=PATH): write the block to
#       PATH (relative to the folder the commands are in at that point);
#   ```console: each line after "$ " is a command, run in this shell (so
#       cd and variables carry on to the next one), which must exit 0;
#       the lines after it, up to the next command, are what it prints:
#       each must match a line of its output (stdout and stderr), in
#       order, "..." standing for any text; a line that is only "..."
#       stands for lines left out;
#   any other block is not run.
set -eu -o pipefail
. "$(dirname "$0")/../lib.sh"

README=${TUTORIAL_README:-$NAVETTE_SOURCE/README.md}
[ -r "$README" ] || {
	echo "FAIL: no README at $README" >&2
	exit 1
}
command -v python3 >/dev/null 2>&1 || {
	echo "FAIL: python3 is needed to read the README's blocks" >&2
	exit 1
}
set +e # each step reports its own failure; finish sets the status

# The steps, one folder each under $T/steps: NNN.file (its first line the
# path, the rest the text) or NNN.cmd (the command) with NNN.expect.
mkdir -p "$T/steps"
python3 - "$README" "$T/steps" <<'EOF'
import os, re, sys
readme, out = sys.argv[1], sys.argv[2]
text = open(readme, encoding="utf-8").read()
m = re.search(r"^## Tutorial\n(.*?)(?=^## )", text, re.M | re.S)
if not m:
    sys.exit("the README has no '## Tutorial' section")
n = 0
def step(kind, first, body):
    global n
    n += 1
    with open(os.path.join(out, "%03d.%s" % (n, kind)), "w",
              encoding="utf-8") as f:
        f.write(first + "\n" + body)
for info, body in re.findall(r"^```([^\n]*)\n(.*?)^```$", m.group(1),
                             re.M | re.S):
    words = info.split()
    path = [w[5:] for w in words if w.startswith("file=")]
    if path:
        step("file", path[0], body)
    elif words[:1] == ["console"]:
        cmd, expect = None, []
        for line in body.splitlines():
            if line.startswith("$ "):
                if cmd is not None:
                    step("cmd", cmd, "".join(e + "\n" for e in expect))
                cmd, expect = line[2:], []
            elif cmd is not None:
                expect.append(line)
        if cmd is not None:
            step("cmd", cmd, "".join(e + "\n" for e in expect))
EOF
check_rc_py=$?
check_eq "the README's Tutorial was read" "$check_rc_py" 0
files=$(ls "$T/steps" | grep -c '\.file$')
cmds=$(ls "$T/steps" | grep -c '\.cmd$')
check_match "the Tutorial shows files" "$files" '^[1-9]'
check_match "the Tutorial shows commands" "$cmds" '^[1-9]'

# match_expected EXPECT OUTPUT: the lines of EXPECT that OUTPUT lacks, in
# order ("..." any text); exit 1 when some are missing.
match_expected() {
	python3 - "$1" "$2" <<'EOF'
import re, sys
expect = open(sys.argv[1], encoding="utf-8").read().splitlines()
got = open(sys.argv[2], encoding="utf-8", errors="replace").read().splitlines()
at, missing = 0, []
for line in expect:
    if line.strip() in ("", "..."):
        continue
    pattern = "^" + ".*".join(re.escape(p) for p in line.split("...")) + "$"
    for i in range(at, len(got)):
        if re.match(pattern, got[i]):
            at = i + 1
            break
    else:
        missing.append(line)
for line in missing:
    print("    missing: " + line)
sys.exit(1 if missing else 0)
EOF
}

# The folder the tutorial starts in, and navette as `navette`.
mkdir -p "$T/bin" "$T/work"
ln -s "$NAVETTE" "$T/bin/navette"
PATH=$T/bin:$PATH
export PATH
cd "$T/work" || exit 1

for tt_step in "$T"/steps/*; do
	tt_first=$(head -n 1 "$tt_step")
	case $tt_step in
	*.file)
		mkdir -p "$(dirname "$tt_first")" &&
			tail -n +2 "$tt_step" >"$tt_first"
		check_eq "writes $tt_first" "$?" 0
		;;
	*.cmd)
		tail -n +2 "$tt_step" >"$T/expect"
		eval "$tt_first" >"$T/output" 2>&1 </dev/null
		tt_rc=$?
		if [ "$tt_rc" -eq 0 ]; then
			pass "\$ $tt_first: exits 0"
		else
			fail "\$ $tt_first: exits 0 (got $tt_rc)"
			sed 's/^/    | /' "$T/output" >&2
		fi
		if tt_missing=$(match_expected "$T/expect" "$T/output"); then
			pass "\$ $tt_first: prints what the README shows"
		else
			fail "\$ $tt_first: prints what the README shows"
			printf '%s\n' "$tt_missing" >&2
			sed 's/^/    | /' "$T/output" >&2
		fi
		;;
	esac
done
cd "$T" || exit 1

finish
