#!/usr/bin/env python3
"""Turns tools/bench/compare.sh's JSON files into docs/benchmarks.md's results section (tables
of Loom, llama.cpp and the ratio Loom/llama.cpp) and PNG plots under docs/benchmarks/.

  report.py RESULTS_DIR DOCS_DIR LOOM_BENCH SERVE_THREADS
Everything between the results markers in benchmarks.md is rewritten; the rest is kept.
"""
import datetime
import glob
import json
import os
import re
import subprocess
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

BEGIN, END = "<!-- results:begin -->", "<!-- results:end -->"


def load(path):
    with open(path) as f:
        return json.load(f)


def machine():
    cpu = "unknown CPU"
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return cpu, os.cpu_count()


def commit(root):
    try:
        rev = subprocess.check_output(["git", "-C", root, "rev-parse", "--short", "HEAD"], text=True).strip()
        dirty = subprocess.call(["git", "-C", root, "diff", "--quiet", "HEAD"]) != 0
        return rev + (" (with uncommitted changes)" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def ratio(a, b):
    return f"{a / b:.2f}x" if a and b else "n/a"


def model_section(res):
    rows, bandwidth = [], None
    for lf in sorted(glob.glob(f"{res}/model-loom-*.json")):
        tag = os.path.basename(lf)[len("model-loom-"):-len(".json")]
        pf = f"{res}/model-llama-{tag}.json"
        if not os.path.exists(pf):
            continue
        loom, peer = load(lf), load(pf)
        bandwidth = bandwidth or loom.get("stream_read_bytes_per_s")
        model, _, threads = tag.rpartition("-t")
        for t in loom["tests"]:
            p = peer.get(t["test"])
            if not p:
                continue
            bw = t.get("effective_bytes_per_s")
            rows.append((model, threads, t["test"], t["avg_ts"], t["stddev_ts"], p["mean"], p["std"],
                         f"{bw / 1e9:.1f}" if bw else ""))
    lines = ["| model | threads | test | Loom tokens/s | llama.cpp tokens/s | Loom / llama.cpp | Loom tg GB/s |",
             "|---|---|---|---|---|---|---|"]
    for m, th, test, lm, ls, pm, ps, bw in rows:
        lines.append(f"| {m} | {th} | {test} | {lm:.1f} ± {ls:.1f} | {pm:.1f} ± {ps:.1f} | {ratio(lm, pm)} | {bw} |")
    return lines, bandwidth


def serve_summary(res, engine, key):
    path = f"{res}/serve-{engine}-{key}.json"
    return load(path)["summary"] if os.path.exists(path) else None


def serving_section(res, docs):
    lines = ["| concurrency | engine | req/s | output tok/s | TTFT p50 / p99 ms | TPOT p50 / p99 ms | ITL p50 ms | failed |",
             "|---|---|---|---|---|---|---|---|"]
    conc, tput = [1, 8, 32], {"loom": [], "llama": []}
    names = {"loom": "Loom", "llama": "llama.cpp"}
    for c in conc:
        for eng in ("loom", "llama"):
            s = serve_summary(res, eng, f"c{c}")
            tput[eng].append(s["output_throughput"] if s else 0)
            if s:
                lines.append(f"| {c} | {names[eng]} | {s['request_throughput']:.2f} | {s['output_throughput']:.1f} | "
                             f"{s['ttft_ms']['median']:.0f} / {s['ttft_ms']['p99']:.0f} | "
                             f"{s['tpot_ms']['median']:.1f} / {s['tpot_ms']['p99']:.1f} | "
                             f"{s['itl_ms']['median']:.1f} | {s['failed']} |")
        lo, ll = tput["loom"][-1], tput["llama"][-1]
        lines.append(f"| {c} | **Loom / llama.cpp** | | **{ratio(lo, ll)}** | | | | |")
    os.makedirs(f"{docs}/benchmarks", exist_ok=True)
    plt.figure(figsize=(5, 3.5))
    for eng in ("loom", "llama"):
        plt.plot(conc, tput[eng], marker="o", label=names[eng])
    plt.xscale("log", base=2)
    plt.xlabel("concurrent requests")
    plt.ylabel("output tokens/s")
    plt.title("Throughput vs concurrency (512 in / 128 out)")
    plt.legend()
    plt.tight_layout()
    plt.savefig(f"{docs}/benchmarks/throughput_vs_concurrency.png", dpi=110)
    plt.close()

    rates = sorted({float(m.group(1)) for f in glob.glob(f"{res}/serve-loom-r*.json")
                    for m in [re.search(r"-r([0-9.]+)\.json$", f)] if m})
    rate_lines = ["| request rate /s | engine | TTFT p50 / p99 ms | TPOT p50 / p99 ms | E2E p50 ms | output tok/s |",
                  "|---|---|---|---|---|---|"]
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.5))
    for eng in ("loom", "llama"):
        pts = []
        for r in rates:
            key = f"r{r:g}"
            s = serve_summary(res, eng, key)
            if not s:
                continue
            pts.append((r, s))
            rate_lines.append(f"| {r:g} | {names[eng]} | {s['ttft_ms']['median']:.0f} / {s['ttft_ms']['p99']:.0f} | "
                              f"{s['tpot_ms']['median']:.1f} / {s['tpot_ms']['p99']:.1f} | "
                              f"{s['e2el_ms']['median']:.0f} | {s['output_throughput']:.1f} |")
        for ax, metric in zip(axes, ("ttft_ms", "tpot_ms")):
            for q, style in (("median", "-"), ("p99", "--")):
                ax.plot([r for r, _ in pts], [s[metric][q] for _, s in pts], style, marker="o",
                        label=f"{names[eng]} {'p50' if q == 'median' else 'p99'}")
    for ax, title in zip(axes, ("TTFT (ms)", "TPOT (ms)")):
        ax.set_xlabel("request rate (requests/s)")
        ax.set_title(title)
        ax.set_yscale("log")
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(f"{docs}/benchmarks/latency_vs_request_rate.png", dpi=110)
    plt.close(fig)
    return lines, rate_lines


