#!/usr/bin/env python3
"""Sentence embeddings of a sentence-transformers model directory by the sentence-transformers
library itself (torch, float32 on the CPU), beside the token ids its own tokenizer gives. It
writes the same JSON as encoder_reference.py, so either can be the reference of the encoder
tests; with --check it instead compares an existing reference file with sentence-transformers
(same ids, lowest cosine) and exits non-zero when the ids differ or a cosine is below 0.9999.

    sentence_transformers_reference.py MODEL_DIR SENTENCES.txt OUT.json
    sentence_transformers_reference.py --check MODEL_DIR REFERENCE.json

Needs sentence-transformers (and so torch) from PyPI.
"""
import json
import sys

import numpy as np
from sentence_transformers import SentenceTransformer


def encode(model_dir, sentences):
    model = SentenceTransformer(model_dir, device="cpu")
    # The ids the model's own tokenizer gives, [CLS] ... [SEP], no padding.
    ids = [model.tokenizer(s, truncation=True, max_length=model.max_seq_length)["input_ids"] for s in sentences]
    vectors = model.encode(sentences, batch_size=16, convert_to_numpy=True, normalize_embeddings=False)
    return ids, vectors.astype(np.float64)


def main(argv):
    if argv[:1] == ["--check"]:
        model_dir, ref_path = argv[1:3]
        ref = json.load(open(ref_path))
        ids, vectors = encode(model_dir, ref["sentences"])
        if ids != ref["ids"]:
            bad = next(i for i, (a, b) in enumerate(zip(ids, ref["ids"])) if a != b)
            raise SystemExit(f"token ids differ at sentence {bad}: {ref['sentences'][bad]!r}")
        want = np.asarray(ref["embeddings"], dtype=np.float64)
        cos = (vectors * want).sum(1) / (np.linalg.norm(vectors, axis=1) * np.linalg.norm(want, axis=1))
        worst = int(cos.argmin())
        print(f"sentence-transformers vs {ref_path}: {len(cos)} sentences, same ids, "
              f"lowest cosine {cos[worst]:.9f} ({ref['sentences'][worst]!r})")
        return 0 if cos.min() >= 0.9999 else 1
    model_dir, sentences_path, out_path = argv
    sentences = [line.rstrip("\n") for line in open(sentences_path, encoding="utf-8")]
    ids, vectors = encode(model_dir, sentences)
    json.dump({"model": model_dir.rstrip("/").split("/")[-1], "sentences": sentences, "ids": ids,
               "embeddings": [[float(f"{x:.7g}") for x in v] for v in vectors]},
              open(out_path, "w"), ensure_ascii=False, separators=(",", ":"))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
