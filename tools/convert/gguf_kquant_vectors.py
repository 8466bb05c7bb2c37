#!/usr/bin/env python3
"""Test vectors for Loom's GGUF K-quant formats Q2_K, Q3_K, Q5_K and IQ4_XS, from llama.cpp.

For each type it writes, under OUT_DIR (tests/data/gguf_kquants/ in the repo):
  in.f32            f32 input values, shared by the types (4 super-blocks that reach the
                    quantizers' branches: mixed scales, a zero sub-block, all positive, all zero)
  <type>.q.bin      those values quantized by llama.cpp's own quantize_row_<type>_ref (the
                    function its llama_model_quantize runs without an importance matrix)
  <type>.deq.f32    the quantized blocks dequantized by the gguf package's gguf.quants (numpy,
                    llama.cpp's dequantize_row_<type>), checked against llama.cpp's C one
  <type>.rand.bin   super-blocks of random bytes (finite f16 scales), and
  <type>.rand.f32   their gguf.quants dequantization: every bit pattern of codes and scales
and SOURCES.txt, the provenance (package versions, the llama.cpp tree).

gguf.quants (gguf 0.19.0) dequantizes these four types but quantizes none of them, so the
quantizer's bytes come from llama.cpp's C source: ggml/src/ggml-quants.c is compiled here
(with -ffp-contract=off, as Loom builds its quantizers) into a small shared library and called
through ctypes. The source is the llama.cpp tree vendored in the llama-cpp-python sdist:
  pip download --no-deps --no-binary :all: llama-cpp-python==0.3.36 -d /tmp && tar xzf ...
  python3 -m venv /tmp/v && /tmp/v/bin/pip install gguf==0.19.0 numpy
  /tmp/v/bin/python tools/convert/gguf_kquant_vectors.py \\
      --llama-cpp /tmp/llama_cpp_python-0.3.36/vendor/llama.cpp --out tests/data/gguf_kquants
Deterministic: the same versions give the same files.
"""
import argparse
import ctypes
import os
import subprocess
import tempfile
from importlib import metadata

import numpy as np
from gguf import GGMLQuantizationType as T
from gguf import quants

TYPES = {  # name: (ggml type, block bytes, offsets of f16 fields that must be finite)
    "q2_K": (T.Q2_K, 84, [80, 82]),
    "q3_K": (T.Q3_K, 110, [108]),
    "q5_K": (T.Q5_K, 176, [0, 2]),
    "iq4_xs": (T.IQ4_XS, 136, [0]),
}
C_NAMES = {"q2_K": "q2_K", "q3_K": "q3_K", "q5_K": "q5_K", "iq4_xs": "iq4_xs"}

# ggml-quants.c needs four symbols of ggml.c to link; the reference row functions use none.
STUBS = r"""
#include <stdio.h>
#include <stdlib.h>
#include <stddef.h>
void ggml_abort(const char * f, int l, const char * fmt, ...) { fprintf(stderr, "abort %s:%d\n", f, l); abort(); }
size_t ggml_row_size(int t, long long n) { (void)t; (void)n; abort(); }
size_t ggml_type_size(int t) { (void)t; abort(); }
const char * ggml_type_name(int t) { (void)t; return "?"; }
"""


def build_reference(llama_cpp, work):
    src = os.path.join(llama_cpp, "ggml", "src")
    stub = os.path.join(work, "stubs.c")
    with open(stub, "w") as f:
        f.write(STUBS)
    lib = os.path.join(work, "libggml_quants_ref.so")
    subprocess.run(["cc", "-O2", "-ffp-contract=off", "-fPIC", "-shared", "-I", src, "-I",
                    os.path.join(llama_cpp, "ggml", "include"), os.path.join(src, "ggml-quants.c"), stub,
                    "-o", lib, "-lm"], check=True)
    return ctypes.CDLL(lib)


