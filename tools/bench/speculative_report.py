#!/usr/bin/env python3
"""Writes the "Speculative decoding" section of docs/benchmarks.md from speculative_bench.py's
runs: medians over rounds of batch-1 decode tokens/s with each method and its speedup over the
same engine without speculation (the median of the per-round ratios: each round ran both back to
back), acceptance and mean accepted length; output tokens/s against the number of clients with
speculation on and off; and, when matplotlib is installed, a plot of both.

    speculative_report.py RESULTS_DIR DOCS_DIR "DESCRIPTION OF THE RUN"
"""
import glob
import json
import os
import statistics
import sys

results, docs, description = sys.argv[1:4]
runs = []
for path in sorted(glob.glob(os.path.join(results, "*.json"))):
    with open(path) as f:
        runs.append(json.load(f))
if not runs:
    sys.exit("speculative_report: no runs under " + results)

NAMES = {"loom": "Loom", "llama": "llama-server"}
METHOD_NAMES = {"off": "off", "draft": "draft model", "ngram": "`ngram`", "suffix": "`suffix`",
                "lookup": "lookup (`ngram-cache`)", "ngram-simple": "`ngram-simple`"}


def med(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else float("nan")


def decode_rate(records):
    tokens = sum(r["tokens"] - 1 for r in records)
    seconds = sum(r["t_end"] - r["t_first"] for r in records)
    return tokens / seconds if seconds > 0 else float("nan")


def e2e_rate(records):
    tokens = sum(r["tokens"] for r in records)
    seconds = sum(r["t_end"] - r["t_send"] for r in records)
    return tokens / seconds if seconds > 0 else float("nan")


def mean_ttft_ms(records):
    return 1000 * statistics.mean(r["t_first"] - r["t_send"] for r in records)


def acceptance(spec):
    return spec["num_accepted_tokens"] / spec["num_draft_tokens"] if spec["num_draft_tokens"] else None


def mean_length(spec):
    return 1 + spec["num_accepted_tokens"] / spec["num_drafts"] if spec["num_drafts"] else None


k = runs[0]["k"]
threads = runs[0]["threads"]
rounds = len({r["round"] for r in runs})

# ---- batch 1
b1 = {}  # (workload, engine, method) -> {round: workload result}
for r in runs:
    if r["phase"] == "batch1":
        for name, w in r["workloads"].items():
            b1.setdefault((name, r["engine"], r["method"]), {})[r["round"]] = w
rows = []
for (name, engine, method), by_round in sorted(b1.items(), key=lambda kv: (kv[0][0], kv[0][1] != "loom", kv[0][2] != "off")):
    off = b1.get((name, engine, "off"), {})
    rates = {rnd: decode_rate(w["records"]) for rnd, w in by_round.items()}
    ratios = [rates[rnd] / decode_rate(off[rnd]["records"]) for rnd in rates if rnd in off]
    same = [w.get("same_as_off") for w in by_round.values() if "same_as_off" in w]
    e2e = {rnd: e2e_rate(w["records"]) for rnd, w in by_round.items()}
    rows.append({"workload": name, "engine": engine, "method": method, "rate": med(rates.values()),
                 "e2e": med(e2e.values()),
                 "e2e_speedup": med([e2e[rnd] / e2e_rate(off[rnd]["records"]) for rnd in e2e if rnd in off]),
                 "ttft": med([mean_ttft_ms(w["records"]) for w in by_round.values()]),
                 "speedup": med(ratios), "acceptance": med([acceptance(w["spec"]) for w in by_round.values()]),
                 "mean_length": med([mean_length(w["spec"]) for w in by_round.values()]),
                 "same": f"{min(same)}/{len(next(iter(by_round.values()))['records'])}" if same else "",
                 "tokens": med([sum(x["tokens"] for x in w["records"]) for w in by_round.values()])})

# ---- concurrency
cc = {}  # (engine, method, clients) -> {round: run}
for r in runs:
    if r["phase"] == "concurrency":
        for run in r["runs"]:
            cc.setdefault((r["engine"], r["method"], run["clients"]), {})[r["round"]] = run
clients = sorted({c for _, _, c in cc})
crow = {}
for (engine, method, c), by_round in cc.items():
    off = cc.get((engine, "off", c), {})
    crow[(engine, method, c)] = {
        "rate": med([x["output_tok_s"] for x in by_round.values()]),
        "ratio": med([x["output_tok_s"] / off[rnd]["output_tok_s"] for rnd, x in by_round.items() if rnd in off]),
        "acceptance": med([acceptance(x["spec"]) for x in by_round.values()])}


def fmt(v, spec=".1f", none="–"):
    return none if v is None or v != v else format(v, spec)


lines = ["<!-- speculative:begin -->", "", "## Speculative decoding (tools/bench/speculative.sh)", "", description, "",
         f"k = {k} draft tokens (llama.cpp's `ngram-cache` drafts up to its fixed 8), {threads} threads, "
         f"medians over {rounds} rounds; engines alternate within each round, each server started fresh per method. "
         "Decode tokens/s: tokens after the first over the time after the first token, summed over the workload's "
         "requests, one request at a time; end-to-end tokens/s: all tokens over the time from sending each request "
         "(prefill included). Speedup: against the same engine without speculation, the median of the "
         "per-round ratios. Mean accepted length counts the bonus token (1 + accepted drafts per verification). "
         "\"same\": greedy answers identical to the engine's own answers without speculation (Loom stops the "
         "benchmark on any difference).", "",
         "### Batch 1", "",
         "| workload | engine | method | decode tok/s | speedup | end-to-end tok/s (speedup) | mean TTFT ms | "
         "acceptance | mean accepted length | same | tokens |",
         "|---|---|---|---|---|---|---|---|---|---|---|"]
for r in rows:
    lines.append(f"| {r['workload']} | {NAMES[r['engine']]} | {METHOD_NAMES[r['method']]} | {fmt(r['rate'])} | "
                 f"{fmt(r['speedup'], '.2f')}x | {fmt(r['e2e'])} ({fmt(r['e2e_speedup'], '.2f')}x) | "
                 f"{fmt(r['ttft'], '.0f')} | {fmt(r['acceptance'], '.2f')} | {fmt(r['mean_length'], '.2f')} | "
                 f"{r['same']} | {fmt(r['tokens'], '.0f')} |")
if cc:
    lines += ["", "### Output throughput against concurrency (grounded workload)", "",
              "Closed-loop clients, each sending its requests one after another; output tokens/s over the run, and in "
              "brackets the ratio to the same engine without speculation.", "",
              "| engine | method | " + " | ".join(f"{c} client{'s' if c > 1 else ''}" for c in clients) + " |",
              "|---|---|" + "---|" * len(clients)]
    for engine in ("loom", "llama"):
        for method in ("off", "draft", "ngram", "lookup"):
            if (engine, method, clients[0]) not in crow:
                continue
            cells = []
            for c in clients:
                x = crow.get((engine, method, c))
                cells.append("–" if x is None else
                             f"{fmt(x['rate'])}" + ("" if method == "off" else f" ({fmt(x['ratio'], '.2f')}x)"))
            lines.append(f"| {NAMES[engine]} | {METHOD_NAMES[method]} | " + " | ".join(cells) + " |")

plot = os.path.join(docs, "benchmarks", "speculative.png")
try:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4))
    labels = [f"{r['workload']}\n{NAMES[r['engine']]}\n{r['method']}" for r in rows if r["method"] != "off"]
    values = [r["speedup"] for r in rows if r["method"] != "off"]
    colors = ["tab:blue" if r["engine"] == "loom" else "tab:orange" for r in rows if r["method"] != "off"]
    ax1.bar(range(len(values)), values, color=colors)
    ax1.axhline(1.0, color="grey", lw=0.8)
    ax1.set_xticks(range(len(values)), labels, fontsize=6)
    ax1.set_ylabel("batch-1 decode speedup over off")
    ax1.set_title("Batch 1 (blue: Loom, orange: llama-server)")
    for engine, style in (("loom", "-"), ("llama", "--")):
        for method in ("off", "draft", "ngram", "lookup"):
            ys = [crow.get((engine, method, c), {}).get("rate") for c in clients]
            if all(y is not None for y in ys):
                ax2.plot(clients, ys, style, marker="o", label=f"{NAMES[engine]} {method}")
    ax2.set_xscale("log", base=2)
    ax2.set_xticks(clients, [str(c) for c in clients])
    ax2.set_xlabel("concurrent clients")
    ax2.set_ylabel("output tokens/s")
    ax2.set_title("Grounded workload")
    ax2.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(plot, dpi=110)
    lines += ["", "![speculative decoding: batch-1 speedup and throughput against clients](benchmarks/speculative.png)"]
except ImportError:
    lines += ["", "(No plot: matplotlib is not installed.)"]
lines += ["", "<!-- speculative:end -->"]
section = "\n".join(lines) + "\n"

doc_path = os.path.join(docs, "benchmarks.md")
with open(doc_path) as f:
    doc = f.read()
begin, end = doc.find("<!-- speculative:begin -->"), doc.find("<!-- speculative:end -->")
if begin >= 0 and end > begin:
    doc = doc[:begin] + section + doc[end + len("<!-- speculative:end -->\n"):]
else:
    doc = doc.rstrip("\n") + "\n\n" + section
with open(doc_path, "w") as f:
    f.write(doc)
print(section)
