#!/usr/bin/env python3
"""Writes the "SLO-aware serving" section of docs/benchmarks.md from tools/bench/slo.sh's runs:
per engine and offered load, medians over rounds of each class's TTFT/TPOT/ITL p99 and SLO
attainment, total output throughput and goodput (requests meeting their class's SLO per second),
and, when matplotlib is installed, plots of goodput and interactive ITL p99 against load.

    slo_report.py RESULTS_DIR DOCS_DIR CAPACITY THREADS SLOTS INTERACTIVE BATCH
"""
import glob
import json
import os
import re
import statistics
import sys

results, docs, capacity, threads, slots, interactive, batch = sys.argv[1:8]
capacity = float(capacity)
ENGINES = {"slo": "Loom `slo`", "continuous": "Loom `continuous`", "llama": f"llama-server (-np {slots})"}

runs = {}  # (engine, factor) -> [summary]
for path in glob.glob(os.path.join(results, "run-*.json")):
    m = re.match(r"run-(\w+)-x([0-9.]+)-r(\d+)\.json", os.path.basename(path))
    if m:
        with open(path) as f:
            runs.setdefault((m.group(1), float(m.group(2))), []).append(json.load(f)["summary"])
if not runs:
    sys.exit("slo_report: no runs under " + results)


def med(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else float("nan")


def cls(summary, name):
    return next(c for c in summary["classes"] if c["name"] == name)


def goodput(summary):
    return sum(c["request_goodput"] for c in summary["classes"])


names = [c["name"] for c in next(iter(runs.values()))[0]["classes"]]
factors = sorted({f for _, f in runs})
rows = []
for factor in factors:
    for engine in ENGINES:
        group = runs.get((engine, factor))
        if not group:
            continue
        row = {"factor": factor, "engine": engine, "rounds": len(group),
               "throughput": med([s["output_throughput"] for s in group]), "goodput": med([goodput(s) for s in group])}
        for n in names:
            row[n] = {k: med([cls(s, n)[k]["p99"] if isinstance(cls(s, n)[k], dict) else cls(s, n)[k] for s in group])
                      for k in ("ttft_ms", "tpot_ms", "itl_ms", "slo_attainment")}
        rows.append(row)

lines = ["<!-- slo:begin -->", "", "## SLO-aware serving: mixed load (tools/bench/slo.sh)", "",
         f"Classes `{interactive}` and `{batch}` (name:share:input:output:priority:ttft_ms:tpot_ms), "
         f"Poisson arrivals at the given multiple of the capacity measured first ({capacity:.3f} req/s: the mixed "
         f"load sent all at once to Loom `continuous`), {threads} threads, medians over rounds; the engines run "
         "in alternating order on the same prompts. Goodput: requests meeting their class's SLO per second. "
         "llama-server gets no priority/slo fields (it has none).", ""]
head = "| load | engine | out tok/s | goodput req/s |"
sep = "|---|---|---|---|"
for n in names:
    head += f" {n} TTFT p99 | {n} TPOT p99 | {n} ITL p99 | {n} SLO met |"
    sep += "---|---|---|---|"
lines += [head, sep]
for r in rows:
    line = f"| {r['factor']:g}x | {ENGINES[r['engine']]} | {r['throughput']:.1f} | {r['goodput']:.3f} |"
    for n in names:
        c = r[n]
        line += f" {c['ttft_ms']:.0f} | {c['tpot_ms']:.1f} | {c['itl_ms']:.0f} | {100 * c['slo_attainment']:.0f}% |"
    lines.append(line)

try:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    os.makedirs(os.path.join(docs, "benchmarks"), exist_ok=True)
    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    for engine, label in ENGINES.items():
        mine = [r for r in rows if r["engine"] == engine]
        if not mine:
            continue
        axes[0].plot([r["factor"] for r in mine], [r["goodput"] for r in mine], marker="o", label=label)
        axes[1].plot([r["factor"] for r in mine], [r[names[0]]["itl_ms"] for r in mine], marker="o", label=label)
    axes[0].set(xlabel="offered load (x capacity)", ylabel="goodput (req/s)", title="Goodput")
    axes[1].set(xlabel="offered load (x capacity)", ylabel="ms", title=f"{names[0]} ITL p99", yscale="log")
    axes[0].legend()
    fig.tight_layout()
    fig.savefig(os.path.join(docs, "benchmarks", "slo.png"), dpi=100)
    lines += ["", "![goodput and interactive ITL p99 against offered load](benchmarks/slo.png)"]
except ImportError:
    lines += ["", "(No plot: matplotlib is not installed.)"]
lines += ["", "<!-- slo:end -->"]

path = os.path.join(docs, "benchmarks.md")
with open(path) as f:
    text = f.read()
section = "\n".join(lines)
if "<!-- slo:begin -->" in text:
    text = re.sub(r"<!-- slo:begin -->.*<!-- slo:end -->", lambda _: section, text, flags=re.S)
else:
    text = text.rstrip("\n") + "\n\n" + section + "\n"
with open(path, "w") as f:
    f.write(text)
print(f"slo_report: wrote {len(rows)} rows into {path}", file=sys.stderr)
