#include "core/engine/semantic_cache_embed.hpp"

#include <algorithm>
#include <exception>
#include <string>

#include "loom/sdk_core.hpp"

namespace loom {
namespace {

loom_status embed_callback(void* ctx, const char* text, size_t len, float* out, loom_error_buf* err) {
  auto* encoder = static_cast<EmbeddingWorker*>(ctx);
  EmbeddingResult r;
  try {
    r = embed_question(*encoder, std::string_view(text, len));
  } catch (const std::exception& e) {
    r.error = e.what();
  }
  if (r.error.empty() && r.vectors.size() == static_cast<size_t>(encoder->dim())) {
    std::copy(r.vectors.begin(), r.vectors.end(), out);
    return LOOM_OK;
  }
  loom::sdk::write_error(err, "embedding failed: " + (r.error.empty() ? std::string("no vector") : r.error));
  return LOOM_ERR_INTERNAL;
}

}  // namespace

EmbeddingResult embed_question(EmbeddingWorker& encoder, std::string_view text) {
  std::vector<int32_t> ids = encoder.tokenize(text);
  if (static_cast<int32_t>(ids.size()) > encoder.max_tokens()) {
    const int32_t sep = ids.back();
    ids.resize(static_cast<size_t>(encoder.max_tokens() - 1));
    ids.push_back(sep);
  }
  return encoder.embed({std::move(ids)});
}

loom_semantic_cache_create_args semantic_cache_create_args(EmbeddingWorker* encoder) {
  loom_semantic_cache_create_args args{};
  args.struct_size = sizeof(args);
  if (encoder != nullptr) {
    args.embedding_dim = encoder->dim();
    args.embed = &embed_callback;
    args.embed_ctx = encoder;
  }
  return args;
}

}  // namespace loom
