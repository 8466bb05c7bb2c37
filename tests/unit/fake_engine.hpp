// Test doubles for the server tests: a byte-level tokenizer (each byte one token, plus BOS and
// EOS) and an EngineInterface whose own thread "generates" a fixed reply one token per step,
// delivering outputs through the sinks exactly as the real engine does (engine thread, in order,
// whole UTF-8 characters only, finish on the last output).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "core/common/error.hpp"
#include "core/engine/engine_api.hpp"
#include "core/tokenizer/tokenizer.hpp"
#include "core/tokenizer/utf8.hpp"

namespace loom::test {

class ByteTokenizer final : public Tokenizer {
 public:
  static constexpr int32_t kBos = 256;
  static constexpr int32_t kEos = 257;

  std::vector<int32_t> encode(std::string_view text, bool add_special,
                              bool /*parse_special*/ = false) const override {
    std::vector<int32_t> ids;
    if (add_special) ids.push_back(kBos);
    for (unsigned char c : text) ids.push_back(c);
    return ids;
  }
  std::string token_to_piece(int32_t id, bool render_special = false) const override {
    if (id < 256) return std::string(1, static_cast<char>(id));
    if (!render_special) return "";
    return id == kBos ? "<s>" : "</s>";
  }
  std::string decode(std::span<const int32_t> ids, bool render_special = false) const override {
    std::string out;
    for (int32_t id : ids) out += token_to_piece(id, render_special);
    return out;
  }
  int32_t vocab_size() const override { return 258; }
  int32_t bos_id() const override { return kBos; }
  int32_t eos_id() const override { return kEos; }
  bool is_eog(int32_t id) const override { return id == kEos; }
  bool is_control(int32_t id) const override { return id >= 256; }
};

class FakeEngine final : public EngineInterface {
 public:
  // Every request answers `reply` (then EOS), one byte token per step of `step` duration.
  explicit FakeEngine(std::string reply = "Hello, w\xC3\xB6rld! \xE2\x9C\x93 done.",
                      int32_t max_model_len = 64,
                      std::chrono::microseconds step = std::chrono::microseconds(200))
      : reply_(std::move(reply)), step_(step) {
    info_.name = "fake-model";
    info_.max_model_len = max_model_len;
    info_.vocab_size = tokenizer_.vocab_size();
    info_.created = 1700000000;
    thread_ = std::thread([this] { loop(); });
  }
  ~FakeEngine() override {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }

  uint64_t submit(GenerateRequest request) override {
    std::lock_guard lock(mutex_);
    if (!submit_error_.empty()) throw Error(submit_error_);
    if (request.prompt.empty()) throw Error("prompt is empty");
    const uint64_t id = next_id_++;
    last_request_ = request;
    last_request_->sink = nullptr;
    prompt_tokens_total_ += static_cast<int64_t>(request.prompt.size());
    active_[id].request = std::move(request);
    ++submitted_;
    cv_.notify_all();
    return id;
  }
  void abort(uint64_t request_id) override {
    std::lock_guard lock(mutex_);
    aborted_.push_back(request_id);
    if (auto it = active_.find(request_id); it != active_.end()) it->second.aborted = true;
    cv_.notify_all();
  }
  EngineStats stats() const override {
    std::lock_guard lock(mutex_);
    EngineStats s;
    s.num_running = static_cast<int32_t>(active_.size());
    s.num_waiting = 3;
    s.kv_total_blocks = 40;
    s.kv_used_blocks = 10;
    s.kv_free_blocks = 30;
    s.kv_num_seqs = static_cast<int32_t>(active_.size());
    s.num_preemptions = 2;
    s.requests_finished = finished_;
    s.prompt_tokens_total = prompt_tokens_total_;
    s.generation_tokens_total = generation_tokens_total_;
    return s;
  }
  const ModelInfo& model_info() const override { return info_; }
  const Tokenizer& tokenizer() const override { return tokenizer_; }

