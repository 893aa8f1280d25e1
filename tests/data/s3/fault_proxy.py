#!/usr/bin/env python3
"""A TCP proxy that injects faults, for the S3, registry and slurmrestd
fault tests (tests/unit/test_s3_faults.c, tests/faults/).

    fault_proxy.py UPSTREAM SEED FRACTION [--lifetime S] [--min-bytes N]
                   [--max-bytes N] [--max-run N] [--match REGEX]
                   [--direction both|up|down] [--force-first N]
                   [--answer STATUS [--answer-code CODE] [--retry-after V]]
                   [--delay S] [--stall-after N [--stall-direction D]]
                   [--port P] [--reopen]

Listens on 127.0.0.1 on a port of its choosing (--port: that one), prints
that port on stdout (one line), and forwards every connection to UPSTREAM ("host:port",
the S3 server) byte for byte. A FRACTION (0..1) of the connections, drawn
with a random.Random(SEED) in the order they are accepted, are marked, and
a marked connection gets a fault:

- by default, a reset: a byte threshold per direction (log-uniform in
  [min, max)), and the connection is reset (SO_LINGER 0 + close, on both
  sides) as soon as that many bytes have been forwarded in either
  direction: exactly the threshold's bytes go through, then RST. A marked
  connection that ends before its thresholds is not reset;
- --answer STATUS: the proxy answers the request itself, never forwarding
  it: it reads the request head (and a body of known length, unless the
  client waits for "100 Continue"), then sends STATUS with an S3 <Error>
  document (code --answer-code, by default InternalError for 500, SlowDown
  for 503), "Retry-After: V" when --retry-after is given, and closes;
- --delay S: the proxy waits S seconds before forwarding anything (a
  client with a shorter timeout gives up).

A client keeps connections alive, so a request that --match selects may
come on a connection opened by another. With --reopen the proxy then
closes that connection without forwarding the request (logged "reopen"),
and the client sends it again on a new connection, where it is the first
request and meets its fault; without it such a request passes.

Below 1.0, at most --max-run marked connections come in a row, so a client
that retries always gets through; 1.0 marks every one. --match keeps the
marks to connections whose first request line matches the regular
expression (the others pass, though they draw all the same); --force-first
N marks the first N matching connections whatever the draw (so a test
sees at least N faults); --direction keeps the reset thresholds to one way
(up: client to server).

--stall-after N: once N bytes in all have been forwarded in the stall
direction (up, client to server, or down), the proxy stops forwarding
that way on every connection (the other way still flows) and logs
"stalled" once: a test kills its client then, mid-transfer.

Each connection is logged on stderr with the time its request arrived
(seconds since the start), its first request line and what was done to it, and a last line
"fault_proxy: connections=N marked=M resets=R answered=A delayed=D
bytes_up=U bytes_down=V" when it stops: on SIGTERM or SIGINT, or after
--lifetime seconds (300), whichever comes first. Standard library only.
"""

import argparse
import asyncio
import math
import re
import random
import signal
import socket
import struct
import sys
import time

CHUNK = 64 * 1024
REQUEST_LINE = re.compile(rb"^[A-Z]+ [^ ]+ HTTP/1\.[01]\r\n")
START = time.monotonic()
REASONS = {500: "Internal Server Error", 503: "Service Unavailable",
           429: "Too Many Requests", 502: "Bad Gateway"}
CODES = {500: "InternalError", 503: "SlowDown", 429: "SlowDown",
         502: "BadGateway"}


def log(msg):
    sys.stderr.write("fault_proxy: " + msg + "\n")
    sys.stderr.flush()


def hard_close(sock):
    """Close with SO_LINGER 0: the peer gets an RST, not a FIN."""
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                        struct.pack("ii", 1, 0))
    except OSError:
        pass
    sock.close()


