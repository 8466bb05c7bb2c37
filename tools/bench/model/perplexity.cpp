#include "tools/bench/model/perplexity.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/common/error.hpp"
#include "core/tokenizer/tokenizer.hpp"
#include "loom/sdk_kv_quant.hpp"
#include "tools/bench/model/bench_options.hpp"
#include "tools/bench/model/bench_session.hpp"

namespace loom::bench {
namespace {

constexpr int32_t kDefaultCtx = 512;

loom_dtype kv_dtype_of(const std::string& name) {
  const loom_dtype t = sdk::kv::dtype_from_name(name.c_str());
  if (t == LOOM_DTYPE_INVALID)
    throw Error("--kv-dtype must be f32, f16, bf16, int8 or fp8_e4m3, got \"" + name + "\"");
  return t;
}

// The window length: --ctx, or the model's context capped at kDefaultCtx.
int32_t window_length(const PerplexityOptions& o) {
  if (o.ctx != 0) return o.ctx;
  const GgufFile file = GgufFile::open(o.model);
  const int32_t model_ctx = load_llama_weights(file).hparams.context_length;  // views into the mapping
  return model_ctx > 0 ? std::min(model_ctx, kDefaultCtx) : kDefaultCtx;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error("--text: cannot open \"" + path + "\"");
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// -log softmax(row)[target], in double so a long text's sum does not drift.
double token_nll(const float* row, int32_t vocab, int32_t target) {
  float max = row[0];
  for (int32_t v = 1; v < vocab; ++v) max = std::max(max, row[v]);
  double sum = 0.0;
  for (int32_t v = 0; v < vocab; ++v) sum += std::exp(static_cast<double>(row[v]) - max);
  return std::log(sum) - (static_cast<double>(row[target]) - max);
}

}  // namespace

PerplexityRun::PerplexityRun(const PerplexityOptions& o) : ctx_(window_length(o)) {
  if (ctx_ < 2) throw Error("--ctx must be at least 2 (BOS and one token), got " + std::to_string(ctx_));
  session_ = std::make_unique<BenchSession>(SessionSpec{o.model, o.threads, o.attention, o.quantization,
                                                        o.plugin_dirs, 1, ctx_, kv_dtype_of(o.kv_dtype),
                                                        o.quantization_config});
  tokenizer_ = load_tokenizer(session_->file());
  bos_ = tokenizer_->bos_id();
  window_.reserve(static_cast<size_t>(ctx_));
}

PerplexityRun::~PerplexityRun() = default;

std::vector<int32_t> PerplexityRun::tokenize(const std::string& text) const {
  return tokenizer_->encode(text, /*add_special=*/false);
}

size_t PerplexityRun::per_window() const { return static_cast<size_t>(bos_ >= 0 ? ctx_ - 1 : ctx_); }

int32_t PerplexityRun::vocab() const { return session_->hparams().vocab_size; }

std::span<const float> PerplexityRun::window_logits(std::span<const int32_t> ids) {
  if (ids.empty() || ids.size() > per_window())
    throw Error("perplexity: a window holds 1 to " + std::to_string(per_window()) + " text tokens, got " +
                std::to_string(ids.size()));
  window_.clear();
  if (bos_ >= 0) window_.push_back(bos_);
  window_.insert(window_.end(), ids.begin(), ids.end());
  session_->score(window_, logits_);
  dump_window();
  return std::span<const float>(logits_).first(window_.size() * static_cast<size_t>(vocab()));
}

std::vector<int32_t> PerplexityRun::tokenize_with_specials(const std::string& text) const {
  return tokenizer_->encode(text, /*add_special=*/true);
}

void PerplexityRun::dump_windows_to(const std::string& prefix) {
  dump_ids_ = std::make_unique<std::ofstream>(prefix + ".ids");
  dump_logits_ = std::make_unique<std::ofstream>(prefix + ".f32", std::ios::binary);
  if (!*dump_ids_ || !*dump_logits_) throw Error("--dump-logits: cannot write \"" + prefix + ".ids/.f32\"");
}

void PerplexityRun::dump_window() {
  if (!dump_ids_) return;
  for (size_t i = 0; i < window_.size(); ++i) *dump_ids_ << (i ? " " : "") << window_[i];
  *dump_ids_ << "\n";
  dump_logits_->write(reinterpret_cast<const char*>(logits_.data()),
                      static_cast<std::streamsize>(window_.size() * static_cast<size_t>(vocab()) * sizeof(float)));
  // Whole windows on disk at every point, so a reader never sees half of one.
  dump_ids_->flush();
  dump_logits_->flush();
}

PerplexityResult PerplexityRun::score_llama_windows(std::span<const int32_t> ids) {
  const auto ctx = static_cast<size_t>(ctx_);
  if (ids.size() < 2 * ctx)
    throw Error("--windows llama needs at least 2 * ctx = " + std::to_string(2 * ctx) + " tokens, the text has " +
                std::to_string(ids.size()));
  const int32_t vocab = this->vocab();
  // The interface has no add_bos flag: an empty text encoded with specials shows it.
  const std::vector<int32_t> specials = tokenizer_->encode("", /*add_special=*/true);
  const bool add_bos = bos_ >= 0 && !specials.empty() && specials.front() == bos_;
  const size_t first = ctx / 2;
  PerplexityResult r;
  r.ctx = ctx_;
  for (size_t start = 0; start + ctx <= ids.size(); start += ctx) {
    window_.assign(ids.begin() + static_cast<std::ptrdiff_t>(start),
                   ids.begin() + static_cast<std::ptrdiff_t>(start + ctx));
    if (add_bos) window_[0] = bos_;
    session_->score(window_, logits_);
    dump_window();
    for (size_t i = first; i + 1 < ctx; ++i) {
      r.nll += token_nll(logits_.data() + i * static_cast<size_t>(vocab), vocab, window_[i + 1]);
      ++r.tokens;
    }
    ++r.windows;
  }
  r.perplexity = std::exp(r.nll / static_cast<double>(r.tokens));
  return r;
}

PerplexityResult PerplexityRun::score(std::span<const int32_t> ids) {
  if (ids.empty()) throw Error("perplexity: the text has no tokens");
  const int32_t vocab = this->vocab();
  // Without BOS a window's first token is only context (nothing precedes it): not scored.
  PerplexityResult r;
  r.ctx = ctx_;
  for (size_t start = 0; start < ids.size(); start += per_window()) {
    const size_t n = std::min(per_window(), ids.size() - start);
    const std::span<const float> logits = window_logits(ids.subspan(start, n));
    // logits row i predicts window_[i + 1].
    for (size_t i = 0; i + 1 < window_.size(); ++i) {
      const int32_t target = window_[i + 1];
      if (target < 0 || target >= vocab)
        throw Error("perplexity: token id " + std::to_string(target) + " outside the vocabulary of " +
                    std::to_string(vocab));
      r.nll += token_nll(logits.data() + i * static_cast<size_t>(vocab), vocab, target);
      ++r.tokens;
    }
    ++r.windows;
  }
  if (r.tokens == 0) throw Error("perplexity: no token could be scored (one token and no BOS)");
  r.perplexity = std::exp(r.nll / static_cast<double>(r.tokens));
  return r;
}

LogitsError logits_error(PerplexityRun& run, PerplexityRun& reference, std::span<const int32_t> ids) {
  if (run.vocab() != reference.vocab() || run.per_window() != reference.per_window())
    throw Error("--compare-logits: the reference model differs in vocabulary or window length");
  if (ids.empty()) throw Error("--compare-logits: the text has no tokens");
  double diff2 = 0.0, ref2 = 0.0;
  LogitsError e;
  for (size_t start = 0; start < ids.size(); start += run.per_window()) {
    const std::span<const int32_t> window = ids.subspan(start, std::min(run.per_window(), ids.size() - start));
    const std::span<const float> ref_view = reference.window_logits(window);
    const std::vector<float> ref(ref_view.begin(), ref_view.end());  // copied: each run owns one buffer
    const std::span<const float> got = run.window_logits(window);
    for (size_t i = 0; i < ref.size(); ++i) {
      const double d = static_cast<double>(got[i]) - ref[i];
      diff2 += d * d;
      ref2 += static_cast<double>(ref[i]) * ref[i];
    }
    e.positions += static_cast<int64_t>(ref.size() / static_cast<size_t>(run.vocab()));
  }
  e.rel_rms = ref2 > 0.0 ? std::sqrt(diff2 / ref2) : 0.0;
  return e;
}

constexpr const char* kPerplexityDescription =
    "Token-level perplexity of a model on a text: non-overlapping windows of ctx - 1 text tokens after BOS; "
    "every text token is scored once.";

void add_perplexity_options(CLI::App& app, PerplexityOptions& o) {
  cli::apply_style(app);
  add_engine_options(app, o);
  app.add_option("--text", o.text, "UTF-8 text to score")->required();
  app.add_option("--ctx", o.ctx, "window length incl. BOS (default: the model's, at most 512)")
      ->check(cli::integer_in(2));
  app.add_option("--compare-logits", o.compare_logits,
                 "also the RMS logit error vs REF.gguf (quantization none, f32 KV) over the first\n"
                 "--compare-tokens text tokens, which are then the only ones scored");
  app.add_option("--compare-tokens", o.compare_tokens, "default 256")->check(cli::integer_in(1));
  app.add_option("--windows", o.windows,
                 "loom (default: every token once) or llama (llama-perplexity's chunks: second halves\n"
                 "of ctx-token chunks of the text tokenized with BOS)")
      ->check(CLI::IsMember({"loom", "llama"}));
  app.add_option("--dump-logits", o.dump_logits, "also write each window's ids and logits to PREFIX.ids / PREFIX.f32");
}

std::string perplexity_usage() {
  PerplexityOptions o;
  CLI::App app{kPerplexityDescription, "loom-bench perplexity"};
  add_perplexity_options(app, o);
  return app.help();
}

PerplexityOptions parse_perplexity_options(int argc, char** argv) {
  PerplexityOptions o;
  CLI::App app{kPerplexityDescription, "loom-bench perplexity"};
  add_perplexity_options(app, o);
  o.help = cli::parse_or_throw(app, std::vector<std::string>(argv + 1, argv + argc));
  return o;
}

int perplexity_main(int argc, char** argv) {
  try {
    const PerplexityOptions o = parse_perplexity_options(argc, argv);
    if (o.help) {
      std::cout << perplexity_usage();
      return 0;
    }
    PerplexityRun run(o);
    if (o.windows == "llama" && !o.compare_logits.empty())
      throw Error("--windows llama and --compare-logits do not go together");
    if (!o.dump_logits.empty()) run.dump_windows_to(o.dump_logits);
    const bool llama_windows = o.windows == "llama";
    std::vector<int32_t> ids = llama_windows ? run.tokenize_with_specials(read_file(o.text)) : run.tokenize(read_file(o.text));
    LogitsError err;
    if (!o.compare_logits.empty()) {
      PerplexityOptions ref_options = o;
      ref_options.model = o.compare_logits;
      ref_options.quantization = "none";
      ref_options.quantization_config = "{}";
      ref_options.kv_dtype = "f32";
      ref_options.ctx = run.ctx();
      PerplexityRun reference(ref_options);
      ids.resize(std::min(ids.size(), static_cast<size_t>(o.compare_tokens)));
      err = logits_error(run, reference, ids);
    }
    const PerplexityResult r = llama_windows ? run.score_llama_windows(ids) : run.score(ids);
    std::printf("model %s  text %s\nquantization %s %s, attention %s, kv %s, ctx %d, windows %s\n", o.model.c_str(),
                o.text.c_str(), o.quantization.c_str(), o.quantization_config.c_str(), o.attention.c_str(),
                o.kv_dtype.c_str(), r.ctx, o.windows.c_str());
    std::printf("tokens %lld in %d windows  mean nll %.6f  perplexity %.4f\n", static_cast<long long>(r.tokens),
                r.windows, r.nll / static_cast<double>(r.tokens), r.perplexity);
    if (!o.compare_logits.empty())
      std::printf("logits vs %s over %lld positions: relative RMS error %.6f\n", o.compare_logits.c_str(),
                  static_cast<long long>(err.positions), err.rel_rms);
    if (!o.json.empty()) {
      nlohmann::json j = {{"model", o.model},
                          {"text", o.text},
                          {"quantization", o.quantization},
                          {"quantization_config", o.quantization_config},
                          {"attention", o.attention},
                          {"kv_dtype", o.kv_dtype},
                          {"ctx", r.ctx},
                          {"windows", o.windows},
                          {"tokens", r.tokens},
                          {"windows", r.windows},
                          {"nll", r.nll},
                          {"perplexity", r.perplexity}};
      if (!o.compare_logits.empty())
        j["logits_error"] = {{"reference", o.compare_logits}, {"positions", err.positions}, {"rel_rms", err.rel_rms}};
      std::ofstream(o.json) << j.dump(2) << "\n";
    }
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "loom-bench perplexity: " << e.what() << "\n";
    return 1;
  }
}

}  // namespace loom::bench
