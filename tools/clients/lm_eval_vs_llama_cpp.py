#!/usr/bin/env python3
"""lm-eval-harness against Loom, checked against llama.cpp on the same GGUF.

1. Serves MODEL with loom-server and runs lm-eval's `local-completions` on the multiple-choice
   task in tests/data/lm_eval/mc.jsonl (no download: the task file is written to a temporary
   folder, the tokenizer is the server's own through /tokenizer_info, /tokenize, /detokenize).
2. For every (context, choice) request lm-eval made, rebuilds the token ids it sent (its pair
   encoding: trailing spaces of the context move to the continuation, the continuation is the
   tail of the encoded whole) and checks, with the server's own echo scores, that they are the
   ids lm-eval scored.
3. Scores the same ids with llama.cpp (tools/peers/llama_loglikelihood.cpp, f32 KV) and compares
   per choice (|delta log-likelihood| <= --tolerance) and the accuracy.

llama-server is not the peer here: its /v1/completions refuses `echo`, which lm-eval's
loglikelihood requests need, so the llama.cpp side goes through libllama directly.

    tools/clients/lm_eval_vs_llama_cpp.py --model M.gguf --oracle ./llama-loglikelihood [--build build]

Needs lm-eval (PyPI `lm-eval`) and the oracle built against the peer (tools/peers/build-llama-cpp.sh).
Use an f32 GGUF (`loom-convert --input M.gguf --dtype f32`) so both engines compute in f32.
"""
import argparse
import ast
import glob
import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
TASK = os.path.join(ROOT, "tests", "data", "lm_eval", "mc.jsonl")


def post(port, path, body):
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=600) as r:
        return json.load(r)


def encode(port, text):
    return post(port, "/tokenize", {"prompt": text, "add_special_tokens": False})["tokens"]


def pair_ids(port, context, continuation):
    """The ids lm-eval sends for (context, continuation), and the context's length in them."""
    spaces = len(context) - len(context.rstrip())
    if spaces:
        continuation = context[-spaces:] + continuation
        context = context[:-spaces]
    whole = encode(port, context + continuation)
    ctx = encode(port, context)
    return ctx + whole[len(ctx):], len(ctx)


def loom_score(port, ids, ctxlen):
    r = post(port, "/v1/completions", {"model": "m", "prompt": ids, "max_tokens": 1, "temperature": 0.0,
                                        "logprobs": 1, "echo": True})
    lp = r["choices"][0]["logprobs"]["token_logprobs"]
    return sum(lp[ctxlen:len(ids)])


def loglikelihood_of(resp):
    """A choice's log-likelihood from a logged response: [[ll, is_greedy]], or that as text."""
    while isinstance(resp, list):
        resp = resp[0]
    if isinstance(resp, str):
        resp = ast.literal_eval(resp)
        return float(resp[0] if isinstance(resp, (list, tuple)) else resp)
    return float(resp)


def target_of(sample):
    """The right choice's index (logged as a number, or as its text)."""
    t = sample["target"]
    return int(t) if not isinstance(t, str) or t.lstrip("-").isdigit() else sample["doc"]["choices"].index(t)