def main():
    res, docs, loom_bench, serve_threads = sys.argv[1:5]
    root = os.path.dirname(os.path.abspath(docs))
    cpu, cores = machine()
    model_lines, bw = model_section(res)
    serve_lines, rate_lines = serving_section(res, docs)
    peer = next((load(f)["engine"] for f in glob.glob(f"{res}/model-llama-*.json")), "llama.cpp")
    body = [BEGIN, "", "## Results: Loom and llama.cpp side by side", "",
            f"Produced by `tools/bench/compare.sh` on {datetime.date.today().isoformat()}, commit {commit(root)}.",
            f"Machine: {cpu}, {cores} cores"
            + (f", measured read bandwidth {bw / 1e9:.1f} GB/s (loom-bench model's STREAM-style test)." if bw else "."),
            f"Peer: {peer}, built from PyPI source for this CPU (GGML_NATIVE). Models: random weights in real shapes made "
            "by `loom-convert --random` with the Llama 2 tokenizer; both engines read the same files.",
            "The machine is shared and noisy: absolute numbers drift between runs, the ratios measured in one run hold better.",
            "", "### Model level (in-process, like llama-bench)", "",
            "pp = one N-token prefill, tg = N single-token decode steps; tokenization and sampling excluded; "
            "mean ± std over repetitions. `Loom tg GB/s` = model bytes × tg tokens/s.", ""]
    body += model_lines
    body += ["", f"### Serving (loom-bench serve, {serve_threads} threads, llama-125m f16, random 512 in / 128 out)", "",
             "Loom: loom-server with flash_cpu / continuous / paged. llama.cpp: llama-cpp-python's server "
             "(one request at a time). Neither server got `ignore_eos`; every request ran to max_tokens.", ""]
    body += serve_lines
    body += ["", "![throughput vs concurrency](benchmarks/throughput_vs_concurrency.png)", "",
             "### Request-rate sweep (16 requests, Poisson arrivals)", ""]
    body += rate_lines
    body += ["", "![latency vs request rate](benchmarks/latency_vs_request_rate.png)", "", END]
    path = f"{docs}/benchmarks.md"
    text = open(path).read() if os.path.exists(path) else "# Benchmarks\n"
    if BEGIN in text and END in text:
        text = text[:text.index(BEGIN)] + "\n".join(body) + text[text.index(END) + len(END):]
    else:
        text = text.rstrip() + "\n\n" + "\n".join(body) + "\n"
    open(path, "w").write(text)


if __name__ == "__main__":
    main()
