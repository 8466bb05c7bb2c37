#!/usr/bin/env python3
"""A soak of loom-server: mixed traffic from several clients for --minutes, then a report.

The mix (tools/soak/traffic.py): completions and chat, streamed and not, n > 1 with logprobs,
clients that close mid-stream, read a stream slowly or stop reading it, malformed requests (bad
JSON, wrong types, over the limits) and GET probes. While it runs the server's RSS is sampled
from /proc/<pid>/status and the latency of the well-formed requests is kept per window. At the
end the report gives requests by class and status, every failure, RSS at the start, after the
warm-up and at the end, p99 of the first and last windows, and /metrics' KV blocks in use once
the load has settled. Exit status 1 when any check failed:
  - a well-formed request answered other than 200 (a 503/429 allowed with --allow-overload),
    its connection refused or cut, its reply incomplete, or no reply within --timeout (a hang);
  - a malformed request answered other than 4xx;
  - the server died, or /health is not 200 at the end;
  - KV blocks in use (or sequences, or running/waiting requests) not back at their idle values
    within --settle seconds (a leak);
  - RSS grew by more than --max-rss-growth MiB from the end of the warm-up to the end;
  - with --max-p99-growth F: the last window's p99 over F times the first's.

  tools/soak/soak.py --server build/bin/loom-server --minutes 10 -- --config configs/default.toml
Everything after "--" goes to loom-server (--host and --port are added). Without --server it
attaches to a server already on --port (--pid for its RSS).
"""
import argparse
import collections
import math
import os
import random
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import traffic  # noqa: E402
from wire import Server, health, metrics, rss_kib  # noqa: E402

IDLE_GAUGES = ["kv_cache_used_blocks", "kv_cache_num_seqs", "num_requests_running", "num_requests_waiting"]


def p99(values):
    if not values:
        return None
    s = sorted(values)
    return s[max(0, math.ceil(0.99 * len(s)) - 1)]


def mib(kib):
    return "n/a" if kib is None else f"{kib / 1024:.1f} MiB"


