// llama.cpp's teacher-forced logits as an oracle: loads a GGUF with libllama, evaluates the given
// token ids (no BOS added) as one sequence in one batch with logits at every position, and writes
// them as raw little-endian f32, [positions][vocab], to OUT. Used by tools/peers/logits_vs_llama_cpp.py
// beside `loom-bench perplexity --dump-logits`; not part of the build (see llama_greedy_top5.cpp):
//   llama-logits MODEL.gguf IDS.txt OUT.f32 [THREADS] [FLASH_ATTN: auto|on|off]
// IDS.txt holds whitespace-separated ids.
#include <llama.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

int main(int argc, char** argv) {
  if (argc < 4 || argc > 6) {
    std::fprintf(stderr, "usage: %s MODEL.gguf IDS.txt OUT.f32 [THREADS] [auto|on|off]\n", argv[0]);
    return 2;
  }
  std::vector<llama_token> ids;
  {
    std::ifstream in(argv[2]);
    for (llama_token t; in >> t;) ids.push_back(t);
  }
  if (ids.empty()) return 2;
  llama_backend_init();
  llama_model* model = llama_model_load_from_file(argv[1], llama_model_default_params());
  if (model == nullptr) return 1;
  llama_context_params cp = llama_context_default_params();
  const auto n = static_cast<uint32_t>(ids.size());
  cp.n_ctx = n < 256 ? 256 : n;
  cp.n_batch = cp.n_ctx;
  cp.n_ubatch = cp.n_ctx;
  cp.n_threads = argc > 4 ? std::atoi(argv[4]) : 2;
  cp.n_threads_batch = cp.n_threads;
  if (argc > 5) {
    const std::string fa = argv[5];
    cp.flash_attn_type = fa == "on" ? LLAMA_FLASH_ATTN_TYPE_ENABLED
                         : fa == "off" ? LLAMA_FLASH_ATTN_TYPE_DISABLED
                                       : LLAMA_FLASH_ATTN_TYPE_AUTO;
  }
  llama_context* ctx = llama_init_from_model(model, cp);
  if (ctx == nullptr) return 1;
  llama_batch batch = llama_batch_init(static_cast<int32_t>(n), 0, 1);
  for (uint32_t i = 0; i < n; ++i) {
    batch.token[i] = ids[i];
    batch.pos[i] = static_cast<llama_pos>(i);
    batch.n_seq_id[i] = 1;
    batch.seq_id[i][0] = 0;
    batch.logits[i] = 1;
  }
  batch.n_tokens = static_cast<int32_t>(n);
  if (llama_decode(ctx, batch) != 0) return 1;
  const int n_vocab = llama_vocab_n_tokens(llama_model_get_vocab(model));
  std::FILE* out = std::fopen(argv[3], "wb");
  if (out == nullptr) return 1;
  for (uint32_t i = 0; i < n; ++i)
    std::fwrite(llama_get_logits_ith(ctx, static_cast<int32_t>(i)), sizeof(float), static_cast<size_t>(n_vocab), out);
  std::fclose(out);
  llama_batch_free(batch);
  llama_free(ctx);
  llama_model_free(model);
  return 0;
}
