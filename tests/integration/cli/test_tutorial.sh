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

# match_all: for each NNN.cmd that ran, NNN.missing: the lines of its
# expected output (NNN.expect) that its output (NNN.out) lacks, in order
# ("..." any text). One python3 for all: it is slow to start.
match_all() {
	python3 - "$T/steps" <<'EOF'
import glob, re, sys
for out in sorted(glob.glob(sys.argv[1] + "/*.out")):
    base = out[:-4]
    expect = open(base + ".expect", encoding="utf-8").read().splitlines()
    got = open(out, encoding="utf-8", errors="replace").read().splitlines()
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
    with open(base + ".missing", "w", encoding="utf-8") as f:
        f.write("".join("    missing: " + m + "\n" for m in missing))
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
		tt_base=${tt_step%.cmd}
		tail -n +2 "$tt_step" >"$tt_base.expect"
		eval "$tt_first" >"$tt_base.out" 2>&1 </dev/null
		tt_rc=$?
		if [ "$tt_rc" -eq 0 ]; then
			pass "\$ $tt_first: exits 0"
		else
			fail "\$ $tt_first: exits 0 (got $tt_rc)"
			sed 's/^/    | /' "$tt_base.out" >&2
		fi
		;;
	esac
done
cd "$T" || exit 1

match_all
check_eq "the outputs were compared" "$?" 0
for tt_step in "$T"/steps/*.cmd; do
	tt_base=${tt_step%.cmd}
	tt_first=$(head -n 1 "$tt_step")
	if [ ! -f "$tt_base.missing" ]; then
		fail "\$ $tt_first: prints what the README shows (not compared)"
	elif [ ! -s "$tt_base.missing" ]; then
		pass "\$ $tt_first: prints what the README shows"
	else
		fail "\$ $tt_first: prints what the README shows"
		cat "$tt_base.missing" >&2
		sed 's/^/    | /' "$tt_base.out" >&2
	fi
done

finish
