#!/usr/bin/env python3
"""Greedy Loom against greedy llama.cpp on the same GGUF and the same prompt ids.

Loom is a running loom-server (/v1/completions on token ids, temperature 0, logprobs 5, 48
tokens); llama.cpp is tools/peers/llama_greedy_top5.cpp built against libllama. For each prompt
it applies vLLM's check_logprobs_close rule (where the two first differ, each one's token must be
in the other's top 5; then stop comparing) and says whether the first 16 tokens are identical.
Tokens are compared as Loom's pieces (llama.cpp's ids through Loom's /detokenize; the end token,
whose piece Loom's detokenizer skips, by --eos-id/--eos-piece).

  greedy_vs_llama_cpp.py --model M.gguf --port 8080 --oracle ./llama-greedy-top5

--self-flash-attn off|on compares llama.cpp with itself instead (its default attention path against
the other one, under the same rule): how far the rule's figures move from numerics alone. The server
is still used for the template and the tokenizer. --other-oracle PATH does the same with a second
build of the oracle (for example against llama.cpp built with LLAMA_CPP_ISA=avx2): the same
engine, the same file, another instruction set.

--long-text FILE --long-tokens N adds one raw prompt of FILE's first N tokens (a sliding-window
model's long context), and reads the server's /metrics while a streamed request on it decodes:
the KV blocks in use against what every layer keeping its blocks would hold.

Gemma 3 270M (tools/fetch-gemma3.sh; its GGUF has no chat template, so the server gets Gemma's
turn format from tools/peers/gemma3_chat.jinja; EOS is <eos>, id 1):
  loom-server gemma-3-270m-q4_k_m.gguf --port 8080 --chat-template tools/peers/gemma3_chat.jinja
  greedy_vs_llama_cpp.py --model gemma-3-270m-q4_k_m.gguf --oracle ./llama-greedy-top5 --eos-id 1 --eos-piece '<eos>'
"""
import argparse
import json
import subprocess
import urllib.request

CHAT = ["What is the capital of Japan?", "Hi", "What is 2 + 2?", "Name a color.", "Tell me a joke.",
        "Write a haiku about the sea.", "What is photosynthesis?", "Give me three tips for sleeping well."]
RAW = ["The capital of France is", "Once upon a time, there was a", "def fibonacci(n):\n", "The quick brown fox",
       "In 1492, Columbus", "Water boils at", "The three primary colors are", "import numpy as np\n"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True)
    ap.add_argument("--port", type=int, default=8080)
    ap.add_argument("--oracle", required=True)
    ap.add_argument("--tokens", type=int, default=48)
    ap.add_argument("--eos-id", type=int, default=2)
    ap.add_argument("--eos-piece", default="<|im_end|>")
    ap.add_argument("--self-flash-attn", choices=["on", "off"])
    ap.add_argument("--other-oracle", help="a second llama.cpp oracle build to compare the first with")
    ap.add_argument("--long-text")
    ap.add_argument("--long-tokens", type=int, default=2000)
    args = ap.parse_args()

    def post(path, body):
        req = urllib.request.Request(f"http://127.0.0.1:{args.port}{path}", json.dumps(body).encode(),
                                     {"Content-Type": "application/json"})
        return json.load(urllib.request.urlopen(req))

    def piece(i):
        return args.eos_piece if i == args.eos_id else post("/detokenize", {"tokens": [i]})["prompt"]

    def oracle(ids, flash_attn=None, binary=None):
        cmd = [binary or args.oracle, args.model, ",".join(map(str, ids)), str(args.tokens)]
        out = subprocess.run(cmd + ([flash_attn] if flash_attn else []), capture_output=True, text=True,
                             check=True).stdout
        return [list(map(int, line.split())) for line in out.splitlines() if line.strip()]

    # Chat prompts through the server's own template, raw ones as they are.
    prompts = [("chat", post("/apply-template", {"messages": [{"role": "user", "content": q}]})["prompt"]) for q in CHAT]
    prompts += [("raw", p) for p in RAW]
    if args.long_text:
        with open(args.long_text, encoding="utf-8") as f:
            ids = post("/tokenize", {"prompt": f.read()})["tokens"][:args.long_tokens]
        if len(ids) < args.long_tokens:
            raise SystemExit(f"{args.long_text} holds only {len(ids)} tokens")
        prompts.append(("long", ids))
        kv_while_decoding(args.port, ids)
    close_n = same_n = 0
    for kind, text in prompts:
        ids = text if isinstance(text, list) else post("/tokenize", {"prompt": text})["tokens"]
        ref = oracle(ids)
        if args.self_flash_attn or args.other_oracle:
            other = oracle(ids, args.self_flash_attn, args.other_oracle)
            toks = [piece(r[0]) for r in other]
            tops = [{piece(x): 0.0 for x in r[1:6]} for r in other]
        else:
            lp = post("/v1/completions", {"prompt": ids, "max_tokens": args.tokens, "temperature": 0,
                                          "logprobs": 5})["choices"][0]["logprobs"]
            toks, tops = lp["tokens"], lp["top_logprobs"]
        first_diff, close = None, True
        for i in range(min(len(toks), len(ref))):
            if toks[i] == piece(ref[i][0]):
                continue
            first_diff = i
            close = toks[i] in [piece(x) for x in ref[i][1:6]] and piece(ref[i][0]) in tops[i]
            break
        same = first_diff is None or first_diff >= 16
        close_n += close
        same_n += same
        print(f"{kind:4} close={close} identical16={same} first_diff={first_diff} loom={''.join(toks[:12])!r}")
    print(f"check_logprobs_close: {close_n}/{len(prompts)}; identical over 16 tokens: {same_n}/{len(prompts)}")


def metrics(port):
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics").read().decode()
    out = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            name, value = line.rsplit(" ", 1)
            out[name.split("{")[0]] = float(value)
    return out


def kv_while_decoding(port, ids, after=8):
    """Streams a completion of ids and reads /metrics once `after` tokens have arrived."""
    body = json.dumps({"prompt": ids, "max_tokens": 64, "temperature": 0, "ignore_eos": True,
                       "stream": True}).encode()
    req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/completions", body,
                                 {"Content-Type": "application/json"})
    seen = 0
    with urllib.request.urlopen(req) as stream:
        for line in stream:
            if line.startswith(b"data: {"):
                seen += 1
                if seen == after:
                    m = metrics(port)
                    break
    print(f"long prompt of {len(ids)} tokens, decoding: kv_cache_used_blocks={m['loom:kv_cache_used_blocks']:.0f} "
          f"of {m['loom:kv_cache_total_blocks']:.0f} (usage {100 * m['loom:kv_cache_usage_perc']:.1f}%), "
          f"num_seqs={m['loom:kv_cache_num_seqs']:.0f}")


if __name__ == "__main__":
    main()
