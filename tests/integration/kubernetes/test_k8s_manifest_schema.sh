#!/usr/bin/env bash
# The Kubernetes manifests navette builds pass the strict v1.31 schemas
# (issue 31): unit/test_k8s_manifest writes a set of them (one job, a GPU
# job, a sweep and a 1,000-task sweep, retries, after, suspended, Secrets)
# and manifest_schema.py validates each Job against job-batch-v1.json and
# each Secret against secret-v1.json with Debian's python3-jsonschema
# (Draft7Validator), then checks that every manifest of
# tests/data/k8s/manifests/invalid is refused by the schema; the one the
# schema lets through (restartPolicy Always) must be refused by the
# builder's own check. No cluster needed.
# Needs NAVETTE, NAVETTE_SOURCE and K8S_MANIFEST_TEST (the
# test_k8s_manifest binary); ctest sets them.
set -eu -o pipefail
. "$(dirname "$0")/../lib.sh"
set +e # each check reports its own failure; finish sets the status

[ -n "${K8S_MANIFEST_TEST:-}" ] || _refuse "K8S_MANIFEST_TEST is empty or unset: set it to the test_k8s_manifest binary"
[ -x "$K8S_MANIFEST_TEST" ] || _refuse "K8S_MANIFEST_TEST='$K8S_MANIFEST_TEST' is not a program"

DATA=$NAVETTE_SOURCE/tests/data/k8s
PY=/usr/bin/python3
if ! [ -x "$PY" ] || ! "$PY" -c 'import jsonschema' 2>/dev/null; then
	skip "the v1.31 schema check" "no jsonschema for $PY (Debian: apt-get install python3-jsonschema)"
	finish
fi

GEN=$T/manifests
mkdir -p "$GEN"
OUT=$(NV_K8S_MANIFEST_OUT=$GEN NAVETTE_TEST_DATA=$NAVETTE_SOURCE/tests/data \
	"$K8S_MANIFEST_TEST" 2>&1)
RC=$?
check_rc "the unit test wrote its manifests" 0
for f in job-one job-gpu job-sweep job-sweep-1000 job-retries job-after \
	job-suspended secret-one secret-gpu; do
	check_file "$f.json is written" "$GEN/$f.json"
done

OUT=$("$PY" "$NAVETTE_SOURCE/tests/integration/kubernetes/manifest_schema.py" \
	"$GEN" "$DATA" 2>&1)
RC=$?
printf '%s\n' "$OUT"
check_rc "every generated manifest passes its schema, every invalid one is refused" 0
check_no_match "no schema check failed" "$OUT" '^FAIL'
# all 9 generated files and the 12 invalid ones were looked at
check_eq "manifests checked" "$(grep -c '^ok ' <<<"$OUT")" 21

# the schema's gap: restartPolicy Always passes it, the builder refuses it
GAP=$DATA/manifests/invalid/restartpolicy-always-schema-accepts.json
OUT=$("$PY" -c '
import json, sys, jsonschema
v = jsonschema.Draft7Validator(json.load(open(sys.argv[1])))
sys.exit(1 if list(v.iter_errors(json.load(open(sys.argv[2])))) else 0)
' "$DATA/schema-v1.31.0/job-batch-v1.json" "$GAP" 2>&1)
RC=$?
check_rc "restartPolicy Always passes the schema (the gap the builder covers)" 0
OUT=$("$K8S_MANIFEST_TEST" check "$GAP" 2>&1)
RC=$?
check_rc "the builder's check refuses restartPolicy Always" 1
check_contains "it says why" "$OUT" "restartPolicy 'Always'"
OUT=$("$K8S_MANIFEST_TEST" check "$GEN/job-gpu.json" 2>&1)
RC=$?
check_rc "the builder's check takes its own Job" 0

finish
