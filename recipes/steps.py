"""What the catalogue's scripts share (recipes/*/NAME.py import it):
ending a step with a failure a person recognises, and running a tool.

  import steps
  steps.NAME = "audio"
  steps.fail("why")            prints "audio: FAILED: why", exits 2
  out, err = steps.run([...], "what it does")
"""

import subprocess
import sys

NAME = "step"


def fail(message):
    """Ends the step: the line the recipe's failure condition matches."""
    print("%s: FAILED: %s" % (NAME, message), flush=True)
    sys.exit(2)


def run(args, what):
    """Runs a tool -> (stdout, stderr) as text; a tool missing or failing
    ends the step, with the end of what it printed."""
    try:
        p = subprocess.run(args, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, check=False)
    except FileNotFoundError:
        fail("%s: %s is not installed on this node" % (what, args[0]))
    err = p.stderr.decode("utf-8", "replace")
    if p.returncode != 0:
        tail = err.strip().splitlines()[-3:]
        fail("%s: %s exited with %d: %s"
             % (what, args[0], p.returncode, " / ".join(tail)))
    return p.stdout.decode("utf-8", "replace"), err
