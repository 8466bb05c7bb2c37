#!/usr/bin/env python3
"""Model-level pp/tg of the peer (llama.cpp through llama-cpp-python), measured the way
`loom-bench model` measures Loom: prompt processing = one N-token prefill, token generation =
N single-token decode steps; tokenization and sampling excluded; mean and std over repetitions.

  python llama_model_bench.py MODEL.gguf --threads 2 --pp 512 --tg 128 --repetitions 3 [--json F]
Run it with the venv's python from tools/peers/setup-llama-cpp.sh.
"""
import argparse
import json
import os
import random
import statistics
import time

import llama_cpp


def timed(fn):
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--pp", type=int, default=512)
    ap.add_argument("--tg", type=int, default=128)
    ap.add_argument("--repetitions", type=int, default=3)
    ap.add_argument("--json")
    args = ap.parse_args()

    llm = llama_cpp.Llama(model_path=args.model, n_threads=args.threads, n_threads_batch=args.threads,
                          n_ctx=max(args.pp, args.tg + 1) + 8, n_batch=512, verbose=False)
    rng = random.Random(0)
    n_vocab = llm.n_vocab()
    # Random ids away from the special tokens at the start of the vocabulary.
    prompt = [rng.randrange(3, n_vocab) for _ in range(args.pp)]
    steps = [rng.randrange(3, n_vocab) for _ in range(args.tg)]

    def pp():
        llm.reset()
        llm.eval(prompt)

    def tg():
        llm.reset()
        for tok in steps:
            llm.eval([tok])

    pp(); tg()  # warm-up: page the weights in, size the buffers
    results = {}
    for name, fn, n in (("pp", pp, args.pp), ("tg", tg, args.tg)):
        rates = [n / timed(fn) for _ in range(args.repetitions)]
        results[f"{name}{n}"] = {"mean": statistics.mean(rates),
                                 "std": statistics.stdev(rates) if len(rates) > 1 else 0.0,
                                 "runs": rates}
    model_bytes = os.path.getsize(args.model)
    tg_key = f"tg{args.tg}"
    results["tg_bandwidth_gbs"] = model_bytes * results[tg_key]["mean"] / 1e9
    results.update({"engine": "llama.cpp (llama-cpp-python %s)" % llama_cpp.__version__,
                    "threads": args.threads, "model": args.model, "model_bytes": model_bytes})
    for key in (f"pp{args.pp}", tg_key):
        r = results[key]
        print(f"llama.cpp  {key:>6}  {r['mean']:10.2f} ± {r['std']:.2f} tokens/s  (threads {args.threads})")
    print(f"llama.cpp  tg effective bandwidth {results['tg_bandwidth_gbs']:.2f} GB/s")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=2)


if __name__ == "__main__":
    main()
