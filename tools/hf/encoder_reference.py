#!/usr/bin/env python3
"""Reference sentence embeddings of a Hugging Face BERT encoder directory, written without Loom:
token ids from the `tokenizers` package (Hugging Face's Rust tokenizer) on the directory's
tokenizer.json, and the forward pass in float64 numpy straight from model.safetensors, as
transformers' BertModel computes it (word + position + token-type embeddings, LayerNorm,
post-norm layers of bidirectional attention and an erf-GELU MLP), then sentence-transformers'
mean pooling over the attention mask and L2 normalisation.

    encoder_reference.py MODEL_DIR SENTENCES.txt OUT.json

SENTENCES.txt: one sentence a line. OUT.json: {"model", "sentences", "ids", "embeddings"}.
Needs numpy, safetensors and tokenizers from PyPI (torch and transformers are not needed).
"""
import json
import math
import sys

import numpy as np
from safetensors.numpy import load_file
from tokenizers import Tokenizer


def layer_norm(x, w, b, eps):
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * w + b


def gelu_erf(x):
    erf = np.vectorize(math.erf)
    return 0.5 * x * (1.0 + erf(x / math.sqrt(2.0)))


def embed(t, cfg, ids):
    eps = cfg["layer_norm_eps"]
    heads = cfg["num_attention_heads"]
    n = len(ids)
    g = lambda name: t[name].astype(np.float64)
    x = g("embeddings.word_embeddings.weight")[ids] + g("embeddings.position_embeddings.weight")[:n] + \
        g("embeddings.token_type_embeddings.weight")[0]
    x = layer_norm(x, g("embeddings.LayerNorm.weight"), g("embeddings.LayerNorm.bias"), eps)
    dim = x.shape[1]
    hd = dim // heads
    for l in range(cfg["num_hidden_layers"]):
        p = f"encoder.layer.{l}."
        lin = lambda v, name: v @ g(p + name + ".weight").T + g(p + name + ".bias")
        q = lin(x, "attention.self.query").reshape(n, heads, hd).transpose(1, 0, 2)
        k = lin(x, "attention.self.key").reshape(n, heads, hd).transpose(1, 0, 2)
        v = lin(x, "attention.self.value").reshape(n, heads, hd).transpose(1, 0, 2)
        s = q @ k.transpose(0, 2, 1) / math.sqrt(hd)
        s = np.exp(s - s.max(-1, keepdims=True))
        s /= s.sum(-1, keepdims=True)
        a = (s @ v).transpose(1, 0, 2).reshape(n, dim)
        x = layer_norm(x + lin(a, "attention.output.dense"), g(p + "attention.output.LayerNorm.weight"),
                       g(p + "attention.output.LayerNorm.bias"), eps)
        h = gelu_erf(lin(x, "intermediate.dense"))
        x = layer_norm(x + lin(h, "output.dense"), g(p + "output.LayerNorm.weight"), g(p + "output.LayerNorm.bias"), eps)
    pooled = x.mean(0)
    return pooled / max(np.linalg.norm(pooled), 1e-12)


def main():
    model_dir, sentences_path, out_path = sys.argv[1:4]
    cfg = json.load(open(f"{model_dir}/config.json"))
    t = load_file(f"{model_dir}/model.safetensors")
    t = {k[len("bert."):] if k.startswith("bert.") else k: v for k, v in t.items()}
    tok = Tokenizer.from_file(f"{model_dir}/tokenizer.json")
    tok.no_padding()
    tok.no_truncation()
    sentences = [s.rstrip("\n") for s in open(sentences_path, encoding="utf-8") if s.strip()]
    ids = [tok.encode(s).ids for s in sentences]
    embeddings = [[float(f"{v:.7g}") for v in embed(t, cfg, i)] for i in ids]
    json.dump({"model": cfg.get("_name_or_path", model_dir), "sentences": sentences, "ids": ids,
               "embeddings": embeddings}, open(out_path, "w"), separators=(",", ":"))


if __name__ == "__main__":
    main()
