#!/usr/bin/env python3
"""Speculative decoding, Loom against llama.cpp's llama-server: the same target/draft pair, the
same prompts, the same client, servers started fresh and measured in alternating order.

Two phases, each repeated ROUNDS times (the report takes medians over rounds):
  batch1       one request at a time; per workload and speculation method, decode tokens/s
               (tokens after the first over the time after the first token, summed over the
               prompts), acceptance and mean accepted length.
  concurrency  CLIENTS closed-loop clients (1, 4, 16 ...) on the grounded workload; output
               tokens/s over the run's wall time, speculation on vs off.

Workloads (chat endpoint, greedy, each engine applying the model's own chat template):
  chat      open-ended requests (the draft model's case);
  grounded  input-grounded requests: rewrite, copy-with-edits and extraction over given stories,
            and edits of a given piece of code (the n-gram/suffix/lookup case).

Every Loom run with speculation must answer exactly what Loom without it answers (greedy,
byte for byte); a difference stops the benchmark. For llama.cpp the number of identical
answers is recorded. Writes one JSON file per (phase, round, engine, method) under --out.

    speculative_bench.py --build BUILD --target F16.gguf --draft Q4_1.gguf [--llama-bin DIR] --out DIR
"""
import argparse
import http.client
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.request

# ---------------------------------------------------------------- workloads

CHAT = [
    "Write a short story about a cat who learns to fly.",
    "Explain how a rainbow forms, in simple words.",
    "Give me five tips for staying focused while studying.",
    "What are the main differences between a lake and a sea?",
    "Describe a busy morning at a train station.",
    "Write a friendly letter inviting a neighbour to a garden party.",
    "Why do leaves change colour in autumn?",
    "List the steps to plant a tomato seedling.",
]

# Edits that copy most of their input, as rewriting, extraction and code-editing requests do.
STORY_TASKS = [
    "Rewrite the following story, changing the name {name} to Alex everywhere. Keep every other word the same.\n\n{text}",
    "Copy the following story exactly, then add one sentence at the end.\n\n{text}",
    "Return every sentence of the following story that mentions {name}, word for word, one per line.\n\n{text}",
    "Rewrite the following story in the past tense where needed, changing as little as possible.\n\n{text}",
]
CODE_TASKS = [
    "Rename the function `{fn}` to `{fn}_checked` in the following code and return the whole file unchanged otherwise.\n\n```python\n{code}\n```",
    "Add a one-line docstring to the function `{fn}` in the following code and return the complete code.\n\n```python\n{code}\n```",
]


def grounded_prompts(root):
    with open(os.path.join(root, "tests/data/heldout_stories.txt")) as f:
        stories = [s.strip() for s in f.read().split("\n\n") if s.strip()]
    prompts = []
    for i, story in enumerate(stories):
        names = re.findall(r"\b(?:named|called) ([A-Z][a-z]+)", story) or re.findall(r"\b([A-Z][a-z]{2,})\b", story)
        prompts.append(STORY_TASKS[i % len(STORY_TASKS)].format(name=names[0] if names else "the dog", text=story))
    code = FUNCTION_SOURCE.strip()
    for task in CODE_TASKS:
        prompts.append(task.format(fn="median_of", code=code))
    return prompts


# A small function of this project's own (the benchmark helper below), edited by the code tasks.
FUNCTION_SOURCE = '''
def median_of(values):
    values = sorted(v for v in values if v is not None)
    if not values:
        return float("nan")
    middle = len(values) // 2
    if len(values) % 2 == 1:
        return values[middle]
    return (values[middle - 1] + values[middle]) / 2
'''

# ---------------------------------------------------------------- engines


