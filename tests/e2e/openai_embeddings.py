#!/usr/bin/env python3
"""The openai package's client.embeddings.create against a running loom-server: floats and
base64 (the client decodes it itself), compared with the reference vectors by cosine.

    openai_embeddings.py PORT REFERENCE.json
"""
import json
import math
import sys

import openai

port, ref_path = sys.argv[1], sys.argv[2]
ref = json.load(open(ref_path))
client = openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="unused")


def cosine(a, b):
    ab = sum(x * y for x, y in zip(a, b))
    return ab / math.sqrt(sum(x * x for x in a) * sum(y * y for y in b))


got = client.embeddings.create(model="all-MiniLM-L6-v2", input=ref["sentences"], encoding_format="float")
assert len(got.data) == 50, len(got.data)
assert got.usage.prompt_tokens == sum(len(i) for i in ref["ids"]), got.usage
worst = min(cosine(d.embedding, e) for d, e in zip(got.data, ref["embeddings"]))
assert worst >= 0.9999, worst
# The client's default asks for base64 and decodes it into floats.
b64 = client.embeddings.create(model="all-MiniLM-L6-v2", input=ref["sentences"][:3])
for d, f in zip(b64.data, got.data):
    assert d.embedding == f.embedding, "base64 and float differ"
try:
    client.embeddings.create(model="all-MiniLM-L6-v2", input="x", dimensions=64)
    raise SystemExit("dimensions=64 was accepted")
except openai.BadRequestError as e:
    assert "dimensions" in str(e), e
print(f"openai client: 50 embeddings, lowest cosine {worst:.7f}")
