#!/usr/bin/env python3
"""A chaos run of loom-server: signals and plugin faults under load, --rounds times.

Rounds take turns among the --kinds:
  sigterm  load, then SIGTERM: every reply begun is whole or ends as the drain says (a stream
           with an error event and [DONE], a whole reply with a 503 naming the shutdown);
           a request the server never answered sees only a connection error; the process
           exits 0 within drain_timeout + --exit-margin. drain_timeout alternates over
           --drain-timeouts (0 ends every request at once, so the cut path runs each time).
  sigkill  load, then SIGKILL and a restart on the same port: clients see connection errors
           only, never a reply that parses wrong; the new server is healthy within
           --start-timeout and serves whole replies.
  faults   a server with the fault-injecting scheduler (--faults-plugin: tests/abi/plugins/
           faulty_scheduler.cpp, which refuses its 2nd request, fails its 4th and 8th
           steps and over-schedules in its 12th) under load: the faulted requests end with an error that names the fault,
           the others complete, the server stays up and serves afterwards, its KV blocks return
           to idle, and it exits 0 on SIGTERM.
After every round the server's exit or health is checked. A report line per round; exit status
1 on any violation.

  tools/soak/chaos.py --server build/bin/loom-server --model tests/data/stories260K.gguf \
      --faults-plugin build/abi-plugins/libloom-scheduler-faults.so --rounds 10
Everything after "--" goes to loom-server.
"""
import argparse
import collections
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from traffic import chat_body, check_stream, check_whole, completion_body  # noqa: E402
from wire import Exchange, Hang, Server, Truncated, call, health, metrics, request_bytes, sse_events  # noqa: E402

# What the engine says of each fault the plugin injects: its own errors, the unknown id (8th
# step) and the counts past a request's tokens (12th step), which fail only the requests named.
FAULT_MESSAGES = ("injected fault", "unknown request 987654321", "of its tokens are left to compute")


def config_text(model, drain_timeout, faults_plugin=None):
    lines = ["[model]", f"path = {json.dumps(os.path.abspath(model))}", 'name = "stories260K"',
             "[server]", f"drain_timeout = {drain_timeout}", "[logging]", 'level = "info"']
    if faults_plugin:
        # The plugin computes whole prompts: no prefix caching; the pool checks itself every step.
        lines += ["[scheduler]", 'plugin = "faults"', f"path = {json.dumps(os.path.abspath(faults_plugin))}",
                  "[cache]", 'plugin = "paged"', "enable_prefix_caching = false", "check_invariants = true"]
    return "\n".join(lines) + "\n"


def attempt(port, rng, timeout, max_tokens=None):
    """One request; returns (kind, detail). kind: complete, cut (ended by the drain), refused
    (connect failed), unanswered (closed before any reply byte), truncated (closed mid-reply),
    corrupt (a reply that does not parse or is not of the shape asked), error (another status or
    error event; detail: its text) or hang."""
    route = rng.choice(["/v1/completions", "/v1/chat/completions"])
    stream = rng.random() < 0.6
    body = (completion_body if route == "/v1/completions" else chat_body)(rng, stream)
    if max_tokens:
        body["max_tokens"] = max_tokens
    try:
        ex = Exchange(port, timeout)
    except OSError as e:
        return "refused", str(e)
    except Hang as e:
        return "hang", str(e)
    try:
        try:
            ex.send(request_bytes("POST", route, json.dumps(body).encode()))
            status, _ = ex.read_head()
            if not stream or status != 200:
                reply = b"".join(ex.body_pieces())
                if status == 200:
                    why = check_whole(route, body, reply)
                    return ("corrupt", why) if why else ("complete", "")
                return error_reply(status, reply)
            payloads = list(sse_events(ex.body_pieces()))
        except Hang as e:
            return "hang", str(e)
        except (Truncated, OSError) as e:
            return ("truncated" if ex.received else "unanswered"), str(e)
        except ValueError as e:
            return "corrupt", str(e)
    finally:
        ex.close()
    return stream_outcome(body, payloads)


def error_reply(status, reply):
    try:
        err = json.loads(reply)["error"]
    except (ValueError, KeyError, TypeError):
        return "corrupt", f"status {status} with a body that is not an error: {reply[:200]!r}"
    text = f"{status} {err.get('code')}: {err.get('message')}"
    return ("cut" if status == 503 and err.get("code") == "server_shutting_down" else "error"), text


def stream_outcome(body, payloads):
    errors = []
    for p in payloads[:-1] if payloads and payloads[-1] == "[DONE]" else payloads:
        try:
            doc = json.loads(p)
        except ValueError:
            return "corrupt", f"event is not JSON: {p[:200]!r}"
        if "error" in doc:
            errors.append(doc["error"])
    if not payloads or payloads[-1] != "[DONE]":
        return "corrupt", "stream closed cleanly without [DONE]"
    if errors:
        e = errors[-1]
        text = f"stream error {e.get('code')}: {e.get('message')}"
        return ("cut" if e.get("code") == "server_shutting_down" else "error"), text
    why = check_stream(body, payloads)
    return ("corrupt", why) if why else ("complete", "")


