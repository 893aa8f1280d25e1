"""The fan-in of the training sweep: reads each run's metrics.json from
$NAVETTE_INPUTS/runs/1, /2, ... (in the sweep's order; SELECT_NAMES, a
JSON list, names the jobs in that order) and publishes best.json naming
the run with the highest test accuracy (ties: the first), with every
run's accuracy beside it. A metrics file that is not one fails the job
("select: FAILED"), exit 2.
"""

import json
import os
import sys

# (recipes/steps.py: what the catalogue's scripts share)
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                ".."))
import steps  # noqa: E402
steps.NAME = "select"


def fail(message):
    steps.fail(message)


def main():
    folder = os.path.join(os.environ["NAVETTE_INPUTS"], "runs")
    names = json.loads(os.environ.get("SELECT_NAMES", "[]"))
    runs = []
    for i in range(1, len(names) + 1):
        path = os.path.join(folder, str(i))
        try:
            with open(path, encoding="utf-8") as f:
                m = json.load(f)
            acc = float(m["test_accuracy"])
        except (OSError, ValueError, KeyError, TypeError) as e:
            fail("run %d (%s): %s is not a metrics.json (%s)"
                 % (i, names[i - 1], path, e))
        runs.append({"job": names[i - 1], "lr": m.get("lr"),
                     "seed": m.get("seed"), "test_accuracy": acc,
                     "loss": (m.get("loss") or [None])[-1]})
    if not runs:
        fail("no run to choose from (SELECT_NAMES is empty)")
    best = max(runs, key=lambda r: r["test_accuracy"])
    with open(os.path.join(os.environ["NAVETTE_OUTPUTS"], "best.json"),
              "w", encoding="utf-8") as f:
        json.dump({"best": best, "runs": runs}, f, indent=1, sort_keys=True)
        f.write("\n")
    for r in runs:
        print("select: %-32s test accuracy %.4f" % (r["job"],
                                                    r["test_accuracy"]))
    print("select: best %s (%.4f)" % (best["job"], best["test_accuracy"]),
          flush=True)


if __name__ == "__main__":
    main()