class Proxy:
    def __init__(self, args):
        self.args = args
        host, _, port = args.upstream.rpartition(":")
        self.up_host = host.strip("[]") or "127.0.0.1"
        self.up_port = int(port)
        self.rng = random.Random(args.seed)
        self.connections = 0
        self.marked = 0
        self.forced = 0
        self.resets = 0
        self.answered = 0
        self.delayed = 0
        self.bytes = [0, 0]  # forwarded up, down (all connections)
        self.run = 0  # marked connections in a row
        self.stalled = asyncio.Event()

    def threshold(self):
        lo, hi = math.log(self.args.min_bytes), math.log(self.args.max_bytes)
        return int(math.exp(self.rng.uniform(lo, hi)))

    def draw(self):
        """Decides the fate of the next connection: (marked, the byte
        thresholds [client->server, server->client])."""
        mark = self.rng.random() < self.args.fraction
        limits = [self.threshold(), self.threshold()]  # drawn either way
        if self.args.direction == "up":
            limits[1] = math.inf
        elif self.args.direction == "down":
            limits[0] = math.inf
        if mark and self.args.fraction < 1.0 and \
                self.run >= self.args.max_run:
            mark = False
        self.run = self.run + 1 if mark else 0
        return mark, limits

    async def answer(self, client, data, n, line, t):
        """Reads the rest of the request, answers it with the error."""
        loop = asyncio.get_running_loop()
        while b"\r\n\r\n" not in data and len(data) < 1 << 20:
            more = await loop.sock_recv(client, CHUNK)
            if not more:
                break
            data += more
        head, _, body = data.partition(b"\r\n\r\n")
        length, expect = 0, False
        for h in head.split(b"\r\n")[1:]:
            name, _, value = h.partition(b":")
            name = name.strip().lower()
            if name == b"content-length":
                length = int(value.strip() or 0)
            elif name == b"expect" and b"100" in value:
                expect = True
        left = 0 if expect else length - len(body)
        while left > 0:
            more = await loop.sock_recv(client, min(CHUNK, left))
            if not more:
                break
            left -= len(more)
        status = self.args.answer
        code = self.args.answer_code or CODES.get(status, "InternalError")
        doc = ("<?xml version=\"1.0\" encoding=\"UTF-8\"?><Error><Code>%s"
               "</Code><Message>injected by fault_proxy</Message>"
               "<RequestId>fault-%d</RequestId></Error>" % (code, n)).encode()
        headers = ["HTTP/1.1 %d %s" % (status, REASONS.get(status, "Error")),
                   "Content-Type: application/xml",
                   "Content-Length: %d" % len(doc),
                   "x-amz-request-id: fault-%d" % n,
                   "Connection: close"]
        if self.args.retry_after is not None:
            headers.append("Retry-After: %s" % self.args.retry_after)
        reply = ("\r\n".join(headers) + "\r\n\r\n").encode() + doc
        try:
            await loop.sock_sendall(client, reply)
            client.shutdown(socket.SHUT_WR)
            # let the client read it all and close first
            await asyncio.wait_for(loop.sock_recv(client, CHUNK), 5)
        except (OSError, asyncio.TimeoutError):
            pass
        client.close()
        self.answered += 1
        log("conn %d: t=%.3f %s -> answered %d %s" %
            (n, t, line, status, code))

    async def serve(self, client):
        loop = asyncio.get_running_loop()
        self.connections += 1
        n = self.connections
        drawn, limits = self.draw()
        try:
            first = await loop.sock_recv(client, CHUNK)
        except OSError:
            client.close()
            return
        t = time.monotonic() - START  # the request's arrival
        line = first.split(b"\r\n", 1)[0].decode("latin-1")
        matches = not self.args.match or re.search(self.args.match, line)
        mark = bool(drawn and matches)
        if matches and not mark and self.forced < self.args.force_first:
            mark = True
        if matches and self.forced < self.args.force_first:
            self.forced += 1
        if mark:
            self.marked += 1
        if mark and self.args.answer:
            await self.answer(client, first, n, line, t)
            return
        if mark and self.args.delay:
            self.delayed += 1
            log("conn %d: t=%.3f %s -> delayed %g s" %
                (n, t, line, self.args.delay))
            await asyncio.sleep(self.args.delay)
        reset_mark = mark and not self.args.delay
        if not reset_mark:
            limits = None
            if not (mark and self.args.delay):
                log("conn %d: t=%.3f %s -> forwarded" %
                    (n, t, line))
        else:
            log("conn %d: t=%.3f %s -> marked for a reset" %
                (n, t, line))
        upstream = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        upstream.setblocking(False)
        try:
            await loop.sock_connect(upstream, (self.up_host, self.up_port))
        except OSError as e:
            log("conn %d: upstream %s: %s" % (n, self.args.upstream, e))
            upstream.close()
            hard_close(client)
            return
        moved = [0, 0]
        reset = asyncio.Event()
        broken = asyncio.Event()
        reopen = asyncio.Event()
        ended = asyncio.Event()  # reset or reopen
        names = ("up", "down")
        stall_d = -1 if self.args.stall_after is None else \
            names.index(self.args.stall_direction)

        async def send(dst, data, d):
            """Forwards data (cut at the threshold); False once reset."""
            if limits and moved[d] + len(data) >= limits[d]:
                data = data[:limits[d] - moved[d]]
                if data:
                    await loop.sock_sendall(dst, data)
                moved[d] += len(data)
                self.bytes[d] += len(data)
                reset.set()
                ended.set()
                return False
            await loop.sock_sendall(dst, data)
            moved[d] += len(data)
            self.bytes[d] += len(data)
            return True

        async def pump(src, dst, d, data):
            try:
                while True:
                    if data is None:
                        if d == stall_d and self.stalled.is_set():
                            await asyncio.sleep(3600)
                        data = await loop.sock_recv(src, CHUNK)
                    if not data:
                        try:
                            dst.shutdown(socket.SHUT_WR)
                        except OSError:
                            pass
                        return
                    if d == 0 and data is not first and self.args.reopen \
                            and self.args.match \
                            and not mark and REQUEST_LINE.match(data):
                        again = data.split(b"\r\n", 1)[0].decode("latin-1")
                        if re.search(self.args.match, again):
                            log("conn %d: %s on a kept-alive connection -> "
                                "reopen" % (n, again))
                            reopen.set()
                            ended.set()
                            return
                    if not await send(dst, data, d):
                        return
                    data = None
                    if d == stall_d and not self.stalled.is_set() and \
                            self.bytes[d] >= self.args.stall_after:
                        self.stalled.set()
                        log("stalled after %d bytes %s" %
                            (self.bytes[d], names[d]))
            except OSError:
                broken.set()  # a peer went away: end both ways

        tasks = [asyncio.ensure_future(pump(client, upstream, 0, first)),
                 asyncio.ensure_future(pump(upstream, client, 1, None))]
        waiter = asyncio.ensure_future(ended.wait())
        pending = set(tasks)
        while pending and not reset.is_set() and not broken.is_set() \
                and not reopen.is_set():
            _, pending = await asyncio.wait(
                pending | {waiter}, return_when=asyncio.FIRST_COMPLETED)
            pending.discard(waiter)
        waiter.cancel()
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, waiter, return_exceptions=True)
        if reset.is_set():
            self.resets += 1
            d = 0 if moved[0] >= limits[0] else 1
            log("conn %d: reset after %d bytes %s (%d up, %d down); "
                "resets=%d" % (n, limits[d], names[d], moved[0], moved[1],
                               self.resets))
            hard_close(client)
            hard_close(upstream)
        else:
            client.close()
            upstream.close()

    async def main(self):
        loop = asyncio.get_running_loop()
        stop = asyncio.Event()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.args.port))
        listener.listen(64)
        listener.setblocking(False)
        print(listener.getsockname()[1], flush=True)
        log("listening on 127.0.0.1:%d -> %s, seed %d, fraction %g"
            % (listener.getsockname()[1], self.args.upstream,
               self.args.seed, self.args.fraction))
        conns = set()

        async def accept():
            while True:
                client, _ = await loop.sock_accept(listener)
                client.setblocking(False)
                t = asyncio.ensure_future(self.serve(client))
                conns.add(t)
                t.add_done_callback(conns.discard)

        acceptor = asyncio.ensure_future(accept())
        try:
            await asyncio.wait_for(stop.wait(), self.args.lifetime)
        except asyncio.TimeoutError:
            log("lifetime of %g s over" % self.args.lifetime)
        acceptor.cancel()
        for t in list(conns):
            t.cancel()
        await asyncio.gather(acceptor, *conns, return_exceptions=True)
        listener.close()
        log("connections=%d marked=%d resets=%d answered=%d delayed=%d "
            "bytes_up=%d bytes_down=%d"
            % (self.connections, self.marked, self.resets, self.answered,
               self.delayed, self.bytes[0], self.bytes[1]))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("upstream", help="host:port of the S3 server")
    p.add_argument("seed", type=int)
    p.add_argument("fraction", type=float, help="0..1 of connections marked")
    p.add_argument("--lifetime", type=float, default=300.0)
    p.add_argument("--min-bytes", type=int, default=256)
    p.add_argument("--max-bytes", type=int, default=8 * 1024 * 1024)
    p.add_argument("--max-run", type=int, default=3)
    p.add_argument("--match", help="regex of the request lines to mark")
    p.add_argument("--direction", choices=("both", "up", "down"),
                   default="both")
    p.add_argument("--force-first", type=int, default=0)
    p.add_argument("--answer", type=int, help="HTTP status to answer with")
    p.add_argument("--answer-code", help="S3 error code of the answer")
    p.add_argument("--retry-after", help="Retry-After value of the answer")
    p.add_argument("--delay", type=float, default=0.0)
    p.add_argument("--stall-after", type=int)
    p.add_argument("--stall-direction", choices=("up", "down"),
                   default="up")
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--reopen", action="store_true")
    args = p.parse_args()
    if not 0.0 <= args.fraction <= 1.0:
        p.error("fraction must be within 0..1")
    if not 1 <= args.min_bytes < args.max_bytes:
        p.error("need 1 <= --min-bytes < --max-bytes")
    if args.answer is not None and not 400 <= args.answer <= 599:
        p.error("--answer is an HTTP error status (400..599)")
    asyncio.run(Proxy(args).main())


if __name__ == "__main__":
    main()
