#!/usr/bin/env python3
"""Loom's teacher-forced logits against llama.cpp's on the same windows of token ids.

Loom writes the windows with `loom-bench perplexity --dump-logits PREFIX` (PREFIX.ids: one window
of ids a line; PREFIX.f32: raw f32 [window][vocab] for each window in order); this script runs
tools/peers/llama_logits.cpp (the oracle, built against libllama) on each window's ids and reports,
over the positions scored (--score half: llama-perplexity's second half of each window; all: every
position but the last):
  - max |logit delta| and the relative RMS of the delta,
  - top-1 agreement (share of positions whose argmax is the same),
  - both engines' perplexity from their own logits on the same targets.

  logits_vs_llama_cpp.py --dump PREFIX --model M.gguf --oracle ./llama-logits [--score half|all] [--json OUT]
"""
import argparse
import json
import os
import subprocess
import tempfile

import numpy as np


def log_softmax(rows):
    m = rows.max(axis=1, keepdims=True)
    z = rows - m
    return z - np.log(np.exp(z).sum(axis=1, keepdims=True))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dump", required=True, help="PREFIX given to loom-bench perplexity --dump-logits")
    ap.add_argument("--model", required=True)
    ap.add_argument("--oracle", required=True)
    ap.add_argument("--score", choices=["half", "all"], default="half")
    ap.add_argument("--threads", default="2")
    ap.add_argument("--flash-attn", choices=["auto", "on", "off"], default="auto")
    ap.add_argument("--json")
    args = ap.parse_args()

    windows = [list(map(int, line.split())) for line in open(args.dump + ".ids") if line.strip()]
    loom_all = np.fromfile(args.dump + ".f32", dtype=np.float32)
    total = sum(len(w) for w in windows)
    vocab = loom_all.size // total
    if vocab * total != loom_all.size:
        raise SystemExit("the .f32 file does not hold [positions][vocab] for the .ids windows")
    loom_all = loom_all.reshape(total, vocab)

    max_abs = 0.0
    diff2 = ref2 = 0.0
    agree = scored = 0
    nll_loom = nll_llama = 0.0
    offset = 0
    with tempfile.TemporaryDirectory() as tmp:
        for w in windows:
            ids_path, out_path = os.path.join(tmp, "ids.txt"), os.path.join(tmp, "out.f32")
            with open(ids_path, "w") as f:
                f.write(" ".join(map(str, w)))
            subprocess.run([args.oracle, args.model, ids_path, out_path, args.threads, args.flash_attn],
                           check=True, capture_output=True)
            ref = np.fromfile(out_path, dtype=np.float32).reshape(len(w), vocab).astype(np.float64)
            got = loom_all[offset:offset + len(w)].astype(np.float64)
            offset += len(w)
            first = len(w) // 2 if args.score == "half" else 0
            rows = slice(first, len(w) - 1)
            targets = np.array(w[first + 1:])
            d = got[rows] - ref[rows]
            max_abs = max(max_abs, float(np.abs(d).max()))
            diff2 += float((d * d).sum())
            ref2 += float((ref[rows] * ref[rows]).sum())
            agree += int((got[rows].argmax(axis=1) == ref[rows].argmax(axis=1)).sum())
            scored += len(targets)
            idx = np.arange(len(targets))
            nll_loom -= float(log_softmax(got[rows])[idx, targets].sum())
            nll_llama -= float(log_softmax(ref[rows])[idx, targets].sum())

    r = {"windows": len(windows), "positions": scored, "vocab": vocab,
         "max_abs_logit_delta": max_abs, "rel_rms": (diff2 / ref2) ** 0.5,
         "top1_agreement": agree / scored,
         "ppl_loom": float(np.exp(nll_loom / scored)), "ppl_llama_cpp": float(np.exp(nll_llama / scored))}
    r["ppl_ratio"] = r["ppl_loom"] / r["ppl_llama_cpp"]
    print(f"{r['windows']} windows, {scored} positions scored ({args.score}), vocab {vocab}")
    print(f"max |logit delta| {max_abs:.4f}  rel RMS {r['rel_rms']:.6f}  top-1 agreement {100 * r['top1_agreement']:.2f}%")
    print(f"perplexity: Loom {r['ppl_loom']:.4f}  llama.cpp {r['ppl_llama_cpp']:.4f}  "
          f"ratio {r['ppl_ratio']:.5f} ({100 * (r['ppl_ratio'] - 1):+.3f}%)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(r, f, indent=2)


if __name__ == "__main__":
    main()
