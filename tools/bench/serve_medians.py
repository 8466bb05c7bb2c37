"""Medians over rounds of loom-bench serve --json runs, for the serving scripts' tables
(concurrency.sh, serving-vs-peers.sh): OUT/ENGINE-cC-rR.json, R = 1..rounds."""
import json
import statistics


def load(out, engine, c, rounds):
    runs = [json.load(open(f"{out}/{engine}-c{c}-r{r}.json"))["summary"] for r in range(1, rounds + 1)]
    for s in runs:
        assert s["failed"] == 0, f"{engine} c={c}: {s['failed']} failed"
    med = lambda f: statistics.median(f(s) for s in runs)
    return {"tok/s": med(lambda s: s["output_throughput"]),
            "tpot50": med(lambda s: s["tpot_ms"]["median"]), "tpot99": med(lambda s: s["tpot_ms"]["p99"]),
            "itl99": med(lambda s: s["itl_ms"]["p99"]),
            "ttft50": med(lambda s: s["ttft_ms"]["median"]), "ttft99": med(lambda s: s["ttft_ms"]["p99"]),
            "per_round": [s["output_throughput"] for s in runs]}