class Load:
    """Client threads sending requests one after another until stopped; outcomes with the time
    each request began, so what happened before the signal is told from what happened after."""

    def __init__(self, port, clients, seed, timeout, long_share):
        self.port = port
        self.stop_event = threading.Event()
        self.lock = threading.Lock()
        self.results = []  # (start time, kind, detail)
        self.threads = [threading.Thread(target=self.client, args=(seed * 100 + i, timeout, long_share))
                        for i in range(clients)]
        for t in self.threads:
            t.start()

    def client(self, seed, timeout, long_share):
        rng = random.Random(seed)
        while not self.stop_event.is_set():
            t = time.monotonic()
            kind, detail = attempt(self.port, rng, timeout, 400 if rng.random() < long_share else None)
            with self.lock:
                self.results.append((t, kind, detail))
            if kind in ("refused", "unanswered"):
                time.sleep(0.05)  # the server is gone or going: do not spin

    def stop(self):
        self.stop_event.set()
        for t in self.threads:
            t.join()
        return self.results


def summarize(results):
    return ", ".join(f"{k}={v}" for k, v in sorted(collections.Counter(k for _, k, _ in results).items()))


class Chaos:
    def __init__(self, args, workdir):
        self.args = args
        self.workdir = workdir
        self.port = args.port
        self.violations = []

    def config(self, name, drain, faults=False):
        path = os.path.join(self.workdir, f"{name}.toml")
        with open(path, "w") as f:
            f.write(config_text(self.args.model, drain, self.args.faults_plugin if faults else None))
        return path

    def start(self, cfg):
        log = os.path.join(self.workdir, "server.log") if not self.args.log else self.args.log
        server = Server(self.args.server, ["--config", cfg, *self.args.server_args], self.port, log,
                        self.args.start_timeout)
        self.port = server.port  # later rounds restart on the same port
        return server

    def violate(self, rnd, what):
        self.violations.append(f"round {rnd}: {what}")
        print(f"  VIOLATION: {what}")

    def check_serving(self, rnd, server, count=6):
        """Whole, valid replies to a few requests, then the KV gauges back at idle."""
        rng = random.Random(rnd)
        bad = [(k, d) for k, d in (attempt(self.port, rng, self.args.timeout) for _ in range(count)) if k != "complete"]
        for k, d in bad:
            self.violate(rnd, f"after the round, a request was {k}: {d}")
        deadline = time.monotonic() + 10
        while True:
            m = metrics(self.port)
            idle = m.get("kv_cache_used_blocks") == 0 and m.get("num_requests_running") == 0
            if idle or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        if not idle:
            self.violate(rnd, f"KV blocks in use {m.get('kv_cache_used_blocks')}, running "
                              f"{m.get('num_requests_running')} once idle (a leak)")
        if not server.alive():
            self.violate(rnd, f"the server died (exit {server.proc.returncode})")

    def judge_signal(self, rnd, results, t_signal, sigkill):
        # A request may race the signal to the listener: refused or closed unanswered is a
        # connection error, allowed; a reply begun must end whole (SIGKILL: or be cut short).
        allowed = {"complete", "cut", "refused", "unanswered"} | ({"truncated"} if sigkill else set())
        for t, kind, detail in results:
            if kind not in allowed:
                when = "before" if t < t_signal else "after"
                self.violate(rnd, f"a request begun {when} the signal was {kind}: {detail}")

    def round_signal(self, rnd, sig, server):
        a = self.args
        drain = a.drain_timeouts[rnd % len(a.drain_timeouts)] if sig == signal.SIGTERM else a.drain_timeouts[-1]
        if server is None or server.drain != drain:
            if server is not None:
                server.stop()
            server = self.start(self.config(f"drain{drain}", drain))
            server.drain = drain
        rng = random.Random(a.seed + rnd)
        load = Load(self.port, a.clients, a.seed + rnd, a.timeout, a.long_share)
        time.sleep(rng.uniform(0.5, a.load_seconds))
        t_signal = time.monotonic()
        server.proc.send_signal(sig)
        limit = drain + a.exit_margin
        try:
            code = server.proc.wait(timeout=limit if sig == signal.SIGTERM else 10)
            exit_s = time.monotonic() - t_signal
        except subprocess.TimeoutExpired:
            code, exit_s = None, None
        results = load.stop()
        name = "SIGTERM" if sig == signal.SIGTERM else "SIGKILL"
        print(f"round {rnd}: {name} (drain_timeout {drain} s): requests {summarize(results)}; "
              f"exit {code} after {'-' if exit_s is None else f'{exit_s:.2f}'} s")
        if code is None:
            self.violate(rnd, f"the server did not exit within {limit} s of {name}")
            server.proc.kill()
            server.proc.wait()
        elif sig == signal.SIGTERM and code != 0:
            self.violate(rnd, f"exit status {code} after SIGTERM")
        self.judge_signal(rnd, results, t_signal, sig == signal.SIGKILL)
        # Restart on the same port; the next round reuses it.
        t = time.monotonic()
        try:
            server = self.start(self.config(f"drain{drain}", drain))
        except RuntimeError as e:
            self.violate(rnd, f"restart: {e}")
            return None
        server.drain = drain
        print(f"  restarted on port {self.port}, healthy after {time.monotonic() - t:.2f} s")
        self.check_serving(rnd, server)
        return server

    def round_faults(self, rnd, server):
        a = self.args
        if server is not None:
            server.stop()
        server = self.start(self.config("faults", a.drain_timeouts[-1], faults=True))
        load = Load(self.port, a.clients, a.seed + rnd, a.timeout, 0.0)
        time.sleep(a.load_seconds)
        results = load.stop()
        faulted = [d for _, k, d in results if k == "error" and any(m in d for m in FAULT_MESSAGES)]
        print(f"round {rnd}: scheduler faults: requests {summarize(results)}; faulted {len(faulted)}")
        for d in sorted(set(faulted)):
            print(f"  fault: {d[:160]}")
        for _, kind, detail in results:
            if kind != "complete" and not (kind == "error" and any(m in detail for m in FAULT_MESSAGES)):
                self.violate(rnd, f"a request was {kind}: {detail}")
        if not faulted:
            self.violate(rnd, "no request was faulted: the plugin's faults did not reach a client")
        self.check_serving(rnd, server)
        code = server.stop(a.drain_timeouts[-1] + a.exit_margin)
        if code != 0:
            self.violate(rnd, f"exit status {code} after SIGTERM")
        return None

    def run(self):
        a = self.args
        server = None
        for rnd in range(1, a.rounds + 1):
            kind = a.kinds[(rnd - 1) % len(a.kinds)]
            try:
                if kind == "faults":
                    server = self.round_faults(rnd, server)
                else:
                    server = self.round_signal(rnd, signal.SIGTERM if kind == "sigterm" else signal.SIGKILL, server)
            except (RuntimeError, OSError, Truncated, Hang) as e:
                self.violate(rnd, f"{kind}: {e}")
                server = None
        if server is not None:
            if not health(self.port):
                self.violations.append("/health is not 200 at the end")
            code = server.stop()
            if code != 0:
                self.violations.append(f"exit status {code} after the last SIGTERM")
        return self.violations


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--server", required=True, help="loom-server binary")
    ap.add_argument("--model", required=True, help="the model file to serve (the demo: tests/data/stories260K.gguf)")
    ap.add_argument("--faults-plugin", help="libloom-scheduler-faults.so (needed for the faults rounds)")
    ap.add_argument("--port", type=int, default=0, help="0: any free port (kept across restarts)")
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--kinds", default="sigterm,sigkill,faults", help="comma-separated, taken in turn")
    ap.add_argument("--drain-timeouts", default="0,3", help="drain_timeout values the SIGTERM rounds take in turn")
    ap.add_argument("--clients", type=int, default=6)
    ap.add_argument("--load-seconds", type=float, default=3.0, help="load before the signal (at most; random from 0.5)")
    ap.add_argument("--long-share", type=float, default=0.3, help="share of requests for 400 tokens, so some run into the signal")
    ap.add_argument("--exit-margin", type=float, default=10.0, help="seconds past drain_timeout the exit may take")
    ap.add_argument("--timeout", type=float, default=60.0, help="seconds without a reply byte that count as a hang")
    ap.add_argument("--start-timeout", type=float, default=60.0)
    ap.add_argument("--seed", type=int, default=19)
    ap.add_argument("--log", help="file for the servers' output (default: in a temporary directory, dropped)")
    ap.add_argument("server_args", nargs="*")
    args = ap.parse_args()
    args.kinds = [k.strip() for k in args.kinds.split(",") if k.strip()]
    if not args.kinds or any(k not in ("sigterm", "sigkill", "faults") for k in args.kinds):
        ap.error("--kinds takes sigterm, sigkill and faults")
    if "faults" in args.kinds and not args.faults_plugin:
        ap.error("the faults rounds need --faults-plugin")
    args.drain_timeouts = [int(x) for x in args.drain_timeouts.split(",")]

    with tempfile.TemporaryDirectory(prefix="loom-chaos-") as workdir:
        violations = Chaos(args, workdir).run()
    print(f"chaos: {args.rounds} rounds, " + (f"FAILED: {len(violations)} violations" if violations else "ok"))
    for v in violations[:30]:
        print(f"  {v}")
    return 1 if violations else 0


if __name__ == "__main__":
    sys.exit(main())
