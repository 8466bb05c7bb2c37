#!/usr/bin/env python3
"""Tiny random-weight Hugging Face checkpoints and their transformers outputs, the numerics
oracle for Loom's HF loader (tests/unit/test_executor_hf_numerics.cpp, tests/e2e/test_e2e_hf_models.cpp).

For each architecture: a 2-layer, hidden-16 model built with transformers, weights rounded to
bf16 and saved as bf16 safetensors (so the files stay small and Loom reads exactly the values
transformers computed with), plus expected.json: for 3 fixed prompts (token ids), 20 greedy
steps with the chosen token and the top-5 (id, logprob) of every step, computed in float32
with the eager attention path. Llama and Qwen3 keep the real tokenizer files (for serving
tests), so their vocab is the tokenizer's and the embedding is tied; Mistral and Qwen2 use a
4096-token vocab with an untied classifier. For the two with a tokenizer, expected.json also
holds a chat conversation rendered by transformers' apply_chat_template with the checkpoint's
own template (add_generation_prompt=True), its prompt ids and CHAT_STEPS greedy steps.

The mixture-of-experts families (Mixtral, Qwen2-MoE with its shared expert, Qwen3-MoE, OLMoE) are
built the same way with a 512-token vocab, MOE_STEPS greedy steps, and for each step also the
top-8 raw logits and the row's largest |logit| (the scale of a relative tolerance). Their seeds
are searched until every router decision of every step is clear: the k-th and (k+1)-th expert
probabilities of every token in every layer differ by at least ROUTER_GAP, so f32 rounding cannot
swap an expert. They share a 512-token byte-level BPE tokenizer trained here on seeded random
words (hf_tokenizers/tiny512/, written beside OUT_DIR), so the server can run them.

The tokenizer files are relative symlinks into OUT_DIR/../hf_tokenizers/ when that holds the
same bytes (the repository keeps one copy), copies otherwise.

Usage: python tools/hf/make_tiny_checkpoints.py OUT_DIR [ARCH ...]   (committed as tests/data/hf/;
       naming architectures rebuilds only those)
Needs: torch, transformers (PyPI).
"""
import filecmp
import json
import os
import shutil
import sys

import torch
import transformers

ASSETS = os.path.join(os.path.dirname(__file__), "..", "..", "..", "shared", "assets", "hf_tokenizers")
STEPS = 20
CHAT_STEPS = 12
TOP = 5
MOE_STEPS = 32
TOP_LOGITS = 8
ROUTER_GAP = 2e-4
MIN_DISTINCT = 5  # greedy tokens per prompt: a sequence repeating one token is a weak oracle
CONVERSATION = [
    dict(role="system", content="You are a terse assistant."),
    dict(role="user", content="Name three primary colours."),
    dict(role="assistant", content="Red, yellow and blue."),
    dict(role="user", content="And the secondary ones?"),
]


def tiny_tokenizer(out_root):
    """A byte-level BPE of exactly 512 tokens (<pad>, <s>, </s>, the 256 bytes, merges), trained
    deterministically on seeded random words; returns its directory."""
    import random
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    rng = random.Random(5)
    words = ["".join(rng.choice("etaoinshrdlucmfwypvbgkjqxz") for _ in range(rng.randint(2, 7))) for _ in range(3000)]
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=512, special_tokens=["<pad>", "<s>", "</s>"], show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator([" ".join(words[i:i + 12]) + "." for i in range(0, len(words), 12)], trainer)
    assert tok.get_vocab_size() == 512
    out = os.path.join(out_root, "..", "hf_tokenizers", "tiny512")
    os.makedirs(out, exist_ok=True)
    tok.save(os.path.join(out, "tokenizer.json"))
    with open(os.path.join(out, "tokenizer_config.json"), "w") as f:
        json.dump(dict(add_bos_token=False, add_eos_token=False, bos_token="<s>", eos_token="</s>",
                       pad_token="<pad>", tokenizer_class="PreTrainedTokenizerFast"), f, indent=1)
    return out


def tokenizer_vocab_size(path):
    with open(os.path.join(path, "tokenizer.json")) as f:
        tj = json.load(f)
    ids = list(tj["model"]["vocab"].values()) + [t["id"] for t in tj.get("added_tokens", [])]
    return max(ids) + 1


