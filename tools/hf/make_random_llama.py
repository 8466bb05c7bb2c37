#!/usr/bin/env python3
"""A random-weight Hugging Face Llama directory for serving benchmarks against vLLM.

Both engines load the same directory (config.json, model.safetensors, tokenizer.json): Loom
reads HF safetensors directly, vLLM through transformers' config. The shape is loom-convert's
llama-125m preset (dim 768, hidden 2048, 12 layers, 12 heads, 12 KV heads, context 2048) with
Llama 3's 128k vocabulary and RoPE base, so the head weighs as much as the 12 layers together
(the large-vocabulary case issue 18 names). Weights: normal, std 0.02 (transformers' default
initialisation, seeded), norms 1, stored as bfloat16.

Needs torch and transformers (the vLLM venv of tools/peers/setup-vllm-cpu.sh has both):
  make_random_llama.py --out DIR --tokenizer tests/data/hf_tokenizers/llama3 [--seed 0]
"""
import argparse
import json
import os
import shutil

import torch
from transformers import LlamaConfig, LlamaForCausalLM


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--tokenizer", required=True, help="a directory with tokenizer.json and tokenizer_config.json")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--dim", type=int, default=768)
    ap.add_argument("--hidden", type=int, default=2048)
    ap.add_argument("--layers", type=int, default=12)
    ap.add_argument("--heads", type=int, default=12)
    ap.add_argument("--kv-heads", type=int, default=12)
    ap.add_argument("--context", type=int, default=2048)
    args = ap.parse_args()

    vocab = len(json.load(open(os.path.join(args.tokenizer, "tokenizer.json")))["model"]["vocab"])
    tok_cfg = json.load(open(os.path.join(args.tokenizer, "tokenizer_config.json")))
    added = tok_cfg.get("added_tokens_decoder", {})
    vocab = max([vocab] + [int(i) + 1 for i in added])
    ids = {v["content"]: int(k) for k, v in added.items()}
    config = LlamaConfig(vocab_size=vocab, hidden_size=args.dim, intermediate_size=args.hidden,
                         num_hidden_layers=args.layers, num_attention_heads=args.heads,
                         num_key_value_heads=args.kv_heads, max_position_embeddings=args.context,
                         rope_theta=500000.0, rms_norm_eps=1e-5, tie_word_embeddings=False,
                         bos_token_id=ids.get(tok_cfg.get("bos_token"), 1),
                         eos_token_id=ids.get(tok_cfg.get("eos_token"), 2))
    torch.manual_seed(args.seed)
    model = LlamaForCausalLM(config).to(torch.bfloat16)
    model.save_pretrained(args.out, safe_serialization=True)
    for f in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(os.path.join(args.tokenizer, f), os.path.join(args.out, f))
    n = sum(p.numel() for p in model.parameters())
    print(f"{args.out}: {n / 1e6:.1f}M parameters, vocab {vocab}, bf16")


if __name__ == "__main__":
    main()