class Server:
    """One server process on loopback; stopped on exit."""

    def __init__(self, argv, port, log_path):
        self.port = port
        self.log_path = log_path
        self.log = open(log_path, "w")
        self.proc = subprocess.Popen(argv, stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.time() + 180
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise SystemExit(f"speculative_bench: server exited; see {log_path}:\n" + tail(log_path))
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/models", timeout=2) as r:
                    if r.status == 200:
                        return
            except OSError:
                pass
            time.sleep(0.2)
        self.stop()
        raise SystemExit(f"speculative_bench: no answer on port {port}; see {log_path}")

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()


def tail(path, n=20):
    with open(path, errors="replace") as f:
        return "".join(f.readlines()[-n:])


def loom_argv(a, method, port, slots):
    """loom-server as configured by default (continuous batching, paged KV, prefix caching; it
    needs no slot count), with the method's --speculative-config."""
    del slots
    argv = [os.path.join(a.build, "bin/loom-server"), a.target, "--host", "127.0.0.1", "--port", str(port),
            "-t", str(a.threads), "--log-level", "warn"]
    spec = {"off": None,
            "draft": {"method": "draft_model", "model": a.draft, "num_speculative_tokens": a.k},
            "ngram": {"method": "ngram", "num_speculative_tokens": a.k},
            "suffix": {"method": "suffix", "num_speculative_tokens": a.k}}[method]
    if spec:
        argv += ["--speculative-config", json.dumps(spec)]
    return argv


def llama_argv(a, method, port, slots):
    """llama-server with `slots` slots (-np) of 2048 tokens each, continuous batching; its own
    defaults for the n-gram methods (ngram-cache drafts up to 8 tokens, ngram-simple matches 12
    tokens and drafts up to 48), k tokens for the draft model."""
    argv = [os.path.join(a.llama_bin, "llama-server"), "-m", a.target, "--host", "127.0.0.1", "--port", str(port),
            "-t", str(a.threads), "-tb", str(a.threads), "-np", str(slots), "-c", str(max(slots, 2) * 2048), "-cb",
            "--no-webui",
            # Weight repacking off: with it, this build's AMX path crashes (SIGSEGV in
            # ggml_backend_amx_mul_mat) on the Q4_1 draft; it does not change the f16 target's speed.
            "--no-repack"]
    argv += {"off": [],
             "draft": ["-md", a.draft, "--spec-type", "draft-simple", "--spec-draft-n-max", str(a.k),
                       "-td", str(a.threads)],
             "lookup": ["--spec-type", "ngram-cache"],
             "ngram-simple": ["--spec-type", "ngram-simple"]}[method]
    return argv


ENGINES = {"loom": loom_argv, "llama": llama_argv}
# Methods per engine; "off" first so the others are checked against it.
METHODS = {"loom": ["off", "draft", "ngram", "suffix"], "llama": ["off", "draft", "lookup", "ngram-simple"]}
# Which methods run on which workload: a draft model on both, the input-copying methods on the
# grounded one only (where the issue measures them).
ON_WORKLOAD = {"chat": {"off", "draft"}, "grounded": {"off", "draft", "ngram", "suffix", "lookup", "ngram-simple"}}

# ---------------------------------------------------------------- client


def chat(port, prompt, max_tokens, timeout=600):
    """One streamed greedy chat request: returns text, completion tokens, send/first/end times."""
    body = {"messages": [{"role": "user", "content": prompt}], "max_tokens": max_tokens, "temperature": 0,
            "stream": True, "stream_options": {"include_usage": True}}
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    t_send = time.perf_counter()
    conn.request("POST", "/v1/chat/completions", json.dumps(body), {"Content-Type": "application/json"})
    resp = conn.getresponse()
    if resp.status != 200:
        raise SystemExit(f"speculative_bench: HTTP {resp.status}: {resp.read()[:300]!r}")
    text, usage, t_first = [], None, None
    for raw in resp:
        line = raw.decode().strip()
        if not line.startswith("data:"):
            continue
        data = line[5:].strip()
        if data == "[DONE]":
            break
        event = json.loads(data)
        if event.get("usage"):
            usage = event["usage"]
        for choice in event.get("choices", []):
            piece = (choice.get("delta") or {}).get("content")
            if piece:
                t_first = t_first or time.perf_counter()
                text.append(piece)
    t_end = time.perf_counter()
    conn.close()
    if usage is None:
        raise SystemExit("speculative_bench: the stream carried no usage (stream_options.include_usage)")
    return {"text": "".join(text), "tokens": usage["completion_tokens"], "t_send": t_send,
            "t_first": t_first or t_end, "t_end": t_end}


def loom_spec_counters(port):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
        text = r.read().decode()
    out = {}
    for key in ("num_drafts", "num_draft_tokens", "num_accepted_tokens"):
        m = re.search(rf"^loom:spec_decode_{key}_total(?:{{[^}}]*}})? ([0-9.e+]+)$", text, re.M)
        out[key] = float(m.group(1)) if m else 0.0
    return out


LLAMA_ACCEPT = re.compile(r"draft acceptance = [0-9.]+ \(\s*(\d+) accepted /\s*(\d+) generated\), mean len =\s*([0-9.]+)")


class Counters:
    """Draft/accepted counts over a span of requests, from Loom's /metrics or llama-server's log."""

    def __init__(self, engine, server):
        self.engine, self.server = engine, server
        self.start = self.read()

    def read(self):
        if self.engine == "loom":
            return loom_spec_counters(self.server.port)
        self.server.log.flush()
        drafts = accepted = steps = 0.0
        with open(self.server.log_path, errors="replace") as f:
            for m in LLAMA_ACCEPT.finditer(f.read()):
                a, g, mean = int(m.group(1)), int(m.group(2)), float(m.group(3))
                accepted += a
                drafts += g
                steps += a / (mean - 1) if mean > 1 else 0  # verification steps, from mean = 1 + a/steps
        return {"num_draft_tokens": drafts, "num_accepted_tokens": accepted, "num_drafts": steps}

    def delta(self):
        end = self.read()
        return {k: end[k] - self.start[k] for k in end}


# ---------------------------------------------------------------- phases


def run_batch1(a, engine, method, server, workloads):
    out = {}
    for name, prompts in workloads.items():
        if method not in ON_WORKLOAD[name]:
            continue
        counters = Counters(engine, server)
        records = [chat(server.port, p, a.max_tokens[name]) for p in prompts]
        time.sleep(0.3 if engine == "llama" else 0)  # the slot's statistics are logged after the reply
        out[name] = {"records": records, "spec": counters.delta()}
    return out


def run_clients(a, engine, server, prompts, clients):
    """CLIENTS closed-loop clients, each sending its share of the requests one after another."""
    n = max(a.min_requests, clients * a.requests_per_client)
    order = [prompts[i % len(prompts)] for i in range(n)]
    records = [None] * n
    next_index = [0]
    lock = threading.Lock()

    def worker():
        while True:
            with lock:
                i = next_index[0]
                next_index[0] += 1
            if i >= n:
                return
            records[i] = chat(server.port, order[i], a.max_tokens["grounded"])

    counters = Counters(engine, server)
    t0 = time.perf_counter()
    threads = [threading.Thread(target=worker) for _ in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - t0
    time.sleep(0.3 if engine == "llama" else 0)
    return {"clients": clients, "wall_s": wall, "records": records, "spec": counters.delta(),
            "output_tok_s": sum(r["tokens"] for r in records) / wall}


def check_same(engine, method, got, ref, where):
    """Loom's greedy answers with speculation must equal those without; llama.cpp's are counted."""
    same = sum(1 for g, r in zip(got, ref) if g["text"] == r["text"])
    if engine == "loom" and same != len(ref):
        bad = next(i for i, (g, r) in enumerate(zip(got, ref)) if g["text"] != r["text"])
        raise SystemExit(f"speculative_bench: Loom {method} changed greedy answer {bad} in {where}:\n"
                         f"  off: {ref[bad]['text'][:200]!r}\n  on:  {got[bad]['text'][:200]!r}")
    return same


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--build", required=True)
    p.add_argument("--root", default=os.path.abspath(os.path.join(os.path.dirname(__file__), "../..")))
    p.add_argument("--target", required=True)
    p.add_argument("--draft", required=True)
    p.add_argument("--llama-bin", default="")
    p.add_argument("--out", required=True)
    p.add_argument("--threads", type=int, default=os.cpu_count())
    p.add_argument("--k", type=int, default=4)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--clients", default="1 4 16")
    p.add_argument("--requests-per-client", type=int, default=2)
    p.add_argument("--min-requests", type=int, default=8, help="requests per concurrency run at least")
    p.add_argument("--chat-tokens", type=int, default=128)
    p.add_argument("--grounded-tokens", type=int, default=256)
    p.add_argument("--phases", default="batch1 concurrency")
    p.add_argument("--port", type=int, default=18420)
    a = p.parse_args()
    a.clients = [int(c) for c in a.clients.split()]
    a.max_tokens = {"chat": a.chat_tokens, "grounded": a.grounded_tokens}
    os.makedirs(a.out, exist_ok=True)
    engines = ["loom"] + (["llama"] if a.llama_bin else [])
    workloads = {"chat": CHAT, "grounded": grounded_prompts(a.root)}
    phases = a.phases.split()
    conc_methods = {"loom": ["off", "draft", "ngram"], "llama": ["off", "draft", "lookup"]}

    for rnd in range(a.rounds):
        order = engines if rnd % 2 == 0 else engines[::-1]
        if "batch1" in phases:
            ref = {}
            for i in range(len(METHODS["loom"])):
                for engine in order:
                    method = METHODS[engine][i]
                    tag = f"batch1-r{rnd}-{engine}-{method}"
                    server = Server(ENGINES[engine](a, method, a.port, 1), a.port, os.path.join(a.out, tag + ".log"))
                    try:
                        chat(a.port, workloads["chat"][0], 8)  # warm-up, not measured
                        result = run_batch1(a, engine, method, server, workloads)
                    finally:
                        server.stop()
                    for name, r in result.items():
                        if method == "off":
                            ref[(engine, name)] = r["records"]
                        else:
                            r["same_as_off"] = check_same(engine, method, r["records"], ref[(engine, name)], tag + "/" + name)
                    with open(os.path.join(a.out, tag + ".json"), "w") as f:
                        json.dump({"phase": "batch1", "round": rnd, "engine": engine, "method": method,
                                   "k": a.k, "threads": a.threads, "workloads": result}, f)
                    print(f"{tag}: " + ", ".join(f"{n} {summary_line(r)}" for n, r in result.items()), flush=True)
        if "concurrency" in phases:
            # A fresh server per client count, llama-server with that many slots.
            for clients in a.clients:
                ref = {}
                for i in range(3):
                    for engine in order:
                        method = conc_methods[engine][i]
                        tag = f"conc-r{rnd}-c{clients}-{engine}-{method}"
                        server = Server(ENGINES[engine](a, method, a.port, clients), a.port,
                                        os.path.join(a.out, tag + ".log"))
                        try:
                            chat(a.port, workloads["chat"][0], 8)
                            run = run_clients(a, engine, server, workloads["grounded"], clients)
                        finally:
                            server.stop()
                        if method == "off":
                            ref[engine] = run["records"]
                        else:
                            run["same_as_off"] = check_same(engine, method, run["records"], ref[engine], tag)
                        with open(os.path.join(a.out, tag + ".json"), "w") as f:
                            json.dump({"phase": "concurrency", "round": rnd, "engine": engine, "method": method,
                                       "k": a.k, "threads": a.threads, "runs": [run]}, f)
                        s = run["spec"]
                        acc = s["num_accepted_tokens"] / s["num_draft_tokens"] if s["num_draft_tokens"] else 0
                        print(f"{tag}: {run['output_tok_s']:.1f} tok/s (acc {acc:.2f})", flush=True)


def summary_line(r):
    rec = r["records"]
    tokens = sum(x["tokens"] - 1 for x in rec)
    decode = sum(x["t_end"] - x["t_first"] for x in rec)
    s = r["spec"]
    acc = s["num_accepted_tokens"] / s["num_draft_tokens"] if s["num_draft_tokens"] else 0
    return f"{tokens / decode:.1f} tok/s (acc {acc:.2f})"


if __name__ == "__main__":
    main()
