#!/usr/bin/env python3
"""A TCP proxy that resets connections, for the S3 fault tests.

    fault_proxy.py UPSTREAM SEED FRACTION [--lifetime S] [--min-bytes N]
                   [--max-bytes N] [--max-run N] [--match REGEX]
                   [--direction both|up|down]

Listens on 127.0.0.1 on a port of its choosing, prints that port on
stdout (one line), and forwards every connection to UPSTREAM ("host:port",
the S3 server) byte for byte. A FRACTION (0..1) of the connections, drawn
with a random.Random(SEED) in the order they are accepted, are marked: each
gets a byte threshold per direction (log-uniform in [min, max)) and is
reset (SO_LINGER 0 + close, on both sides) as soon as that many bytes have
been forwarded in either direction: exactly the threshold's bytes go
through, then RST. A marked connection that ends before its thresholds is
not reset. Below 1.0, at most --max-run marked connections come in a row,
so a client that retries always gets through; 1.0 marks every one.
--match keeps the marks to connections whose first request line matches
the regular expression (the others pass, though they draw all the same);
--direction keeps the thresholds to one way (up: client to server).

Each reset is logged on stderr, and a last line
"fault_proxy: connections=N marked=M resets=R" when it stops: on SIGTERM
or SIGINT, or after --lifetime seconds (300), whichever comes first.
Standard library only.
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

CHUNK = 64 * 1024


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
        self.resets = 0
        self.run = 0  # marked connections in a row

    def threshold(self):
        lo, hi = math.log(self.args.min_bytes), math.log(self.args.max_bytes)
        return int(math.exp(self.rng.uniform(lo, hi)))

    def draw(self):
        """Decides the fate of the next connection: None (clean) or the
        byte thresholds [client->server, server->client]."""
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
        return limits if mark else None

    async def serve(self, client):
        loop = asyncio.get_running_loop()
        self.connections += 1
        n = self.connections
        limits = self.draw()
        if limits:
            self.marked += 1
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
        names = ("up", "down")

        async def pump(src, dst, d):
            nonlocal limits
            try:
                while True:
                    data = await loop.sock_recv(src, CHUNK)
                    if d == 0 and moved[0] == 0 and limits and \
                            self.args.match:
                        first = data.split(b"\r\n", 1)[0]
                        if not re.search(self.args.match,
                                         first.decode("latin-1")):
                            limits = None
                            self.marked -= 1
                    if not data:
                        try:
                            dst.shutdown(socket.SHUT_WR)
                        except OSError:
                            pass
                        return
                    if limits and moved[d] + len(data) >= limits[d]:
                        data = data[:limits[d] - moved[d]]
                        if data:
                            await loop.sock_sendall(dst, data)
                        moved[d] += len(data)
                        reset.set()
                        return
                    await loop.sock_sendall(dst, data)
                    moved[d] += len(data)
            except OSError:
                broken.set()  # a peer went away: end both ways

        tasks = [asyncio.ensure_future(pump(client, upstream, 0)),
                 asyncio.ensure_future(pump(upstream, client, 1))]
        waiter = asyncio.ensure_future(reset.wait())
        pending = set(tasks)
        while pending and not reset.is_set() and not broken.is_set():
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
        listener.bind(("127.0.0.1", 0))
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
        log("connections=%d marked=%d resets=%d"
            % (self.connections, self.marked, self.resets))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("upstream", help="host:port of the S3 server")
    p.add_argument("seed", type=int)
    p.add_argument("fraction", type=float, help="0..1 of connections reset")
    p.add_argument("--lifetime", type=float, default=300.0)
    p.add_argument("--min-bytes", type=int, default=256)
    p.add_argument("--max-bytes", type=int, default=8 * 1024 * 1024)
    p.add_argument("--max-run", type=int, default=3)
    p.add_argument("--match", help="regex of the request lines to reset")
    p.add_argument("--direction", choices=("both", "up", "down"),
                   default="both")
    args = p.parse_args()
    if not 0.0 <= args.fraction <= 1.0:
        p.error("fraction must be within 0..1")
    if not 1 <= args.min_bytes < args.max_bytes:
        p.error("need 1 <= --min-bytes < --max-bytes")
    asyncio.run(Proxy(args).main())


if __name__ == "__main__":
    main()
