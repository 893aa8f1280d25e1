#!/usr/bin/env python3
"""Runs a command on a pseudo-terminal, as a user's shell would, and prints
what it wrote there (escape sequences included) to stdout; exits with the
command's status (128 + N when signal N ended it).

  pty_run.py [--timeout S] [--interrupt-after TEXT]
             [--answer-after TEXT LINE] -- COMMAND ARGS...

--interrupt-after TEXT types Ctrl-C once TEXT has appeared on the terminal
(the terminal sends SIGINT to the command, as it would for a user).
--answer-after TEXT LINE types LINE and Enter once TEXT has appeared (a
person answering a question).
Portable: Linux and macOS have the pty module."""
import os
import pty
import select
import sys
import time


def main():
    args = sys.argv[1:]
    timeout, interrupt_after, answer_after, answer = 60.0, None, None, b""
    while args and args[0] != "--":
        if args[0] == "--timeout":
            timeout = float(args[1])
            args = args[2:]
        elif args[0] == "--answer-after":
            answer_after, answer = args[1].encode(), args[2].encode()
            args = args[3:]
        elif args[0] == "--interrupt-after":
            interrupt_after = args[1].encode()
            args = args[2:]
        else:
            sys.exit("pty_run.py: unknown option " + args[0])
    args = args[1:]
    pid, fd = pty.fork()
    if pid == 0:
        try:
            os.execvp(args[0], args)
        finally:
            os._exit(127)
    seen = b""
    interrupted = answered = False
    deadline = time.time() + timeout
    while True:
        if time.time() > deadline:
            os.kill(pid, 9)
            sys.stderr.write("pty_run.py: timed out after %.0f s\n" % timeout)
            break
        ready, _, _ = select.select([fd], [], [], 0.1)
        if ready:
            try:
                data = os.read(fd, 65536)
            except OSError:
                data = b""
            if not data:
                break
            seen += data
            if interrupt_after and not interrupted and interrupt_after in seen:
                time.sleep(0.3)
                os.write(fd, b"\x03")
                interrupted = True
            if answer_after and not answered and answer_after in seen:
                os.write(fd, answer + b"\r")
                answered = True
    _, status = os.waitpid(pid, 0)
    sys.stdout.buffer.write(seen)
    sys.stdout.flush()
    if os.WIFSIGNALED(status):
        sys.exit(128 + os.WTERMSIG(status))
    sys.exit(os.WEXITSTATUS(status))


if __name__ == "__main__":
    main()
