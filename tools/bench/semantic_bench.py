#!/usr/bin/env python3
"""The semantic cache on a labelled set of question pairs (tools/bench/semantic.sh runs it).

For each threshold, a fresh loom-server with the `embedding` semantic cache at that threshold
(nothing carried over between thresholds): first every distinct `a` is asked once (a computed
answer, stored), then every `b`, each a chat request at temperature 0 that opts in. A `b` whose
answer comes back marked as a hit (header x-loom-semantic-cache: hit and the body's
"semantic_cache" field) is a hit; a hit is false when the pair is labelled different
(same = false) or when the text is not the answer stored for its own `a` (it hit another
question). Latency is the whole request (non-streaming), for hits and for computed answers (the
`a`s and the `b`s that missed). Writes results.json and prints one table row per threshold.
"""
import argparse, json, os, statistics, subprocess, sys, tempfile, time, urllib.request


def post(port, body):
    req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/chat/completions", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    t0 = time.perf_counter()
    with urllib.request.urlopen(req, timeout=600) as r:
        marker = r.headers.get("x-loom-semantic-cache", "")
        out = json.load(r)
    ms = (time.perf_counter() - t0) * 1000
    hit = marker == "hit" and out.get("semantic_cache", {}).get("hit") is True
    return hit, out["choices"][0]["message"]["content"], ms, marker


def ask(port, question, max_tokens):
    return post(port, {"messages": [{"role": "user", "content": question}], "temperature": 0,
                       "max_tokens": max_tokens, "semantic_cache": True})


def serve(args, port, config_text, log):
    cfg = tempfile.NamedTemporaryFile("w", suffix=".toml", delete=False)
    cfg.write(config_text)
    cfg.close()
    cmd = [os.path.join(args.build, "bin", "loom-server"), "-m", args.model, "--config", cfg.name,
           "--embedding-model", args.encoder, "--port", str(port)]
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
    for _ in range(600):
        if proc.poll() is not None:
            sys.exit(f"loom-server exited at start (see {log.name})")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as r:
                if r.status == 200:
                    return proc
        except OSError:
            pass
        time.sleep(0.5)
    proc.kill()
    sys.exit("loom-server did not become healthy")


def p50(xs):
    return statistics.median(xs) if xs else float("nan")


def run_threshold(args, pairs, threshold, port):
    log = open(os.path.join(args.out, f"server-{threshold}.log"), "w")
    config = f'[semantic_cache]\nplugin = "embedding"\nthreshold = {threshold}\nkey_terms = {args.key_terms}\n'
    proc = serve(args, port, config, log)
    try:
        stored, computed_ms, hit_ms, rows = {}, [], [], []
        for a in dict.fromkeys(p["a"] for p in pairs):
            hit, text, ms, _ = ask(port, a, args.max_tokens)
            stored[a] = text
            (hit_ms if hit else computed_ms).append(ms)
        for p in pairs:
            hit, text, ms, marker = ask(port, p["b"], args.max_tokens)
            (hit_ms if hit else computed_ms).append(ms)
            false = hit and (not p["same"] or text != stored[p["a"]])
            rows.append({**p, "hit": hit, "false_hit": false, "ms": ms, "marker": marker})
    finally:
        proc.terminate()
        proc.wait()
        log.close()
    same = [r for r in rows if r["same"]]
    hits = [r for r in rows if r["hit"]]
    result = {
        "threshold": threshold,
        "pairs": len(rows),
        "paraphrase_hits": sum(r["hit"] and not r["false_hit"] for r in same),
        "paraphrases": len(same),
        "hits": len(hits),
        "false_hits": sum(r["false_hit"] for r in rows),
        "hit_ms_p50": p50(hit_ms),
        "computed_ms_p50": p50(computed_ms),
        "hit_requests": len(hit_ms),
        "computed_requests": len(computed_ms),
        "rows": rows,
    }
    return result


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--encoder", required=True)
    ap.add_argument("--pairs", required=True, help="JSONL of labelled pairs")
    ap.add_argument("--out", required=True)
    ap.add_argument("--thresholds", default="0.90 0.93 0.96 0.98")
    ap.add_argument("--key-terms", default="true", choices=["true", "false"])
    ap.add_argument("--max-tokens", type=int, default=32)
    ap.add_argument("--port", type=int, default=18600)
    args = ap.parse_args()
    pairs = [json.loads(l) for l in open(args.pairs) if l.strip()]
    results = []
    print("| threshold | paraphrase hit rate | false hits / hits | hit latency p50 | computed latency p50 |")
    print("|---:|---:|---:|---:|---:|")
    for i, t in enumerate(args.thresholds.split()):
        r = run_threshold(args, pairs, float(t), args.port + i)
        results.append(r)
        share = f"{r['false_hits']}/{r['hits']}" + (f" ({100 * r['false_hits'] / r['hits']:.1f}%)" if r["hits"] else "")
        print(f"| {t} | {r['paraphrase_hits']}/{r['paraphrases']} ({100 * r['paraphrase_hits'] / r['paraphrases']:.0f}%) "
              f"| {share} | {r['hit_ms_p50']:.1f} ms ({r['hit_requests']}) "
              f"| {r['computed_ms_p50']:.1f} ms ({r['computed_requests']}) |", flush=True)
    json.dump(results, open(os.path.join(args.out, "results.json"), "w"), indent=1)


if __name__ == "__main__":
    main()