def specs():
    llama_tok = os.path.join(ASSETS, "llama3")
    qwen_tok = os.path.join(ASSETS, "qwen3")
    common = dict(hidden_size=16, intermediate_size=32, num_hidden_layers=2, max_position_embeddings=256,
                  rms_norm_eps=1e-5, hidden_act="silu")
    return [
        ("llama", transformers.LlamaConfig, llama_tok, dict(
            common, vocab_size=tokenizer_vocab_size(llama_tok), num_attention_heads=2, num_key_value_heads=1,
            rope_theta=500000.0, tie_word_embeddings=True, bos_token_id=128000, eos_token_id=[128001, 128009],
            rope_scaling=dict(rope_type="llama3", factor=8.0, low_freq_factor=1.0, high_freq_factor=4.0,
                              original_max_position_embeddings=64))),
        ("mistral", transformers.MistralConfig, None, dict(
            common, vocab_size=4096, num_attention_heads=4, num_key_value_heads=2, head_dim=4, rope_theta=10000.0,
            tie_word_embeddings=False, sliding_window=128, bos_token_id=1, eos_token_id=2)),
        ("qwen2", transformers.Qwen2Config, None, dict(
            common, vocab_size=4096, num_attention_heads=4, num_key_value_heads=2, rope_theta=1000000.0,
            tie_word_embeddings=False, use_sliding_window=False, bos_token_id=1, eos_token_id=2)),
        ("qwen3", transformers.Qwen3Config, qwen_tok, dict(
            common, vocab_size=tokenizer_vocab_size(qwen_tok), num_attention_heads=4, num_key_value_heads=2,
            head_dim=8, rope_theta=1000000.0, tie_word_embeddings=True, eos_token_id=[151645, 151643],
            bos_token_id=None)),
    ]


def moe_specs():
    common = dict(hidden_size=16, num_hidden_layers=2, max_position_embeddings=256, rms_norm_eps=1e-5,
                  hidden_act="silu", vocab_size=512, num_attention_heads=4, num_key_value_heads=2,
                  tie_word_embeddings=False, bos_token_id=1, eos_token_id=2)
    return [
        ("mixtral", transformers.MixtralConfig, None, dict(
            common, intermediate_size=32, num_local_experts=4, num_experts_per_tok=2, rope_theta=1000000.0,
            sliding_window=None)),
        ("qwen2_moe", transformers.Qwen2MoeConfig, None, dict(
            common, intermediate_size=32, moe_intermediate_size=16, shared_expert_intermediate_size=24,
            num_experts=4, num_experts_per_tok=2, norm_topk_prob=False, decoder_sparse_step=1, mlp_only_layers=[],
            rope_theta=1000000.0, use_sliding_window=False)),
        ("qwen3_moe", transformers.Qwen3MoeConfig, None, dict(
            common, intermediate_size=32, moe_intermediate_size=16, num_experts=8, num_experts_per_tok=2,
            norm_topk_prob=True, decoder_sparse_step=1, mlp_only_layers=[], head_dim=8, rope_theta=1000000.0,
            use_sliding_window=False)),
        ("olmoe", transformers.OlmoeConfig, None, dict(
            common, intermediate_size=16, num_experts=8, num_experts_per_tok=2, norm_topk_prob=False,
            rope_theta=10000.0, clip_qkv=None)),
    ]


class RouterWatch:
    """The smallest gap between the k-th and (k+1)-th router probability of any token seen."""

    def __init__(self, model, top_k):
        self.top_k, self.gap = top_k, float("inf")
        for name, mod in model.named_modules():
            gate = getattr(mod, "gate", None)
            if name.endswith(("mlp", "block_sparse_moe")) and isinstance(getattr(gate, "weight", None), torch.Tensor):
                mod.register_forward_pre_hook(self.hook(gate.weight))

    def hook(self, weight):
        def pre(_, args):
            probs = torch.softmax((args[0].reshape(-1, weight.shape[1]) @ weight.T).double(), dim=-1)
            top = torch.topk(probs, self.top_k + 1, dim=-1).values
            self.gap = min(self.gap, float((top[:, self.top_k - 1] - top[:, self.top_k]).min()))
        return pre


def randomize(model, gen, tied):
    # Large weights so logits are peaked: random init at std 0.02 gives near-ties in the top-5.
    # With a tied classifier the residual stream still carries the input token's embedding, which
    # the classifier maps back to that same token, so greedy decoding repeats one token; larger
    # output projections (o_proj, down_proj) let the layers outweigh it.
    out_scale = 12.0 if tied else 1.0
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("norm.weight") or "layernorm" in name:
                p.copy_(0.5 + torch.rand(p.shape, generator=gen))
            elif "embed_tokens" in name:
                p.copy_(torch.randn(p.shape, generator=gen))
            else:
                std = 1.0 / p.shape[-1] ** 0.5 if p.dim() > 1 else 0.5
                if name.endswith(("o_proj.weight", "down_proj.weight")):
                    std *= out_scale
                p.copy_(torch.randn(p.shape, generator=gen) * std)
            p.copy_(p.to(torch.bfloat16).to(torch.float32))  # what the bf16 file holds


def run(model, prompt, n_steps=STEPS, raw_logits=False):
    ids = list(prompt)
    steps = []
    with torch.no_grad():
        for _ in range(n_steps):
            logits = model(torch.tensor([ids])).logits[0, -1].double()
            lp = torch.log_softmax(logits, dim=-1)
            top = torch.topk(lp, TOP + 1)
            tok = int(top.indices[0])
            steps.append(dict(token=tok, top_ids=[int(i) for i in top.indices[:TOP]],
                              top_logprobs=[float(v) for v in top.values[:TOP]],
                              gap_5_6=float(top.values[TOP - 1] - top.values[TOP]),
                              gap_1_2=float(top.values[0] - top.values[1])))
            if raw_logits:
                raw = torch.topk(logits, TOP_LOGITS)
                steps[-1].update(logit_ids=[int(i) for i in raw.indices], logits=[float(v) for v in raw.values],
                                 logit_scale=float(logits.abs().max()))
            ids.append(tok)
    return steps


