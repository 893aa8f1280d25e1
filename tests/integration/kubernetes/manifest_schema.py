#!/usr/bin/env python3
"""Validates the manifests navette's Kubernetes builder wrote against the
strict v1.31 JSON Schemas (tests/data/k8s/schema-v1.31.0), as
tests/data/k8s/check_vectors.py does: Draft7Validator named explicitly
(the schemas' "$schema" maps to no draft), formats not enforced.

Run: manifest_schema.py GENERATED_DIR DATA_DIR
  GENERATED_DIR  job-*.json and secret-*.json (test_k8s_manifest writes them)
  DATA_DIR       tests/data/k8s

Prints "ok ..." or "FAIL ..." per check; exits 1 on a failure, 2 when it
cannot start (no jsonschema, no manifest found)."""
import json
import os
import sys

try:
    import jsonschema
except ImportError:
    print("manifest_schema.py: no jsonschema module (Debian: "
          "apt-get install python3-jsonschema)", file=sys.stderr)
    sys.exit(2)

if len(sys.argv) != 3:
    print(__doc__, file=sys.stderr)
    sys.exit(2)
GEN, DATA = sys.argv[1], sys.argv[2]


def load(path):
    with open(path) as f:
        return json.load(f)


def validator(name):
    schema = load(os.path.join(DATA, "schema-v1.31.0", name))
    jsonschema.Draft7Validator.check_schema(schema)
    return jsonschema.Draft7Validator(schema)


JOB = validator("job-batch-v1.json")
SECRET = validator("secret-v1.json")
failed = 0


def report(label, errs):
    global failed
    if errs:
        failed += 1
        detail = "; ".join("%s: %s" % ("/".join(map(str, e.absolute_path)),
                                       e.message[:160]) for e in errs[:3])
        print("FAIL %s: %s" % (label, detail))
    else:
        print("ok   " + label)


names = sorted(os.listdir(GEN))
jobs = [n for n in names if n.startswith("job-") and n.endswith(".json")]
secrets = [n for n in names if n.startswith("secret-") and n.endswith(".json")]
if not jobs or not secrets:
    print("manifest_schema.py: no job-*.json or secret-*.json in " + GEN,
          file=sys.stderr)
    sys.exit(2)
for n in jobs:
    obj = load(os.path.join(GEN, n))
    report("generated %s is a valid batch/v1 Job" % n,
           list(JOB.iter_errors(obj)))
    if obj.get("kind") != "Job":
        report("generated %s has kind Job" % n, ["kind " + str(obj.get("kind"))])
for n in secrets:
    obj = load(os.path.join(GEN, n))
    report("generated %s is a valid v1 Secret" % n,
           list(SECRET.iter_errors(obj)))

# every manifest of the invalid set but the documented gap is refused by
# the schema (the gap, restartPolicy Always, is refused by the builder's
# check: the shell test runs it)
INVALID = os.path.join(DATA, "manifests", "invalid")
for n in sorted(os.listdir(INVALID)):
    if not n.endswith(".json") or n.startswith("restartpolicy-always"):
        continue
    v = SECRET if n.startswith("secret-") else JOB
    if list(v.iter_errors(load(os.path.join(INVALID, n)))):
        print("ok   invalid/%s is refused by the schema" % n)
    else:
        failed += 1
        print("FAIL invalid/%s passes the schema" % n)

print("%d failed" % failed)
sys.exit(1 if failed else 0)
