#!/usr/bin/env python3
"""Shrinks a vocab-only llama.cpp GGUF (models/ggml-vocab-*.gguf) for its own .inp test vectors.

    tools/tokenizer/trim_vocab.py IN.gguf OUT.gguf

Token ids stay where they are. A token is kept when the bytes it spells (GPT-2's byte spelling, or
raw UTF-8 with U+2581 for a space in a "gemma4" vocab) occur somewhere in the .inp texts (or it is not a normal token: control, user-defined, byte...); every other token
becomes an empty `unused` entry (type 5). A merge is kept when its result is kept. BPE on a word
only ever looks at merges of adjacent symbols, whose concatenation is a substring of the word,
and a whole-word lookup (ignore_merges) only at the word itself, so encoding the .inp texts
gives the same ids with the trimmed file as with the full one. The token scores and the chat
template (unused by BPE) are dropped; everything else is copied as it is. Standard library only.
"""
import struct
import sys

# GGUF value types (ggml's gguf.h).
SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q",
           11: "<q", 12: "<d"}
STRING, ARRAY = 8, 9


class Reader:
    def __init__(self, data):
        self.data, self.pos = data, 0

    def take(self, fmt):
        v = struct.unpack_from(fmt, self.data, self.pos)[0]
        self.pos += struct.calcsize(fmt)
        return v

    def string(self):
        n = self.take("<Q")
        s = self.data[self.pos:self.pos + n]
        self.pos += n
        return s

    def value(self, t):
        if t == STRING:
            return self.string()
        if t == ARRAY:
            et, n = self.take("<I"), self.take("<Q")
            return (et, [self.value(et) for _ in range(n)])
        return self.take(SCALARS[t])


def put_value(out, t, v):
    if t == STRING:
        out += struct.pack("<Q", len(v)) + v
    elif t == ARRAY:
        et, items = v
        out += struct.pack("<IQ", et, len(items))
        for item in items:
            put_value(out, et, item)
    else:
        out += struct.pack(SCALARS[t], v)


def gpt2_byte_decoder():
    """GPT-2's printable spelling of each byte, inverted: spelled character -> byte."""
    keep = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAD)) + list(range(0xAE, 0x100))
    spelled, extra = {}, 0
    for b in range(256):
        if b in keep:
            spelled[chr(b)] = b
        else:
            spelled[chr(256 + extra)] = b
            extra += 1
    return spelled


def main(src, dst):
    data = open(src, "rb").read()
    inputs = open(src + ".inp", "rb").read()
    r = Reader(data)
    magic, version = r.take("<I"), r.take("<I")
    n_tensors, n_kv = r.take("<Q"), r.take("<Q")
    assert magic == 0x46554747 and version == 3 and n_tensors == 0, "a vocab-only GGUF v3"
    kvs = []
    for _ in range(n_kv):
        key = r.string()
        t = r.take("<I")
        value = r.value(t)
        if key not in (b"tokenizer.ggml.scores", b"tokenizer.chat_template"):
            kvs.append((key, t, value))
    meta = {k: v for k, _, v in kvs}
    tokens = meta[b"tokenizer.ggml.tokens"][1]
    types = meta[b"tokenizer.ggml.token_type"][1]
    decoder = gpt2_byte_decoder()
    raw_utf8 = meta.get(b"tokenizer.ggml.model") == b"gemma4"  # U+2581 spaces, no byte spelling

    def spelled_bytes(tok):
        if raw_utf8:
            return tok.replace("\u2581".encode(), b" ")
        text = tok.decode("utf-8")
        if all(c in decoder for c in text):
            return bytes(decoder[c] for c in text)
        return None

    kept = set()
    for i, tok in enumerate(tokens):
        if types[i] != 1:  # not normal: control/user-defined/byte tokens stay
            kept.add(tok)
            continue
        raw = spelled_bytes(tok)
        if raw is not None and raw in inputs:
            kept.add(tok)
    new_tokens = [t if t in kept else b"" for t in tokens]
    new_types = [types[i] if tokens[i] in kept else 5 for i in range(len(tokens))]
    merges = meta[b"tokenizer.ggml.merges"][1]
    new_merges = [m for m in merges if m.replace(b" ", b"", 1) in kept]

    out = bytearray(struct.pack("<IIQQ", magic, version, 0, len(kvs)))
    for key, t, v in kvs:
        if key == b"tokenizer.ggml.tokens":
            v = (STRING, new_tokens)
        elif key == b"tokenizer.ggml.token_type":
            v = (v[0], new_types)
        elif key == b"tokenizer.ggml.merges":
            v = (STRING, new_merges)
        put_value(out, STRING, key)
        out += struct.pack("<I", t)
        put_value(out, t, v)
    align = meta.get(b"general.alignment", 32)
    out += b"\0" * (-len(out) % align)
    open(dst, "wb").write(out)
    print(f"{dst}: {sum(1 for t in new_tokens if t)}/{len(tokens)} tokens, "
          f"{len(new_merges)}/{len(merges)} merges, {len(out)} bytes")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
