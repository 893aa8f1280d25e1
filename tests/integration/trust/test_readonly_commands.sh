# Read-only commands and plan run no program (issue 11). A project file
# from someone else's clone declares credentials whose source is a command
# that leaves a marker file, a registry credential bound to a host, and a
# recipe that loads one by name, uploads through the profile's s3:// store
# and builds an image; fake builders and container runtimes on PATH leave
# a marker too. plan, plan --json, creds list, audit, jobs, version,
# definitions, image inspect, status and logs must create no marker, exit
# as they would without the credential, and say what was not run. Then
# `navette run`, `creds check NAME` and `--credential NAME`, which act on
# the user's request, run the command.
set -eu -o pipefail
. "$(dirname "$0")/../lib.sh"
set +e # each check reports its own failure; finish sets the status

MARK=$T/marks
mkdir -p "$MARK" "$T/bin" "$T/secrets"
# Each would-be program records that it ran: no marker, nothing ran.
for p in buildah podman docker; do
	cat >"$T/bin/$p" <<EOF
#!/bin/sh
echo "$p \$*" >>"$MARK/$p"
exit 0
EOF
	chmod 755 "$T/bin/$p"
done
export PATH="$T/bin:$PATH"
# A credential_process answer kept outside the repository (no value in a
# committed file: the secret scan would rightly refuse it).
printf '{"Version": 1, "AccessKeyId": "AKIDREADONLY", "SecretAccessKey": "%s"}\n' \
	"ro-$(date +%s)-value" >"$T/secrets/sts.json"
chmod 600 "$T/secrets/sts.json"
export NAVETTE_TEST_RO_TOKEN=env-token-value

marks() { ls "$MARK" | tr '\n' ' '; }
no_marks() { # WHAT
	check_eq "$1: no program ran" "$(marks)" ""
}

