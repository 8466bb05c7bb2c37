#!/usr/bin/env python3
"""llama.cpp's ids for every pre-tokenizer name on one vocabulary, for
tests/unit/test_tokenizer_pre_tokenizers.cpp (the check with llama.cpp itself in the loop).

    tools/tokenizer/llama_cpp_pre_ids.py LLAMA_CPP_IDS VOCAB.gguf SPLITS.json OUT.json

LLAMA_CPP_IDS is tools/tokenizer/llama_cpp_ids.cpp built against llama.cpp. For each byte-level
name in SPLITS.json (tools/tokenizer/pre_tokenizer_splits.py's output) the vocabulary is written
again with tokenizer.ggml.pre set to that name, and llama.cpp tokenizes the texts: SPLITS.json's
texts, then the vocabulary's own .inp texts. Standard library only.
"""
import json
import os
import struct
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from trim_vocab import STRING, Reader, put_value  # noqa: E402

SEP = "\n__ggml_vocab_test__\n"


def with_pre(data, pre):
    r = Reader(data)
    magic, version, n_tensors, n_kv = r.take("<I"), r.take("<I"), r.take("<Q"), r.take("<Q")
    kvs = []
    for _ in range(n_kv):
        key = r.string()
        t = r.take("<I")
        kvs.append((key, t, r.value(t)))
    kvs = [kv for kv in kvs if kv[0] != b"tokenizer.ggml.pre"] + [
        (b"tokenizer.ggml.pre", STRING, pre.encode())]
    out = bytearray(struct.pack("<IIQQ", magic, version, n_tensors, len(kvs)))
    for key, t, v in kvs:
        put_value(out, STRING, key)
        out += struct.pack("<I", t)
        put_value(out, t, v)
    out += b"\0" * (-len(out) % 32)
    return bytes(out)


def main(tool, vocab, splits_path, out_path):
    splits = json.load(open(splits_path, encoding="utf-8"))
    inp = open(vocab + ".inp", encoding="utf-8").read()
    texts = splits["texts"] + inp.split(SEP)
    if texts[-1] == "":
        texts.pop()
    data = open(vocab, "rb").read()
    result = {"vocab": os.path.basename(vocab), "texts": texts, "ids": {}}
    with tempfile.TemporaryDirectory() as tmp:
        text_file = os.path.join(tmp, "texts.txt")
        with open(text_file, "w", encoding="utf-8", newline="") as f:
            f.write(SEP.join(texts))
        for name, entry in splits["names"].items():
            if not entry["byte_level"]:
                continue
            gguf = os.path.join(tmp, "vocab.gguf")
            open(gguf, "wb").write(with_pre(data, name))
            run = subprocess.run([tool, gguf, text_file], capture_output=True, text=True)
            if run.returncode != 0:
                raise SystemExit(f"{name}: {run.stderr[-400:]}")
            lines = run.stdout.split("\n")[:len(texts)]
            result["ids"][name] = [[int(x) for x in line.split()] for line in lines]
    with open(out_path, "w", encoding="utf-8") as f:
        json.dump(result, f, ensure_ascii=False, separators=(",", ":"))
        f.write("\n")
    print(f"{out_path}: {len(result['ids'])} names x {len(texts)} texts")


if __name__ == "__main__":
    main(*sys.argv[1:5])
