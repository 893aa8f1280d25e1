#!/usr/bin/env python3
"""A loopback TCP proxy for the Slurm backend's tests: it forwards every
connection to the target, and holds back the answer to the first job
submission (POST .../job/submit) for --delay-submit seconds, after writing
"submit forwarded" to the log, so a test can kill the submitter while its
request has reached slurmrestd and its answer has not. With --log-submits,
it also writes "submit request" for every submission it forwards, so a
test can count the requests."""
import argparse
import socket
import threading
import time

parser = argparse.ArgumentParser()
parser.add_argument("--listen", type=int, required=True)
parser.add_argument("--target", required=True)  # host:port
parser.add_argument("--delay-submit", type=float, default=5.0)
parser.add_argument("--log", required=True)
parser.add_argument("--log-submits", action="store_true")
args = parser.parse_args()
host, port = args.target.rsplit(":", 1)
lock = threading.Lock()
state = {"delayed": False}


def log(line):
    with lock, open(args.log, "a") as f:
        f.write(line + "\n")


def pump(src, dst, hold):
    try:
        while True:
            data = src.recv(65536)
            if not data:
                break
            if hold is not None:
                hold.wait()
            dst.sendall(data)
    except OSError:
        pass
    finally:
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


def serve(client):
    upstream = socket.create_connection((host, int(port)))
    gate = threading.Event()
    gate.set()

    def upward():
        try:
            while True:
                data = client.recv(65536)
                if not data:
                    break
                # the gate is shut before the request goes on: shut after,
                # an answer quicker than this thread went through (seen on
                # a loaded machine: the "killed" run had its answer)
                with lock:
                    first = b"/job/submit" in data and not state["delayed"]
                    if first:
                        state["delayed"] = True
                if first:
                    gate.clear()
                upstream.sendall(data)
                if args.log_submits and data.startswith(b"POST ") and \
                        b"/job/submit " in data.split(b"\r\n", 1)[0]:
                    log("submit request")
                if first:
                    log("submit forwarded")
                    threading.Timer(args.delay_submit, gate.set).start()
        except OSError:
            pass
        finally:
            try:
                upstream.shutdown(socket.SHUT_WR)
            except OSError:
                pass

    threading.Thread(target=upward, daemon=True).start()
    pump(upstream, client, gate)


server = socket.socket()
server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
server.bind(("127.0.0.1", args.listen))
server.listen(16)
log("listening")
while True:
    conn, _ = server.accept()
    threading.Thread(target=serve, args=(conn,), daemon=True).start()
