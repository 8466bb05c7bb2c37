// loom-convert: llama2.c checkpoints -> GGUF, and random-weight Llama GGUFs for benchmarks.
// See usage_text() (--help) for the command line.
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "core/common/error.hpp"
#include "core/formats/gguf_file.hpp"
#include "core/formats/llama2c_checkpoint.hpp"
#include "core/formats/llama_gguf_export.hpp"
#include "core/formats/model_presets.hpp"
#include "tools/convert/convert_args.hpp"
#include "tools/convert/gguf_dequantize.hpp"
#include "tools/convert/hf_convert.hpp"
#include "tools/convert/loom_quantized.hpp"
#include "tools/convert/quant_mix.hpp"
#include "tools/convert/smoothquant_calibration.hpp"
#include "tools/convert/weight_quantizer.hpp"

namespace {

using loom::convert::Args;

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// --vocab-from: a GGUF (by its magic) or a llama2.c tokenizer .bin.
loom::GgufMetadata load_tokenizer_metadata(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  char magic[4] = {};
  const bool is_gguf = f != nullptr && std::fread(magic, 1, 4, f) == 4 && std::string(magic, 4) == "GGUF";
  if (f != nullptr) std::fclose(f);
  if (is_gguf || ends_with(path, ".gguf")) return loom::tokenizer_metadata(loom::GgufFile::open(path));
  return loom::tokenizer_metadata(loom::Llama2cTokenizer::read(path));
}

// --smoothquant: the activation maxima of the float model `file` over the text file `path`.
loom::convert::ActivationMaxima calibrate(const loom::GgufFile& file, const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw loom::Error("--smoothquant: cannot read " + path);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto t0 = std::chrono::steady_clock::now();
  const std::vector<int32_t> tokens = loom::convert::calibration_tokens(file, text);
  loom::convert::ActivationMaxima m = loom::convert::collect_activation_maxima(file, tokens);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::fprintf(stderr, "loom-convert: SmoothQuant calibration over %zu tokens of %s in %.1f s\n", tokens.size(),
               path.c_str(), secs);
  return m;
}

// Writes `in` with its matrices quantized (weight_quantizer.hpp, or loom_quantized.hpp for
// int8/int4/fp8) to `out`.
void quantize_file(const std::string& in, const Args& a, const std::string& out) {
  const loom::GgufFile file = loom::GgufFile::open(in);
  std::vector<std::string> notes;
  const auto t0 = std::chrono::steady_clock::now();
  loom::convert::ActivationMaxima maxima;
  if (!a.smoothquant.empty()) maxima = calibrate(file, a.smoothquant);
  const loom::convert::LoomQuantOptions lo{a.quantize, a.group_size, a.zero_point,
                                           a.smoothquant.empty() ? nullptr : &maxima, a.alpha};
  const loom::convert::QuantMix* mix = loom::convert::find_quant_mix(a.quantize);
  const loom::GgufWriter w =
      loom::convert::is_loom_quant_format(a.quantize) ? loom::convert::loom_quantize_gguf(file, lo, &notes)
      : mix != nullptr ? loom::convert::quantize_gguf_mix(file, *mix, &notes)
                       : loom::convert::quantize_gguf(file, *loom::convert::find_weight_quantizer(a.quantize), &notes);
  for (const std::string& n : notes) std::fprintf(stderr, "loom-convert: note: %s\n", n.c_str());
  w.write(out);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::fprintf(stderr, "loom-convert: wrote %s (%zu tensors, matrices %s) in %.1f s\n", out.c_str(), w.tensor_count(),
               a.quantize.c_str(), secs);
}

// --input IN.gguf --dtype: every block-quantized tensor dequantized (gguf_dequantize.hpp).
void dequantize_file(const Args& a) {
  const loom::GgufFile file = loom::GgufFile::open(a.input);
  std::vector<std::string> notes;
  const auto t0 = std::chrono::steady_clock::now();
  const loom::GgufWriter w = loom::convert::dequantize_gguf(file, *a.dtype, &notes);
  for (const std::string& n : notes) std::fprintf(stderr, "loom-convert: note: %s\n", n.c_str());
  w.write(a.output);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::fprintf(stderr, "loom-convert: wrote %s (%zu tensors, dequantized to %s) in %.1f s\n", a.output.c_str(),
               w.tensor_count(), loom::dtype_name(*a.dtype), secs);
}

// --quantize with --llama2c/--random: the unquantized model goes to a temporary file first.
std::string stage_output(const Args& a) { return a.quantize.empty() ? a.output : a.output + ".unquantized.tmp"; }

void finish_quantize(const Args& a) {
  if (a.quantize.empty()) return;
  const std::string staged = stage_output(a);
  try {
    quantize_file(staged, a, a.output);
  } catch (...) {
    std::filesystem::remove(staged);
    throw;
  }
  std::filesystem::remove(staged);
}

void run_llama2c(const Args& a) {
  const auto ck = loom::Llama2cCheckpoint::open(a.llama2c_model);
  const auto tok = loom::Llama2cTokenizer::read(a.tokenizer, ck.config().vocab_size);
  loom::Llama2cConvertOptions opts;
  if (!a.name.empty()) opts.name = a.name;
  opts.dtype = a.dtype.value_or(LOOM_DTYPE_F32);
  opts.context_length = a.ctx;
  const auto& c = ck.config();
  std::fprintf(stderr, "loom-convert: %s: dim %d, hidden %d, layers %d, heads %d/%d, vocab %d, seq_len %d, %s head\n",
               a.llama2c_model.c_str(), c.dim, c.hidden_dim, c.n_layers, c.n_heads, c.n_kv_heads, c.vocab_size,
               c.seq_len, c.shared_classifier ? "tied" : "separate");
  const loom::GgufWriter w = loom::llama2c_to_gguf(ck, tok, opts);
  w.write(stage_output(a));
  std::fprintf(stderr, "loom-convert: wrote %s (%zu tensors, %s)\n", stage_output(a).c_str(), w.tensor_count(),
               loom::dtype_name(opts.dtype));
  finish_quantize(a);
}

void run_random(const Args& a) {
  loom::RandomLlamaOptions opts;
  opts.shape = a.preset.empty() ? loom::parse_llama_dims(a.dims) : loom::llama_preset(a.preset);
  if (a.ctx > 0) opts.shape.context_length = a.ctx;
  opts.shape.tied_output = opts.shape.tied_output || a.tied;  // gemma3 presets are tied already
  opts.dtype = a.dtype.value_or(LOOM_DTYPE_F16);
  opts.seed = a.seed;
  opts.name = !a.name.empty() ? a.name : !a.preset.empty() ? a.preset : "random-llama";
  const loom::GgufMetadata tokenizer = load_tokenizer_metadata(a.vocab_from);
  const loom::GgufWriter w = loom::random_llama_gguf(opts, tokenizer);
  const auto t0 = std::chrono::steady_clock::now();
  w.write(stage_output(a));
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::fprintf(stderr, "loom-convert: wrote %s (%zu tensors, %s, vocab %lld) in %.1f s\n", stage_output(a).c_str(),
               w.tensor_count(), loom::dtype_name(opts.dtype),
               static_cast<long long>(loom::tokenizer_vocab_size(tokenizer)), secs);
  finish_quantize(a);
}

void run_hf(const Args& a) {
  const auto src = loom::ModelSource::open(a.hf_dir);
  loom::convert::HfConvertOptions opts;
  opts.dtype = a.dtype.value_or(LOOM_DTYPE_F32);
  opts.name = a.name;
  std::vector<std::string> notes;
  const loom::GgufWriter w = loom::convert::hf_to_gguf(*src, opts, &notes);
  for (const std::string& n : notes) std::fprintf(stderr, "loom-convert: note: %s\n", n.c_str());
  w.write(stage_output(a));
  std::fprintf(stderr, "loom-convert: wrote %s (%s, %zu tensors, %s)\n", stage_output(a).c_str(),
               src->hparams().architecture.c_str(), w.tensor_count(), loom::dtype_name(opts.dtype));
  finish_quantize(a);
}

}  // namespace

