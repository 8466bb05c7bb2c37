#!/usr/bin/env python3
"""Grammar overhead per decode step: the time Loom spends masking logits with a JSON-schema
grammar and advancing its state, in ms per step and as a share of the step, at batch 1 and 16.

The figures come from the server's own counters (loom:grammar_seconds_total over
loom:grammar_step_seconds_total, both measured on the engine thread), so they are a ratio of two
times taken in the same steps and hold on a loaded machine better than end-to-end timings. The
same requests without the grammar are run too, and their step time is printed beside, so the
whole cost (mask, state and the extra tokens a grammar forces) can be read off as well.

    tools/bench/grammar_overhead.py [--build BUILD_DIR] [--model GGUF] [--requests 32] [--port 18650]

Default model: BUILD_DIR/models/SmolLM2-135M-Instruct.Q4_1.gguf (tools/fetch-model.sh), else the
demo model. Prints a markdown table; no peer is measured (the figure is Loom's own overhead).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))

SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "maxLength": 12},
        "age": {"type": "integer", "minimum": 0, "maximum": 120},
        "city": {"type": "string", "maxLength": 16},
        "tags": {"type": "array", "items": {"type": "string", "maxLength": 8}, "maxItems": 3},
    },
    "required": ["name", "age", "city"],
    "additionalProperties": False,
}


def post(port, body, timeout=600):
    req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/chat/completions", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=timeout) as r:
        return json.load(r)


def metrics(port):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=60) as r:
        out = {}
        for line in r.read().decode().splitlines():
            if line.startswith("#") or " " not in line:
                continue
            name, value = line.rsplit(" ", 1)
            out[name.split("{")[0]] = float(value)
        return out


def run(port, concurrency, requests, grammar):
    """Sends `requests` chat requests, `concurrency` at a time; returns the counters' deltas."""
    before = metrics(port)
    lock = threading.Lock()
    next_i = [0]
    errors = []

    def worker():
        while True:
            with lock:
                i = next_i[0]
                next_i[0] += 1
            if i >= requests:
                return
            body = {"messages": [{"role": "user", "content": f"Describe person number {i} as JSON."}],
                    "max_tokens": 96, "temperature": 1.0, "seed": 1000 + i}
            if grammar:
                body["response_format"] = {"type": "json_schema",
                                           "json_schema": {"name": "person", "schema": SCHEMA, "strict": True}}
            else:
                body["ignore_eos"] = True  # comparable lengths without the grammar's end
            try:
                post(port, body)
            except Exception as e:  # noqa: BLE001 - reported below
                errors.append(str(e))

    threads = [threading.Thread(target=worker) for _ in range(concurrency)]
    start = time.time()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.time() - start
    after = metrics(port)
    if errors:
        sys.exit(f"grammar_overhead: {len(errors)} requests failed, first: {errors[0]}")
    d = {k: after.get(k, 0.0) - before.get(k, 0.0) for k in after}
    d["wall"] = wall
    return d


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--model")
    ap.add_argument("--requests", type=int, default=32)
    ap.add_argument("--port", type=int, default=18650)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    a = ap.parse_args()
    a.build = os.path.abspath(a.build)  # the config is written elsewhere; its paths must not be relative
    model = os.path.abspath(a.model) if a.model else os.path.join(a.build, "models", "SmolLM2-135M-Instruct.Q4_1.gguf")
    if not os.path.exists(model):
        model = os.path.join(ROOT, "tests", "data", "stories260K.gguf")
    with tempfile.TemporaryDirectory() as tmp:
        cfg = os.path.join(tmp, "grammar.toml")
        with open(cfg, "w") as f:
            f.write(f'[model]\npath = "{model}"\nname = "m"\n[server]\nhost = "127.0.0.1"\nport = {a.port}\n'
                    f'[runtime]\nthreads = {a.threads}\n[logging]\nlevel = "warn"\n'
                    '[scheduler]\nplugin = "continuous"\nmax_num_seqs = 16\n'
                    '[cache]\nplugin = "paged"\nkv_memory = "512MiB"\n')
        log = open(os.path.join(tmp, "server.log"), "w")
        server = subprocess.Popen([os.path.join(a.build, "bin", "loom-server"), "--config", cfg], stdout=log,
                                  stderr=subprocess.STDOUT)
        try:
            for _ in range(600):
                try:
                    metrics(a.port)
                    break
                except Exception:  # noqa: BLE001 - not up yet
                    if server.poll() is not None:
                        log.flush()
                        with open(log.name) as f:
                            sys.stderr.write(f.read()[-4000:])
                        sys.exit(f"grammar_overhead: the server exited with status {server.returncode}")
                    time.sleep(0.2)
            post(a.port, {"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 4})  # warm-up
            print(f"model: {os.path.basename(model)}, {a.requests} requests of up to 96 tokens per row, "
                  f"{a.threads} threads\n")
            print("| batch | grammar steps | grammar ms / step | step ms with grammar | grammar % of step "
                  "| step ms without grammar |")
            print("|---|---|---|---|---|---|")
            for c in (1, 16):
                g = run(a.port, c, a.requests, True)
                plain = run(a.port, c, a.requests, False)
                steps = g["loom:grammar_steps_total"]
                if steps <= 0:
                    sys.exit("grammar_overhead: no step sampled under a grammar")
                gms = 1e3 * g["loom:grammar_seconds_total"] / steps
                sms = 1e3 * g["loom:grammar_step_seconds_total"] / steps
                pms = 1e3 * plain["loom:engine_step_seconds_total"] / max(1.0, plain["loom:engine_steps_total"])
                print(f"| {c} | {int(steps)} | {gms:.3f} | {sms:.2f} | {100 * gms / sms:.1f}% | {pms:.2f} |")
        finally:
            server.terminate()
            server.wait(timeout=60)


if __name__ == "__main__":
    main()