def link_or_copy(src, out_root, tok_name, out, f):
    dst = os.path.join(out, f)
    if os.path.lexists(dst):
        os.remove(dst)
    repo_copy = os.path.join(out_root, "..", "hf_tokenizers", tok_name, f)
    if os.path.exists(repo_copy) and filecmp.cmp(src, repo_copy, shallow=False):
        os.symlink(os.path.join("..", "..", "hf_tokenizers", tok_name, f), dst)
    else:
        shutil.copy(src, dst)


def chat_case(model, tok_dir, eos_ids):
    tok = transformers.AutoTokenizer.from_pretrained(tok_dir)
    text = tok.apply_chat_template(CONVERSATION, add_generation_prompt=True, tokenize=False)
    # What apply_chat_template(tokenize=True) does: the template already holds any BOS.
    ids = tok(text, add_special_tokens=False)["input_ids"]
    steps = run(model, ids, CHAT_STEPS)
    tokens = [s["token"] for s in steps]
    if set(tokens) & set(eos_ids):
        raise SystemExit(f"chat greedy hits an end-of-sequence token: {tokens}")
    return dict(messages=CONVERSATION, prompt_text=text, prompt=ids, steps=steps)


def build(arch, cfg_cls, kw, seed):
    torch.manual_seed(1234)
    gen = torch.Generator().manual_seed(seed)
    cfg = cfg_cls(**kw)
    cfg._attn_implementation = "eager"
    model = transformers.AutoModelForCausalLM.from_config(cfg, attn_implementation="eager").float().eval()
    randomize(model, gen, kw["tie_word_embeddings"])
    return model


def main():
    out_root = sys.argv[1]
    only = set(sys.argv[2:])
    tiny_tok = tiny_tokenizer(out_root) if not only or only & {s[0] for s in moe_specs()} else None
    for arch, cfg_cls, tok_dir, kw, moe in [s + (False,) for s in specs()] + [s + (True,) for s in moe_specs()]:
        if only and arch not in only:
            continue
        vocab = kw["vocab_size"]
        pgen = torch.Generator().manual_seed(7)
        prompts = [[int(x) for x in torch.randint(0, min(vocab, 30000), (n,), generator=pgen)] for n in (3, 7, 12)]
        seed = sum(map(ord, arch)) + 2
        for attempt in range(40 if moe else 1):
            model = build(arch, cfg_cls, kw, seed + attempt)
            watch = RouterWatch(model, kw["num_experts_per_tok"]) if moe else None
            results = [dict(prompt=p, steps=run(model, p, MOE_STEPS if moe else STEPS, raw_logits=moe))
                       for p in prompts]
            if not moe or watch.gap >= ROUTER_GAP:
                break
            print(arch, "seed", seed + attempt, "router gap", watch.gap, "too small, next seed")
        else:
            raise SystemExit(f"{arch}: no seed gives clear router decisions")
        distinct = [len({s["token"] for s in r["steps"]}) for r in results]
        if min(distinct) < MIN_DISTINCT:
            raise SystemExit(f"{arch}: greedy sequences too repetitive, distinct tokens per prompt {distinct}")
        eos = kw["eos_token_id"] if isinstance(kw["eos_token_id"], list) else [kw["eos_token_id"]]
        chat = chat_case(model, tok_dir, eos) if tok_dir else None
        if moe:
            tok_dir = tiny_tok  # no chat case: the tiny tokenizer has no template
        out = os.path.join(out_root, arch)
        os.makedirs(out, exist_ok=True)
        model.to(torch.bfloat16).save_pretrained(out, safe_serialization=True)
        if tok_dir:
            for f in ("tokenizer.json", "tokenizer_config.json"):
                link_or_copy(os.path.join(tok_dir, f), out_root, os.path.basename(tok_dir), out, f)
        doc = dict(architecture=arch, transformers=transformers.__version__, torch=torch.__version__,
                   steps=MOE_STEPS if moe else STEPS, top=TOP, results=results)
        if moe:
            doc["router_gap"] = watch.gap
        if chat:
            doc["chat"] = chat
        with open(os.path.join(out, "expected.json"), "w") as f:
            json.dump(doc, f, indent=1)
        gaps = [s["gap_5_6"] for r in results for s in r["steps"]] + [s["gap_1_2"] for r in results for s in r["steps"]]
        if chat:
            gaps += [s["gap_1_2"] for s in chat["steps"]]
        print(arch, "min gap", min(gaps), "distinct", distinct, "chat", chat and [s["token"] for s in chat["steps"]],
              "router gap", watch and watch.gap, "files", sorted(os.listdir(out)))


if __name__ == "__main__":
    main()
