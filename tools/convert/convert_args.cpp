#include "tools/convert/convert_args.hpp"

#include <charconv>
#include <cstdlib>

#include "tools/convert/weight_quantizer.hpp"

namespace loom::convert {
namespace {

loom_dtype parse_dtype(const std::string& s) {
  if (s == "f32") return LOOM_DTYPE_F32;
  if (s == "f16") return LOOM_DTYPE_F16;
  if (s == "bf16") return LOOM_DTYPE_BF16;
  throw UsageError("--dtype '" + s + "' is not one of f32, f16, bf16");
}

template <typename T>
T parse_number(const std::string& flag, const std::string& s) {
  T v{};
  const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || ptr != s.data() + s.size()) {
    throw UsageError(flag + " '" + s + "' is not a non-negative integer");
  }
  return v;
}

}  // namespace

const char* usage_text() {
  return R"(loom-convert: write Llama GGUF model files.

Usage:
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
      copied). See --quantize.

  loom-convert --input IN.gguf --quantize int4 [--group-size 32|64|128] [--no-zero-point] -o OUT.gguf
      Pre-quantize for Loom's int4 plugin (likewise int8, fp8 without the int4 options).

Options:
  -o, --output PATH    output file (written as PATH.tmp, then renamed)
  --name NAME          general.name (default "llama" for --llama2c, the preset name or
                       "random-llama" for --random)
  --dtype T            f32 | f16 | bf16 for the weight matrices (norms always stay f32)
  --ctx N              llama.context_length (default: llama2.c seq_len / the preset's)
  --preset NAME        tiny | llama-125m | llama-1b | llama-8b
                         tiny        dim 64, hidden 172, 2 layers, 8 heads, 4 kv heads, ctx 512
                         llama-125m  dim 768, hidden 2048, 12 layers, 12 heads, 12 kv, ctx 2048
                         llama-1b    dim 2048, hidden 8192, 16 layers, 32 heads, 8 kv, ctx 2048
                         llama-8b    dim 4096, hidden 14336, 32 layers, 32 heads, 8 kv, ctx 8192
  --dims SPEC          dim=..,hidden=..,layers=..,heads=..[,kv_heads=..][,ctx=..]
                       [,rope_base=..][,eps=..]   (kv_heads defaults to heads, ctx to 2048)
  --seed N             random seed (default 0)
  --tied               random model: no output.weight (the head reuses token_embd)
  --quantize FORMAT    q8_0 | q4_0 | q4_k | q6_k: write the weight matrices in this GGUF block
                       format (norms stay f32). With q4_0/q4_k the output head is q6_K, as in
                       llama.cpp; a matrix whose rows are not whole blocks falls back (q4_k ->
                       q4_0, q6_k -> q8_0, else left unquantized) with a note on stderr.
                       int8 | int4 | fp8: write the per-layer matrices pre-quantized, bit for
                       bit as Loom's quantization plugin of that name quantizes them at load
                       (serve the file with that plugin): int8 I8 [out, in] + N.scale (one f32
                       per output channel); fp8 E4M3 bytes as I8 [out, in] + N.scale; int4
                       packed nibbles I32 [out, in/8] + N.scale [out, groups] + N.zero
                       [out, groups]. token_embd, the output head and norms keep their dtype;
                       metadata loom.quantization.format (and .group_size, .zero_point) says
                       which; general.file_type stays the source's.
                       --llama2c/--random write --dtype first, to OUT.gguf.unquantized.tmp.
  --group-size N       int4: 32 | 64 | 128 input channels per scale (default 128; the last
                       group of a row is short when N does not divide it), as the int4
                       plugin's "group_size"
  --no-zero-point      int4: symmetric groups without zero points (no N.zero), as the int4
                       plugin's "zero_point": false
  --smoothquant TXT    int8: SmoothQuant. Runs the float model over the text file TXT (its
                       tokenizer, chunks of up to 256 tokens) recording max |x_j| of every
                       matrix input channel j, then stores W diag(s) quantized and N.smooth =
                       s, s_j = max|x_j|^A / max|W[:, j]|^(1 - A); the int8 plugin divides
                       activations by s (as its w8a8 calibration does).
  --alpha A            SmoothQuant migration strength in [0, 1] (default 0.5)
  --input IN.gguf      the model to quantize (needs --quantize)
  -h, --help           this text

Exit status: 0 done, 1 the conversion failed, 2 bad arguments.
)";
}

Args parse_args(const std::vector<std::string>& argv) {
  Args a;
  bool llama2c = false, random = false, help = false, int4_options = false, alpha_given = false;
  auto value = [&](size_t& i) -> const std::string& {
    if (i + 1 >= argv.size()) throw UsageError(argv[i] + " needs a value");
    return argv[++i];
  };
  for (size_t i = 0; i < argv.size(); ++i) {
    const std::string& f = argv[i];
    if (f == "-h" || f == "--help") {
      help = true;
    } else if (f == "--llama2c") {
      llama2c = true;
      a.llama2c_model = value(i);
    } else if (f == "--random") {
      random = true;
    } else if (f == "--tokenizer") {
      a.tokenizer = value(i);
    } else if (f == "-o" || f == "--output") {
      a.output = value(i);
    } else if (f == "--name") {
      a.name = value(i);
    } else if (f == "--dtype") {
      a.dtype = parse_dtype(value(i));
    } else if (f == "--ctx") {
      a.ctx = parse_number<int64_t>(f, value(i));
      if (a.ctx <= 0) throw UsageError("--ctx must be positive");
    } else if (f == "--preset") {
      a.preset = value(i);
    } else if (f == "--dims") {
      a.dims = value(i);
    } else if (f == "--vocab-from") {
      a.vocab_from = value(i);
    } else if (f == "--seed") {
      a.seed = parse_number<uint64_t>(f, value(i));
    } else if (f == "--tied") {
      a.tied = true;
    } else if (f == "--quantize") {
      a.quantize = value(i);
      if (find_weight_quantizer(a.quantize) == nullptr && !is_loom_quant_format(a.quantize))
        throw UsageError("--quantize '" + a.quantize + "' is not one of " + weight_quantizer_names());
    } else if (f == "--group-size") {
      a.group_size = parse_number<int64_t>(f, value(i));
      if (a.group_size != 32 && a.group_size != 64 && a.group_size != 128)
        throw UsageError("--group-size must be 32, 64 or 128, got " + std::to_string(a.group_size));
      int4_options = true;
    } else if (f == "--no-zero-point") {
      a.zero_point = false;
      int4_options = true;
    } else if (f == "--smoothquant") {
      a.smoothquant = value(i);
    } else if (f == "--alpha") {
      const std::string& v = value(i);
      char* end = nullptr;
      a.alpha = std::strtof(v.c_str(), &end);
      if (v.empty() || end != v.c_str() + v.size() || !(a.alpha >= 0.0f && a.alpha <= 1.0f))
        throw UsageError("--alpha '" + v + "' is not a number in [0, 1]");
      alpha_given = true;
    } else if (f == "--hf") {
      a.hf_dir = value(i);
    } else if (f == "--input") {
      a.input = value(i);
    } else {
      throw UsageError("unknown argument '" + f + "'");
    }
  }
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
    if (a.quantize.empty()) throw UsageError("--input needs --quantize FORMAT");
    if (a.dtype || !a.tokenizer.empty() || !a.preset.empty() || !a.dims.empty() || !a.vocab_from.empty() || a.tied)
      throw UsageError("--input only takes --quantize (with --group-size, --no-zero-point, --smoothquant, --alpha) and -o");
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
