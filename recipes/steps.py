"""What the catalogue's scripts share (recipes/*/NAME.py import it):
ending a step with a failure a person recognises, and running a tool.

  import steps
  steps.NAME = "audio"
  steps.fail("why")            prints "audio: FAILED: why", exits 2
  out, err = steps.run([...], "what it does")
  steps.scratch()              moves into a folder for scratch files
"""

import atexit
import os
import shutil
import subprocess
import sys
import tempfile

NAME = "step"


def fail(message):
    """Ends the step: the line the recipe's failure condition matches."""
    print("%s: FAILED: %s" % (NAME, message), flush=True)
    sys.exit(2)


def scratch():
    """Moves into a folder of the step's own for its scratch files (the
    workspace is the commit, read-only when the job runs in an image),
    removed when the step ends -> its path."""
    folder = tempfile.mkdtemp(prefix=NAME + "-")
    atexit.register(shutil.rmtree, folder, True)
    os.chdir(folder)
    return folder


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
