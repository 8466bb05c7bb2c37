// `loom-bench perplexity`: token-level perplexity of a model on a text, through the executor
// and the configured quantization / attention plugins and KV dtype, for the accuracy report
// (docs/quantization.md): the same text under each weight format and KV dtype.
//
// The text is tokenized without specials and cut into non-overlapping windows of ctx - 1
// tokens; each window runs as one sequence [BOS, window...] (BOS when the model has one), and
// every window token is predicted from what precedes it in its window. So each text token is
// scored exactly once: ppl = exp(-(1/N) sum log p(token | its window prefix)).
//
// --compare-logits REF.gguf also measures how far the logits move from a reference (the f32
// model, quantization none, f32 KV): over the same windows of the first --compare-tokens text
// tokens, rel_rms = sqrt(sum (logit - ref)^2 / sum ref^2) over every position and vocab entry.
// Only those tokens are scored then (a random model's perplexity means nothing; its logits do).
//
// --windows llama scores the way llama.cpp's llama-perplexity does, so the two figures come from
// the same windows: the text is tokenized with the model's specials (BOS when add_bos), cut into
// floor(N / ctx) chunks of ctx tokens (the tail is dropped), each chunk's first token replaced by
// BOS when add_bos, and only the predictions of the second half are scored (positions ctx/2 ..
// ctx-2, predicting tokens ctx/2+1 .. ctx-1), so every scored token has at least ctx/2 of context.
//
// --dump-logits PREFIX writes each window's ids (PREFIX.ids, one window a line) and its logits
// (PREFIX.f32, raw f32 [window][vocab], windows in order) for a comparison with another engine's
// teacher-forced logits on the same ids (tools/peers/logits_vs_llama_cpp.py).
#pragma once

#include <cstdint>
#include <fstream>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace loom {
class Tokenizer;
}

namespace loom::bench {

class BenchSession;

struct PerplexityOptions {
  std::string model;                     // --model FILE.gguf
  std::string text;                      // --text FILE
  std::string quantization = "none";     // --quantization plugin
  std::string quantization_config = "{}";  // --quantization-config JSON
  std::string attention = "flash_cpu";   // --attention plugin
  std::string kv_dtype = "f32";          // --kv-dtype: f32, f16, bf16, int8, fp8_e4m3
  int32_t ctx = 0;                       // --ctx: window length incl. BOS; 0: min(512, model's)
  int32_t threads = 2;                   // --threads
  std::vector<std::string> plugin_dirs;  // --plugin-dir
  std::string json;                      // --json FILE
  std::string compare_logits;            // --compare-logits REF.gguf
  int32_t compare_tokens = 256;          // --compare-tokens N
  std::string windows = "loom";          // --windows loom|llama (see above)
  std::string dump_logits;               // --dump-logits PREFIX
  bool help = false;
};

struct PerplexityResult {
  int64_t tokens = 0;      // text tokens scored
  int32_t windows = 0;
  int32_t ctx = 0;         // window length used (incl. BOS)
  double nll = 0.0;        // sum of -log p over the scored tokens (nats)
  double perplexity = 0.0; // exp(nll / tokens)
};

struct LogitsError {
  int64_t positions = 0;  // logit rows compared
  double rel_rms = 0.0;   // RMS(logits - reference) / RMS(reference)
};

// One model loaded for scoring texts.
class PerplexityRun {
 public:
  explicit PerplexityRun(const PerplexityOptions& o);
  ~PerplexityRun();

  // The model's own tokenizer, no BOS/EOS added.
  std::vector<int32_t> tokenize(const std::string& text) const;
  // Perplexity of the given token ids (at least one), as described above.
  PerplexityResult score(std::span<const int32_t> ids);
  // The model's tokenizer with its specials (BOS when add_bos), for --windows llama.
  std::vector<int32_t> tokenize_with_specials(const std::string& text) const;
  // llama-perplexity's scoring of `ids` (tokenized with specials; at least 2 * ctx of them).
  PerplexityResult score_llama_windows(std::span<const int32_t> ids);
  // With a prefix set, every window scored from now on is also written out (see --dump-logits).
  void dump_windows_to(const std::string& prefix);
  // Logits of `ids` (at most per_window() of them) as one window after BOS: [window, vocab],
  // row i predicting window token i + 1; valid until the next call.
  std::span<const float> window_logits(std::span<const int32_t> ids);
  // Text tokens per window: ctx - 1 after BOS, or ctx when the model has none.
  size_t per_window() const;
  int32_t vocab() const;
  int32_t ctx() const { return ctx_; }

 private:
  int32_t ctx_;
  int32_t bos_;
  std::unique_ptr<BenchSession> session_;
  std::unique_ptr<Tokenizer> tokenizer_;
  std::vector<int32_t> window_;  // [ctx] one window's ids
  std::vector<float> logits_;    // [ctx, vocab]
  std::unique_ptr<std::ofstream> dump_ids_, dump_logits_;  // --dump-logits
  void dump_window();             // window_ and its logits_ rows, when dumping
};

// The logits of `run` against those of `reference` (same vocabulary and window length) on the
// windows of `ids`.
LogitsError logits_error(PerplexityRun& run, PerplexityRun& reference, std::span<const int32_t> ids);

// Parses argv[1..] (argv[0] is the subcommand). Throws loom::Error naming the option.
PerplexityOptions parse_perplexity_options(int argc, char** argv);
std::string perplexity_usage();  // the --help text

// argv[0] = "perplexity", then the options. Returns the exit status.
int perplexity_main(int argc, char** argv);

}  // namespace loom::bench