  // Test controls and observations.
  void set_submit_error(std::string message) {
    std::lock_guard lock(mutex_);
    submit_error_ = std::move(message);
  }
  void set_step(std::chrono::microseconds step) {
    std::lock_guard lock(mutex_);
    step_ = step;
  }
  // Finishes every live request with this reason at the next step (e.g. kError, kAbort).
  void fail_all(FinishReason reason, std::string error = {}) {
    std::lock_guard lock(mutex_);
    for (auto& [id, r] : active_) {
      r.forced = reason;
      r.error = error;
    }
  }
  std::optional<GenerateRequest> last_request() const {
    std::lock_guard lock(mutex_);
    return last_request_;
  }
  std::vector<uint64_t> aborted() const {
    std::lock_guard lock(mutex_);
    return aborted_;
  }
  int64_t submitted() const {
    std::lock_guard lock(mutex_);
    return submitted_;
  }
  size_t active() const {
    std::lock_guard lock(mutex_);
    return active_.size();
  }
  // Waits until pred() holds (checked under no lock), up to `timeout`.
  template <typename Pred>
  static bool wait_until(Pred pred, std::chrono::milliseconds timeout = std::chrono::seconds(5)) {
    const auto end = std::chrono::steady_clock::now() + timeout;
    while (!pred()) {
      if (std::chrono::steady_clock::now() > end) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    return true;
  }

 private:
  struct Live {
    GenerateRequest request;
    int32_t generated = 0;
    std::string pending;  // bytes not yet sent: an incomplete UTF-8 character
    bool aborted = false;
    std::optional<FinishReason> forced;
    std::string error;
  };

  // One token for `r`; fills `out` and says whether the request is done.
  bool step_request(Live& r, GenerationOutput& out) {
    out.prompt_tokens = static_cast<int32_t>(r.request.prompt.size());
    if (r.aborted || r.forced) {
      out.finish = r.aborted ? FinishReason::kAbort : *r.forced;
      out.error = r.error;
      out.completion_tokens = r.generated;
      return true;
    }
    const SamplingParams& s = r.request.sampling;
    const size_t pos = static_cast<size_t>(r.generated);
    const bool at_eos = pos >= reply_.size() && !s.ignore_eos;
    const int32_t token =
        at_eos ? ByteTokenizer::kEos : static_cast<unsigned char>(reply_[pos % reply_.size()]);
    ++r.generated;
    ++generation_tokens_total_;
    out.token_ids = {token};
    out.completion_tokens = r.generated;
    if (!at_eos) r.pending += static_cast<char>(token);
    const size_t complete = utf8_complete_prefix_length(r.pending);
    out.text = r.pending.substr(0, complete);
    r.pending.erase(0, complete);
    if (at_eos)
      out.finish = FinishReason::kStop;
    else if (r.generated >= s.max_tokens)
      out.finish = FinishReason::kLength;
    return out.finish.has_value();
  }

  void loop() {
    std::unique_lock lock(mutex_);
    while (true) {
      cv_.wait(lock, [this] { return stopping_ || !active_.empty(); });
      if (stopping_) break;
      std::vector<std::pair<OutputSink, GenerationOutput>> deliveries;
      for (auto it = active_.begin(); it != active_.end();) {
        GenerationOutput out;
        const bool done = step_request(it->second, out);
        deliveries.emplace_back(it->second.request.sink, std::move(out));
        if (done) {
          ++finished_;
          it = active_.erase(it);
        } else {
          ++it;
        }
      }
      const auto step = step_;
      lock.unlock();
      for (auto& [sink, out] : deliveries) sink(std::move(out));
      std::this_thread::sleep_for(step);
      lock.lock();
    }
    // Like Engine::shutdown: what is still live ends with kAbort.
    for (auto& [id, r] : active_) {
      GenerationOutput out;
      out.finish = FinishReason::kAbort;
      r.request.sink(std::move(out));
    }
  }

  const std::string reply_;
  ByteTokenizer tokenizer_;
  ModelInfo info_;
  mutable std::mutex mutex_;
  std::condition_variable cv_;
  std::map<uint64_t, Live> active_;
  std::optional<GenerateRequest> last_request_;
  std::vector<uint64_t> aborted_;
  std::string submit_error_;
  std::chrono::microseconds step_;
  uint64_t next_id_ = 1;
  int64_t submitted_ = 0, finished_ = 0, prompt_tokens_total_ = 0, generation_tokens_total_ = 0;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace loom::test
