#include "tools/convert/convert_args.hpp"

#include <cctype>
#include <functional>

#include "core/common/command_line.hpp"
#include "loom/sdk_dtype.hpp"
#include "tools/convert/quant_mix.hpp"
#include "tools/convert/weight_quantizer.hpp"

namespace loom::convert {
namespace {

constexpr const char* kModes = R"(loom-convert: write Llama GGUF model files.

Modes:
  loom-convert --llama2c MODEL.bin --tokenizer TOK.bin -o OUT.gguf [options]
      Convert a llama2.c legacy (v0) checkpoint and its tokenizer.bin to GGUF, laid out as
      llama.cpp's llama-convert-llama2c-to-ggml does (arch "llama", same tensor names and
      metadata keys). Weights are copied verbatim; the tokenizer's ' ' becomes U+2581 again.
      Default --dtype f32; the head is tied (no output.weight) when the checkpoint shares it.

  loom-convert --random (--preset NAME | --dims SPEC) --vocab-from TOKENIZER -o OUT.gguf [options]
      Write a random-weight Llama of any shape for benchmarks. The tokenizer (and the vocab
      size) is copied from TOKENIZER: a .gguf holding tokenizer.* metadata, or a llama2.c
      tokenizer .bin. Matrices are uniform with standard deviation 0.02 (same seed, same file),
      norms are 1. Tensors are generated while written, so a 16 GB file needs little RAM.
      Default --dtype f16; output.weight is written unless --tied.

  loom-convert --hf DIR -o OUT.gguf [--dtype f32|f16|bf16] [--name NAME]
      Convert a Hugging Face model directory (config.json, model.safetensors or shards,
      tokenizer.json, tokenizer_config.json) of a Llama, Mistral, Qwen2 or Qwen3 model: arch
      metadata, RoPE scaling, q/k rows permuted to GGUF's interleaved RoPE (llama family), the
      byte-level BPE tokenizer and the chat template. Default --dtype f32.

  loom-convert --input IN.gguf --quantize FORMAT -o OUT.gguf
      Rewrite a GGUF with its f32/f16/bf16 matrices quantized (metadata and other tensors
      copied). See --quantize; q4_k_m and q5_k_m choose each tensor's type as llama.cpp's
      llama-quantize Q4_K_M / Q5_K_M does.

  loom-convert --input IN.gguf --dtype f32|f16|bf16 -o OUT.gguf
      Dequantize every block-quantized tensor of a GGUF (q4_0, q8_0, q4_K, ...: whatever this
      build reads) to --dtype, metadata kept: a downloaded quantized model as a reference or as
      the source of another quantization.

  loom-convert --input IN.gguf --quantize int4 [--group-size 32|64|128] [--no-zero-point] -o OUT.gguf
      Pre-quantize for Loom's int4 plugin (likewise int8, fp8 without the int4 options).
)";

CLI::Validator rule(std::function<std::string(std::string&)> check) {
  return CLI::Validator([check = std::move(check)](std::string& value) { return check(value); }, "");
}

// "q8_0, q4_0, q4_k, q6_k, ...": the GGUF block formats --quantize writes in this build.
std::string gguf_format_names() {
  std::string s;
  for (const WeightQuantizer& q : weight_quantizers()) s += (s.empty() ? "" : ", ") + q.name;
  return s;
}

// --quantize VALUE, case-insensitive as llama-quantize's Q4_K_M: lower-cased in place, then one
// of the formats, a mix, or an error saying which (a ggml type this build cannot write is named).
std::string check_quantize_value(std::string& v) {
  for (char& c : v) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (find_weight_quantizer(v) != nullptr || is_loom_quant_format(v) || find_quant_mix(v) != nullptr) return "";
  for (int t = 2; t < 40; ++t) {
    std::string name = sdk::type_name(loom_dtype(t));
    for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (name == v) return "this build cannot write " + sdk::type_name(loom_dtype(t)) + "; it writes " + gguf_format_names();
  }
  std::string all = weight_quantizer_names();
  for (const QuantMix& m : quant_mixes()) all += ", " + m.name;
  return "'" + v + "' is not one of " + all;
}

// Every option of loom-convert, bound to `a` (--random, which only marks a mode, to `m`).
struct Marks {
  bool random = false;
};