def request_args(arguments):
    """(context, continuation) per choice: a list of pairs, or {"gen_args_i": {"arg_0", "arg_1"}}."""
    if isinstance(arguments, dict):
        keys = sorted(arguments, key=lambda k: int(k.rsplit("_", 1)[1]))
        return [(arguments[k]["arg_0"], arguments[k]["arg_1"]) for k in keys]
    return [tuple(x) for x in arguments]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True)
    ap.add_argument("--oracle", required=True, help="llama-loglikelihood (tools/peers/llama_loglikelihood.cpp)")
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--port", type=int, default=18660)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--tolerance", type=float, default=1e-3)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        cfg = os.path.join(tmp, "loom.toml")
        with open(cfg, "w") as f:
            f.write(f'[model]\npath = "{os.path.abspath(a.model)}"\nname = "m"\n'
                    f'[server]\nhost = "127.0.0.1"\nport = {a.port}\n[runtime]\nthreads = {a.threads}\n'
                    '[logging]\nlevel = "warn"\n[cache]\nplugin = "paged"\nkv_dtype = "f32"\n')
        with open(os.path.join(tmp, "loom_mc.yaml"), "w") as f:
            f.write("task: loom_mc\ndataset_path: json\ndataset_kwargs:\n  data_files:\n"
                    f"    test: {TASK}\ntest_split: test\noutput_type: multiple_choice\n"
                    'doc_to_text: "{{question}}"\ndoc_to_choice: choices\ndoc_to_target: answer\n'
                    "metric_list:\n  - metric: acc\n")
        log = open(os.path.join(tmp, "server.log"), "w")
        server = subprocess.Popen([os.path.join(a.build, "bin", "loom-server"), "--config", cfg], stdout=log,
                                  stderr=subprocess.STDOUT)
        try:
            for _ in range(600):
                try:
                    urllib.request.urlopen(f"http://127.0.0.1:{a.port}/health", timeout=5)
                    break
                except Exception:  # noqa: BLE001 - not up yet
                    if server.poll() is not None:
                        sys.exit("lm_eval_vs_llama_cpp: loom-server exited; see its log")
                    time.sleep(0.2)
            out = os.path.join(tmp, "out")
            subprocess.run([sys.executable, "-m", "lm_eval", "--model", "local-completions", "--model_args",
                            f"model=m,base_url=http://127.0.0.1:{a.port}/v1/completions,tokenizer_backend=remote,"
                            "num_concurrent=1,max_retries=1", "--tasks", "loom_mc", "--include_path", tmp,
                            "--log_samples", "--output_path", out], check=True, stdout=subprocess.DEVNULL)
            results = [json.load(open(p)) for p in glob.glob(os.path.join(out, "**", "results_*.json"), recursive=True)]
            lm_eval_acc = results[0]["results"]["loom_mc"]["acc,none"] if results else float("nan")
            samples = [json.loads(line) for path in glob.glob(os.path.join(out, "**", "samples_loom_mc_*.jsonl"),
                                                               recursive=True) for line in open(path)]
            if not samples:
                sys.exit("lm_eval_vs_llama_cpp: lm-eval wrote no samples")
            requests, loom_ll, loom_right = [], [], 0
            for s in samples:
                lls = [loglikelihood_of(r) for r in s["resps"]]
                loom_ll.append(lls)
                loom_right += int(max(range(len(lls)), key=lls.__getitem__) == target_of(s))
                for (context, continuation), ll in zip(request_args(s["arguments"]), lls):
                    ids, ctxlen = pair_ids(a.port, context, continuation)
                    own = loom_score(a.port, ids, ctxlen)
                    if abs(own - ll) > 1e-6:
                        sys.exit(f"lm_eval_vs_llama_cpp: rebuilt ids score {own}, lm-eval got {ll}: not its ids")
                    requests.append((ctxlen, ids))
        finally:
            server.terminate()
            server.wait(timeout=60)
        req_path = os.path.join(tmp, "requests.txt")
        with open(req_path, "w") as f:
            for ctxlen, ids in requests:
                f.write(f"{ctxlen} {' '.join(map(str, ids))}\n")
        lines = subprocess.run([a.oracle, a.model, req_path, str(a.threads)], check=True, capture_output=True,
                               text=True).stdout.split("\n")
        llama = [float(l.split()[0]) for l in lines if l.strip()]
    worst, k, llama_right = 0.0, 0, 0
    for s, lls in zip(samples, loom_ll):
        peer = llama[k:k + len(lls)]
        k += len(lls)
        worst = max(worst, max(abs(x - y) for x, y in zip(lls, peer)))
        llama_right += int(max(range(len(peer)), key=peer.__getitem__) == target_of(s))
    n = len(samples)
    print(f"model {os.path.basename(a.model)}: {n} questions, {len(requests)} scored choices")
    print(f"accuracy: Loom {loom_right}/{n} = {loom_right / n:.4f}, llama.cpp {llama_right}/{n} = {llama_right / n:.4f}")
    print(f"lm-eval's own acc against Loom: {lm_eval_acc:.4f}")
    print(f"max |delta log-likelihood| per choice: {worst:.3g} (tolerance {a.tolerance})")
    if worst > a.tolerance or loom_right != llama_right or abs(lm_eval_acc - loom_right / n) > 1e-9:
        sys.exit(1)


if __name__ == "__main__":
    main()