def inputs(rng):
    """4 super-blocks of 256 values that take the quantizers' special paths."""
    blocks = []
    mixed = rng.standard_normal(256).astype(np.float32) * np.repeat(rng.uniform(0.01, 3, 16), 16).astype(np.float32)
    blocks.append(mixed)
    zero_sub = rng.standard_normal(256).astype(np.float32)
    zero_sub[32:64] = 0  # a whole 32-value sub-block (and two 16-value ones) of zeros
    blocks.append(zero_sub)
    positive = rng.uniform(0.5, 2.0, 256).astype(np.float32)  # min > 0: the min clamps to 0
    blocks.append(positive)
    blocks.append(np.zeros(256, np.float32))
    return np.concatenate(blocks)


def random_blocks(rng, nbytes, f16_offsets, n):
    raw = rng.integers(0, 256, size=(n, nbytes), dtype=np.uint8)
    for off in f16_offsets:  # finite scales of moderate size, either sign
        h = np.float16(rng.uniform(-2, 2, n).astype(np.float32)).view(np.uint8).reshape(n, 2)
        raw[:, off:off + 2] = h
    return raw.reshape(-1)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--llama-cpp", required=True, help="a llama.cpp source tree (the one llama-cpp-python vendors)")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    with tempfile.TemporaryDirectory() as work:
        ref = build_reference(args.llama_cpp, work)
        rng = np.random.default_rng(20261202)
        x = inputs(rng)
        x.tofile(os.path.join(args.out, "in.f32"))
        for name, (qtype, nbytes, f16_offsets) in TYPES.items():
            n_blocks = x.size // 256
            q = np.zeros(n_blocks * nbytes, np.uint8)
            quant = getattr(ref, "quantize_row_%s_ref" % C_NAMES[name])
            quant(x.ctypes.data_as(ctypes.c_void_p), q.ctypes.data_as(ctypes.c_void_p), ctypes.c_int64(x.size))
            deq = quants.dequantize(q.reshape(1, -1), qtype).reshape(-1).astype(np.float32)
            c_deq = np.zeros(x.size, np.float32)
            getattr(ref, "dequantize_row_%s" % C_NAMES[name])(q.ctypes.data_as(ctypes.c_void_p),
                                                          c_deq.ctypes.data_as(ctypes.c_void_p),
                                                          ctypes.c_int64(x.size))
            assert deq.tobytes() == c_deq.tobytes(), name + ": gguf.quants and llama.cpp's C dequantizer differ"
            rb = random_blocks(rng, nbytes, f16_offsets, 6)
            rdeq = quants.dequantize(rb.reshape(1, -1), qtype).reshape(-1).astype(np.float32)
            q.tofile(os.path.join(args.out, name + ".q.bin"))
            deq.tofile(os.path.join(args.out, name + ".deq.f32"))
            rb.tofile(os.path.join(args.out, name + ".rand.bin"))
            rdeq.tofile(os.path.join(args.out, name + ".rand.f32"))
    # The sdist's folder name carries its version: .../llama_cpp_python-0.3.36/vendor/llama.cpp.
    tree = os.path.basename(os.path.dirname(os.path.dirname(os.path.abspath(args.llama_cpp))))
    commit = tree + "'s vendor/llama.cpp" if tree.startswith("llama_cpp_python-") else args.llama_cpp
    with open(os.path.join(args.out, "SOURCES.txt"), "w") as f:
        f.write("Generated by tools/convert/gguf_kquant_vectors.py (see its docstring for the command).\n")
        f.write("gguf %s, numpy %s; quantizer: ggml/src/ggml-quants.c of %s, cc -O2 -ffp-contract=off.\n" %
                (metadata.version("gguf"), np.__version__, commit))
        f.write("in.f32 inputs; per type: .q.bin quantize_row_<type>_ref(inputs), .deq.f32 gguf.quants.dequantize"
                "(.q.bin) (equal to llama.cpp's C dequantize_row_<type>), .rand.bin random blocks, .rand.f32 their"
                " gguf.quants dequantization.\n")


if __name__ == "__main__":
    main()