void add_options(CLI::App& app, Args& a, Marks& m, std::string& dtype) {
  cli::apply_style(app);
  app.add_option("--llama2c", a.llama2c_model, "convert this llama2.c legacy (v0) checkpoint");
  app.add_flag("--random", m.random, "write a random-weight Llama (--preset or --dims, --vocab-from)");
  app.add_option("--hf", a.hf_dir, "convert this Hugging Face model directory");
  app.add_option("--input", a.input, "the model to quantize (with --quantize) or dequantize (with --dtype)");
  app.add_option("--tokenizer", a.tokenizer, "--llama2c: its tokenizer.bin");
  app.add_option("-o,--output", a.output, "output file (written as PATH.tmp, then renamed)");
  app.add_option("--name", a.name,
                 "general.name (default \"llama\" for --llama2c, the preset name or \"random-llama\" for --random)");
  app.add_option("--dtype", dtype,
                 "f32 | f16 | bf16 for the weight matrices (norms always stay f32); with --input, the type\n"
                 "every block-quantized tensor is dequantized to")
      ->check(CLI::IsMember({"f32", "f16", "bf16"}));
  app.add_option("--ctx", a.ctx, "llama.context_length (default: llama2.c seq_len / the preset's)")
      ->check(cli::integer_in(1));
  app.add_option("--preset", a.preset,
                 "tiny | llama-125m | llama-1b | llama-8b | gemma3-tiny | gemma3-270m | mixtral-tiny | mixtral-1b\n"
                 "  tiny        dim 64, hidden 172, 2 layers, 8 heads, 4 kv heads, ctx 512\n"
                 "  llama-125m  dim 768, hidden 2048, 12 layers, 12 heads, 12 kv, ctx 2048\n"
                 "  llama-1b    dim 2048, hidden 8192, 16 layers, 32 heads, 8 kv, ctx 2048\n"
                 "  llama-8b    dim 4096, hidden 14336, 32 layers, 32 heads, 8 kv, ctx 8192\n"
                 "  gemma3-tiny  gemma3: dim 64, hidden 128, 3 layers (window 8, every 3rd global), 4 heads, 1 kv, head_dim 32\n"
                 "  gemma3-270m  gemma3: dim 640, hidden 2048, 18 layers (window 512, every 6th global), 4 heads, 1 kv, head_dim 256\n"
                 "  mixtral-tiny  MoE: dim 64, 4 experts of hidden 128 (top 2), 2 layers, 8 heads, 4 kv\n"
                 "  mixtral-1b    MoE: dim 1024, 8 experts of hidden 3584 (top 2), 12 layers, 16 heads, 4 kv, ctx 4096");
  app.add_option("--dims", a.dims,
                 "dim=..,hidden=..,layers=..,heads=..[,kv_heads=..][,ctx=..][,rope_base=..][,eps=..]\n"
                 "(kv_heads defaults to heads, ctx to 2048)");
  app.add_option("--vocab-from", a.vocab_from,
                 "--random: copy the tokenizer from this .gguf or llama2.c tokenizer .bin");
  app.add_option("--seed", a.seed, "random seed (default 0)");
  app.add_flag("--tied", a.tied, "random model: no output.weight (the head reuses token_embd)");
  app.add_option("--quantize", a.quantize,
                 "a GGUF block format this build writes (" + gguf_format_names() + "): the weight\n"
                 "matrices in it (norms stay f32; the output head is q6_K unless the format is q8_0 or q6_k,\n"
                 "as in llama.cpp; a matrix whose rows are not whole blocks falls back: q4_k -> q4_0,\n"
                 "q6_k -> q8_0, ..., else unquantized, with a note).\n"
                 "q4_k_m | q5_k_m: llama.cpp's K-quant mixes, each tensor's type chosen as llama-quantize\n"
                 "does (q6_K for the head and some attn_v/ffn_down, q5_0/q5_1/q8_0 where rows are not whole\n"
                 "256-value blocks); refused when it needs a type this build cannot write.\n"
                 "int8 | int4 | fp8: the per-layer matrices pre-quantized bit for bit as Loom's plugin of\n"
                 "that name quantizes them at load (int8: I8 [out, in] + N.scale; fp8: E4M3 bytes as I8 +\n"
                 "N.scale; int4: nibbles I32 [out, in/8] + N.scale/N.zero [out, groups]); token_embd, the\n"
                 "head and norms keep their dtype; loom.quantization.format says which.\n"
                 "--llama2c/--random write --dtype first, to OUT.gguf.unquantized.tmp.")
      ->transform(rule([](std::string& v) { return check_quantize_value(v); }));  // transform: it lower-cases
  app.add_option("--group-size", a.group_size,
                 "int4: 32 | 64 | 128 input channels per scale (default 128), the plugin's \"group_size\"")
      ->check(CLI::IsMember({32, 64, 128}));
  app.add_flag("!--no-zero-point", a.zero_point,
               "int4: symmetric groups without zero points (no N.zero), as \"zero_point\": false");
  app.add_option("--smoothquant", a.smoothquant,
                 "int8: SmoothQuant calibrated on this text file: max |x_j| of every matrix input channel,\n"
                 "then W diag(s) quantized and N.smooth = s, s_j = max|x_j|^A / max|W[:, j]|^(1 - A)");
  app.add_option("--alpha", a.alpha, "SmoothQuant migration strength in [0, 1] (default 0.5)")
      ->check(CLI::Range(0.0f, 1.0f));
  app.footer("Exit status: 0 done, 1 the conversion failed, 2 bad arguments.");
}

}  // namespace