int main(int argc, char** argv) {
  Args args;
  try {
    args = loom::convert::parse_args(std::vector<std::string>(argv + 1, argv + argc));
  } catch (const loom::convert::UsageError& e) {
    std::fprintf(stderr, "loom-convert: %s\nRun with --help for more information.\n", e.what());
    return 2;
  }
  try {
    switch (args.mode) {
      case loom::convert::Mode::kHelp: std::fputs(loom::convert::usage_text().c_str(), stdout); return 0;
      case loom::convert::Mode::kLlama2c: run_llama2c(args); return 0;
      case loom::convert::Mode::kRandom: run_random(args); return 0;
      case loom::convert::Mode::kInput:
        if (args.quantize.empty())
          dequantize_file(args);
        else
          quantize_file(args.input, args, args.output);
        return 0;
      case loom::convert::Mode::kHf: run_hf(args); return 0;
    }
  } catch (const loom::Error& e) {
    // --dims/--preset mistakes surface here as loom::Error too: they are usage errors.
    const std::string msg = e.what();
    std::fprintf(stderr, "loom-convert: %s\n", msg.c_str());
    return msg.rfind("--dims", 0) == 0 || msg.rfind("unknown model preset", 0) == 0 || msg.rfind("model shape", 0) == 0 ? 2 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "loom-convert: %s\n", e.what());
    return 1;
  }
  return 1;
}