R=$(new_repo clone)
cat >"$R/navette.lua" <<EOF
return {
  name = "clone",
  credentials = {
    sts = { kind = "s3", source = "command",
            command = { "sh", "-c", "touch '$MARK/sts'; cat '$T/secrets/sts.json'" } },
    reg = { kind = "basic", source = "command", host = "127.0.0.1:9",
            command = { "sh", "-c", "touch '$MARK/reg'; echo '{\"User\": \"u\", \"Password\": \"p\"}'" } },
    plain = { kind = "bearer", source = "env",
              env = { token = "NAVETTE_TEST_RO_TOKEN" } },
  },
  profiles = {
    -- (the built-in local profile, with the project's credentials named)
    ["local"] = { storage = "file://$T/store", credentials = { "sts", "reg", "plain" } },
    s3 = { storage = "s3://bucket/team/", require_pushed = false,
           credentials = { "reg", "plain" },
           s3 = { endpoint = "http://127.0.0.1:9", region = "us-east-1",
                  credential = "sts" } },
  },
}
EOF
put_file "$R" recipes/data.txt <<'EOF'
an input
EOF
put_file "$R" recipes/use.lua <<'EOF'
local navette = require "navette"
local sts = navette.creds.get("sts")
print("handle: " .. tostring(sts))
local input = navette.storage.put("inputs/data.txt", "data.txt")
navette.job { name = "use", command = { "true" },
              inputs = { data = input.url } }
EOF
put_file "$R" Containerfile <<'EOF'
FROM scratch
EOF
put_file "$R" recipes/build.lua <<'EOF'
local navette = require "navette"
local built = navette.image.build { file = "Containerfile",
                                    to = "127.0.0.1:9/team/app:v1" }
navette.job { name = "in-image", command = { "true" }, image = built }
EOF
commit_all "$R" >/dev/null

# ---- creds list -------------------------------------------------------------

nv_in "$R" creds list
check_rc "creds list exits 0" 0
no_marks "creds list"
check_match "creds list: the command credential is 'not checked'" "$OUT" \
	'^sts +s3 +command .* not checked$'
check_match "creds list: the env credential is read" "$OUT" \
	'^plain +bearer +env .* ok$'
check_contains "creds list: says why it was not run" "$OUT" \
	"sts: not checked (command source: runs only when a job needs it)"
check_contains "creds list: how to check it" "$OUT" "navette creds check sts"
nv_in "$R" creds list --json
check_rc "creds list --json exits 0" 0
no_marks "creds list --json"
check_eq "creds list --json: the status words" \
	"$(printf '%s' "$OUT" | json '[[r["name"], r["status"]] for r in d]')" \
	'[["plain", "ok"], ["reg", "not checked"], ["sts", "not checked"]]'

# ---- plan ---------------------------------------------------------------------

nv_in "$R" plan recipes/use.lua
check_rc "plan exits 0" 0
no_marks "plan"
check_contains "plan: the recipe holds a stand-in handle" "$OUT" \
	"handle: <secret:sts, not run>"
check_match "plan: says the command would load it (not run)" "$OUT" \
	"creds would load: sts from command sh -c touch"
nv_in "$R" plan recipes/use.lua --json
check_rc "plan --json exits 0" 0
no_marks "plan --json"
DOC=$(printf '%s\n' "$OUT" | sed -n '/^{/,$p')
check_eq "plan --json: a 'creds would load' action for sts" \
	"$(printf '%s' "$DOC" | json '[a["action"] + ": " + a["detail"].split(" sh ")[0] for a in d["actions"] if a["primitive"] == "creds"]')" \
	'["would load: sts from command"]'
check_eq "plan --json: the job is planned" \
	"$(printf '%s' "$DOC" | json 'len(d["jobs"])')" 1

# Through the profile's s3:// store, whose credential is the command.
nv_in "$R" plan recipes/use.lua --profile s3 --json
check_rc "plan on the s3 profile exits 0" 0
no_marks "plan on the s3 profile"
DOC=$(printf '%s\n' "$OUT" | sed -n '/^{/,$p')
check_eq "plan on s3: the upload is planned" \
	"$(printf '%s' "$DOC" | json '[a["detail"] for a in d["actions"] if a["primitive"] == "s3" and a["action"] == "put"]')" \
	"[\"s3://bucket/team/inputs/data.txt <- $R/recipes/data.txt\"]"
check_eq "plan on s3: the input's sha256 is unknown, not refused" \
	"$(printf '%s' "$DOC" | json '[(i["url"], i.get("sha256")) for i in d["jobs"][0]["inputs"]]')" \
	'[["s3://bucket/team/inputs/data.txt", null]]'
check_match "plan on s3: URLs are named, not signed" \
	"$(printf '%s' "$DOC" | json 'd["jobs"][0]["transfer"]["code"]["url"]')" \
	'signed when the job is submitted'
nv_in "$R" plan recipes/use.lua --profile s3
check_rc "plan on the s3 profile (text) exits 0" 0
no_marks "plan on the s3 profile (text)"

# A builder is never run by plan (the fakes on PATH would say so).
nv_in "$R" plan recipes/build.lua
check_rc "plan of an image build exits 0" 0
no_marks "plan of an image build"
check_match "plan: the build is recorded" "$OUT" \
	'image build: 127\.0\.0\.1:9/team/app:'

# ---- other read-only commands ------------------------------------------------------

for c in "audit show" "audit verify" "jobs" "version" "definitions"; do
	# shellcheck disable=SC2086 # two words on purpose
	nv_in "$R" $c
	check_rc "$c exits 0" 0
	no_marks "$c"
done
# The registry credential bound to the image's host is not run by image
# inspect: it says so (the registry itself is never reached).
nv_in "$R" image inspect 127.0.0.1:9/team/app:v1
check_rc "image inspect with a command credential not run: exits 3" 3
no_marks "image inspect"
check_contains "image inspect: names the credential not run" "$ERR" \
	"credential reg: its command (sh) was not run"

# ---- acting commands run it ------------------------------------------------------

nv_in "$R" run recipes/use.lua --wait
check_rc "run exits 0" 0
check_file "run: the recipe's credential command ran" "$MARK/sts"
check_contains "run: the recipe got the loaded handle" "$OUT" "handle: <secret:sts>"
ID=$(printf '%s\n' "$OUT" | sed -n 's/^job .* submitted: \([^ ]*\)$/\1/p' | head -1)
check_match "run: a job id" "$ID" '^clone-'
rm -f "$MARK"/*

nv_in "$R" status "$ID"
check_rc "status exits 0" 0
nv_in "$R" logs "$ID"
check_rc "logs exits 0" 0
nv_in "$R" creds list
check_rc "creds list after a run exits 0" 0
no_marks "status, logs, creds list after a run"

nv_in "$R" creds check sts
check_rc "creds check NAME loads it on request: exits 0" 0
check_file "creds check NAME: the command ran" "$MARK/sts"
nv_in "$R" image inspect 127.0.0.1:9/team/app:v1 --credential reg
check_file "--credential NAME: the named command ran" "$MARK/reg"
check_absent "no builder or runtime ever ran" "$MARK/buildah"
check_absent "no podman ever ran" "$MARK/podman"

finish
