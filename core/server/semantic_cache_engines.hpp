// Two EngineInterface decorators through which GenerationStream runs a request that uses the
// semantic cache, so that a cached answer goes out exactly as a computed one does:
//   CachedAnswerEngine answers submit() itself with the stored text (word by word, the last piece
//     carrying the finish reason and token count), never touching the real engine;
//   StoringEngine forwards to the real engine and, when the answer finishes by stop or length,
//     stores it (aborted and failed answers are never stored).
// Everything else forwards to the real engine, which must outlive them.
#pragma once

#include <memory>

#include "core/engine/engine_api.hpp"
#include "core/engine/semantic_cache_client.hpp"

namespace loom {

class ForwardingEngine : public EngineInterface {
 public:
  explicit ForwardingEngine(EngineInterface& engine) : engine_(engine) {}
  uint64_t submit(GenerateRequest request) override { return engine_.submit(std::move(request)); }
  void abort(uint64_t request_id) override { engine_.abort(request_id); }
  EngineStats stats() const override { return engine_.stats(); }
  const ModelInfo& model_info() const override { return engine_.model_info(); }
  const Tokenizer& tokenizer() const override { return engine_.tokenizer(); }
  const ChatTemplate* chat_template() const override { return engine_.chat_template(); }
  EmbeddingWorker* embeddings() const override { return engine_.embeddings(); }
  SemanticCacheClient* semantic_cache() const override { return engine_.semantic_cache(); }

 protected:
  EngineInterface& engine_;
};

class CachedAnswerEngine final : public ForwardingEngine {
 public:
  CachedAnswerEngine(EngineInterface& engine, SemanticAnswer answer) : ForwardingEngine(engine), answer_(std::move(answer)) {}
  uint64_t submit(GenerateRequest request) override;
  void abort(uint64_t) override {}  // nothing runs

 private:
  SemanticAnswer answer_;
};

class StoringEngine final : public ForwardingEngine {
 public:
  StoringEngine(EngineInterface& engine, SemanticCacheClient& cache, SemanticQuery query)
      : ForwardingEngine(engine), cache_(cache), query_(std::make_shared<const SemanticQuery>(std::move(query))) {}
  uint64_t submit(GenerateRequest request) override;

 private:
  SemanticCacheClient& cache_;
  std::shared_ptr<const SemanticQuery> query_;
};

}  // namespace loom