std::string usage_text() {
  Args a;
  Marks m;
  std::string dtype;
  CLI::App app{kModes, "loom-convert"};
  add_options(app, a, m, dtype);
  return app.help();
}

Args parse_args(const std::vector<std::string>& argv) {
  Args a;
  Marks m;
  std::string dtype;
  CLI::App app{kModes, "loom-convert"};
  add_options(app, a, m, dtype);
  bool help = false;
  try {
    help = cli::parse_or_throw(app, argv);
  } catch (const Error& e) {
    throw UsageError(e.what());
  }
  const bool llama2c = app.count("--llama2c") > 0, random = m.random;
  const bool int4_options = app.count("--group-size") > 0 || app.count("--no-zero-point") > 0;
  const bool alpha_given = app.count("--alpha") > 0;
  if (dtype == "f32") a.dtype = LOOM_DTYPE_F32;
  if (dtype == "f16") a.dtype = LOOM_DTYPE_F16;
  if (dtype == "bf16") a.dtype = LOOM_DTYPE_BF16;
  if (help) return a;
  if (int4_options && a.quantize != "int4") throw UsageError("--group-size and --no-zero-point need --quantize int4");
  if (!a.smoothquant.empty() && a.quantize != "int8") throw UsageError("--smoothquant needs --quantize int8");
  if (alpha_given && a.smoothquant.empty()) throw UsageError("--alpha needs --smoothquant CALIB.txt");
  const bool input = !a.input.empty(), hf = !a.hf_dir.empty();
  if (int{llama2c} + int{random} + int{input} + int{hf} != 1)
    throw UsageError("give exactly one of --llama2c MODEL.bin, --random, --input IN.gguf or --hf DIR");
  if (a.output.empty()) throw UsageError("missing -o OUT.gguf");
  if (hf) {
    a.mode = Mode::kHf;
    if (!a.tokenizer.empty() || !a.preset.empty() || !a.dims.empty() || !a.vocab_from.empty() || a.tied || a.ctx > 0)
      throw UsageError("--hf only takes --dtype, --name, --quantize and -o");
  } else if (input) {
    a.mode = Mode::kInput;
    if (a.quantize.empty() == !a.dtype) throw UsageError("--input needs one of --quantize FORMAT or --dtype f32|f16|bf16");
    if (!a.tokenizer.empty() || !a.preset.empty() || !a.dims.empty() || !a.vocab_from.empty() || a.tied)
      throw UsageError("--input only takes --quantize (with --group-size, --no-zero-point, --smoothquant, --alpha) "
                       "or --dtype, and -o");
  } else if (llama2c) {
    a.mode = Mode::kLlama2c;
    if (a.tokenizer.empty()) throw UsageError("--llama2c needs --tokenizer TOK.bin");
    if (!a.preset.empty() || !a.dims.empty() || !a.vocab_from.empty() || a.tied) {
      throw UsageError("--preset, --dims, --vocab-from and --tied only apply to --random");
    }
  } else {
    a.mode = Mode::kRandom;
    if (a.preset.empty() == a.dims.empty()) throw UsageError("--random needs exactly one of --preset NAME or --dims SPEC");
    if (a.vocab_from.empty()) throw UsageError("--random needs --vocab-from TOKENIZER (.gguf or llama2.c .bin)");
    if (!a.tokenizer.empty()) throw UsageError("--tokenizer only applies to --llama2c (use --vocab-from)");
  }
  return a;
}

}  // namespace loom::convert