class Soak:
    def __init__(self, args, port, pid):
        self.args = args
        self.port = port
        self.pid = pid
        self.lock = threading.Lock()
        self.by_class = collections.defaultdict(collections.Counter)
        self.failures = []
        self.latencies = []  # (seconds since the start, latency)
        self.rss = []        # (seconds since the start, KiB)
        self.stop = threading.Event()
        self.pool_warm_at = None  # seconds from the start
        names = list(traffic.CLASSES)
        self.names = names
        self.weights = [traffic.CLASSES[n][1] for n in names]

    def client(self, index, t0, end):
        rng = random.Random(self.args.seed * 1000 + index)
        while time.monotonic() < end:
            name = rng.choices(self.names, self.weights)[0]
            out = traffic.CLASSES[name][0](self.port, rng, self.args.timeout)
            failure = out.failure
            if failure and self.args.allow_overload and out.label in ("503", "429") and out.well_formed:
                failure = None
            with self.lock:
                self.by_class[name][out.label] += 1
                if failure:
                    self.failures.append((round(time.monotonic() - t0, 1), name, failure))
                elif out.latency is not None and name in traffic.LATENCY_CLASSES:
                    self.latencies.append((time.monotonic() - t0, out.latency))

    def sample_rss(self, t0):
        """RSS once a second, and the moment the KV pool is first all touched: the pool's pages
        are mapped as blocks are first used, so RSS grows until then without any leak."""
        while not self.stop.wait(1.0):
            kib = rss_kib(self.pid) if self.pid else None
            if kib is not None:
                with self.lock:
                    self.rss.append((time.monotonic() - t0, kib))
            if self.pool_warm_at is None:
                try:
                    m = metrics(self.port)
                except Exception:  # noqa: BLE001 - the clients report a server that stopped answering
                    continue
                touched = m.get("kv_cache_used_blocks", 0) + m.get("kv_cache_cached_blocks", 0)
                if touched >= 0.95 * m.get("kv_cache_total_blocks", 0):
                    self.pool_warm_at = time.monotonic() - t0

    def settle(self, idle):
        """Polls /metrics until the gauges are back at their idle values; returns the last read."""
        deadline = time.monotonic() + self.args.settle
        last = {}
        while True:
            try:
                last = metrics(self.port)
            except Exception as e:  # noqa: BLE001 - reported as a failed settle below
                last = {"error": str(e)}
            if all(last.get(g) == idle.get(g) for g in IDLE_GAUGES) or time.monotonic() > deadline:
                return last
            time.sleep(0.25)

    def run(self):
        a = self.args
        duration = a.minutes * 60.0
        window = a.window or max(5.0, min(60.0, duration / 5))
        warmup = a.warmup if a.warmup is not None else min(60.0, duration / 5)
        idle = metrics(self.port)
        rss_start = rss_kib(self.pid) if self.pid else None
        t0 = time.monotonic()
        sampler = threading.Thread(target=self.sample_rss, args=(t0,), daemon=True)
        sampler.start()
        clients = [threading.Thread(target=self.client, args=(i, t0, t0 + duration)) for i in range(a.clients)]
        for c in clients:
            c.start()
        for c in clients:
            c.join()
        elapsed = time.monotonic() - t0
        settled = self.settle(idle)
        self.stop.set()
        sampler.join()
        rss_end = rss_kib(self.pid) if self.pid else None
        # The RSS baseline: after the warm-up and once the pool is warm, but by half the run.
        warm_at = min(max(warmup, self.pool_warm_at or duration), duration / 2)
        rss_warm = next((k for t, k in self.rss if t >= warm_at), rss_end)
        rss_peak = max([k for _, k in self.rss] + [rss_end or 0]) if self.pid else None

        windows = collections.defaultdict(list)
        for t, lat in self.latencies:
            windows[int(t // window)].append(lat)
        full = [w for w in sorted(windows) if (w + 1) * window <= elapsed + 1e-6] or sorted(windows)
        first = p99(windows[full[0]]) if full else None
        last = p99(windows[full[-1]]) if full else None

        total = sum(sum(c.values()) for c in self.by_class.values())
        print(f"soak: {total} requests from {a.clients} clients in {elapsed:.1f} s (seed {a.seed}, window {window:.0f} s)")
        for name in self.names:
            c = self.by_class.get(name)
            if c:
                print(f"  {name:18s} " + ", ".join(f"{k}={v}" for k, v in sorted(c.items())))
        print(f"soak: failures: {len(self.failures)}")
        for t, name, what in self.failures[:25]:
            print(f"  at {t} s, {name}: {what}")
        print(f"soak: RSS start {mib(rss_start)}, after warm-up ({warm_at:.0f} s; KV pool "
              f"{'warm at %.0f s' % self.pool_warm_at if self.pool_warm_at else 'never all touched'}) {mib(rss_warm)}, "
              f"end {mib(rss_end)}, peak {mib(rss_peak)}")
        growth = None if rss_end is None or rss_warm is None else (rss_end - rss_warm) / 1024
        if growth is not None:
            print(f"soak: RSS drift after warm-up {growth:+.1f} MiB (limit {a.max_rss_growth} MiB)")
        print("soak: p99 per window (s): " + " ".join(f"{p99(windows[w]):.3f}" for w in full))
        if first and last:
            print(f"soak: p99 first window {first:.3f} s, last {last:.3f} s, drift x{last / first:.2f}")
        print("soak: idle gauges before " + ", ".join(f"{g}={idle.get(g)}" for g in IDLE_GAUGES) +
              "; after the load " + ", ".join(f"{g}={settled.get(g)}" for g in IDLE_GAUGES))

        problems = []
        if self.failures:
            problems.append(f"{len(self.failures)} failed requests")
        if not all(settled.get(g) == idle.get(g) for g in IDLE_GAUGES):
            problems.append(f"the gauges did not return to idle within {a.settle} s (leak)")
        if growth is not None and growth > a.max_rss_growth:
            problems.append(f"RSS grew {growth:.1f} MiB after the warm-up")
        if a.max_p99_growth and first and last and last > first * a.max_p99_growth:
            problems.append(f"p99 grew x{last / first:.2f}")
        return problems


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--server", help="loom-server binary to start (else --port must be serving)")
    ap.add_argument("--port", type=int, default=0, help="0 with --server: any free port")
    ap.add_argument("--pid", type=int, help="the attached server's pid, for its RSS")
    ap.add_argument("--minutes", type=float, default=10.0)
    ap.add_argument("--clients", type=int, default=6, help="client threads at once")
    ap.add_argument("--seed", type=int, default=19)
    ap.add_argument("--timeout", type=float, default=60.0, help="seconds without a reply byte that count as a hang")
    ap.add_argument("--window", type=float, help="seconds per p99 window (default: a fifth of the run, 5..60)")
    ap.add_argument("--warmup", type=float, help="least seconds before the RSS baseline, which also waits for the KV pool to be all "
                    "touched, up to half the run (default: a fifth of the run, at most 60)")
    ap.add_argument("--max-rss-growth", type=float, default=32.0, help="MiB of RSS growth after the warm-up allowed")
    ap.add_argument("--max-p99-growth", type=float, default=0.0, help="fail when last p99 > this x first (0: report only)")
    ap.add_argument("--settle", type=float, default=30.0, help="seconds for the gauges to return to idle")
    ap.add_argument("--allow-overload", action="store_true", help="503/429 on well-formed requests are load shedding")
    ap.add_argument("--log", help="file for the server's output (default: discarded)")
    ap.add_argument("server_args", nargs="*")
    args = ap.parse_args()

    server = None
    pid = args.pid
    port = args.port
    if args.server:
        try:
            server = Server(args.server, args.server_args, args.port, args.log)
        except RuntimeError as e:
            print(f"soak: {e}", file=sys.stderr)
            return 2
        port, pid = server.port, server.pid
    elif not port:
        ap.error("give --server, or --port of a running server")

    problems = Soak(args, port, pid).run()
    if server is not None and not server.alive():
        problems.append(f"the server died (exit {server.proc.returncode})")
    if not health(port):
        problems.append("/health is not 200 at the end")
    if server is not None:
        code = server.stop()
        print(f"soak: server exit after SIGTERM: {code}")
        if code != 0:
            problems.append(f"the server exited {code} after SIGTERM")
    print("soak: " + ("FAILED: " + "; ".join(problems) if problems else "ok"))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
