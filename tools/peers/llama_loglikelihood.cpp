// llama.cpp's log-likelihoods as an oracle for lm-eval's loglikelihood requests: loads a GGUF with
// libllama (KV cache in f32, flash attention off, so both engines compute in f32) and, for each
// input line "CTXLEN ID ID ...", evaluates the ids as one fresh sequence and prints
// "LOGPROB IS_GREEDY": the sum over positions i >= CTXLEN of log p(id_i | ids before i), and
// whether every such id was the most likely token. Used by tools/clients/lm_eval_vs_llama_cpp.py;
// not part of the build:
//   g++ -O2 -std=c++17 llama_loglikelihood.cpp -I LLAMA/include -I LLAMA/ggml/include \
//       -L BUILD/bin -lllama -lggml -lggml-base -Wl,-rpath,BUILD/bin -o llama-loglikelihood
//   llama-loglikelihood MODEL.gguf REQUESTS.txt [THREADS]
#include <llama.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

int main(int argc, char** argv) {
  if (argc != 3 && argc != 4) {
    std::fprintf(stderr, "usage: %s MODEL.gguf REQUESTS.txt [THREADS]\n", argv[0]);
    return 2;
  }
  std::vector<std::pair<size_t, std::vector<llama_token>>> requests;
  size_t longest = 0;
  {
    std::ifstream in(argv[2]);
    for (std::string line; std::getline(in, line);) {
      std::istringstream fields(line);
      size_t ctxlen = 0;
      if (!(fields >> ctxlen)) continue;
      std::vector<llama_token> ids;
      for (llama_token t; fields >> t;) ids.push_back(t);
      if (ctxlen == 0 || ctxlen >= ids.size()) {
        std::fprintf(stderr, "llama-loglikelihood: a line needs 0 < CTXLEN < number of ids\n");
        return 2;
      }
      longest = std::max(longest, ids.size());
      requests.emplace_back(ctxlen, std::move(ids));
    }
  }
  llama_backend_init();
  llama_model* model = llama_model_load_from_file(argv[1], llama_model_default_params());
  if (model == nullptr) return 1;
  llama_context_params cp = llama_context_default_params();
  cp.n_ctx = static_cast<uint32_t>(std::max<size_t>(256, longest));
  cp.n_batch = cp.n_ctx;
  cp.n_ubatch = cp.n_ctx;
  cp.n_threads = argc > 3 ? std::atoi(argv[3]) : 2;
  cp.n_threads_batch = cp.n_threads;
  cp.type_k = GGML_TYPE_F32;
  cp.type_v = GGML_TYPE_F32;
  cp.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_DISABLED;
  llama_context* ctx = llama_init_from_model(model, cp);
  if (ctx == nullptr) return 1;
  const int n_vocab = llama_vocab_n_tokens(llama_model_get_vocab(model));
  llama_batch batch = llama_batch_init(static_cast<int32_t>(cp.n_ctx), 0, 1);
  for (const auto& [ctxlen, ids] : requests) {
    llama_memory_clear(llama_get_memory(ctx), true);
    batch.n_tokens = static_cast<int32_t>(ids.size());
    for (size_t i = 0; i < ids.size(); ++i) {
      batch.token[i] = ids[i];
      batch.pos[i] = static_cast<llama_pos>(i);
      batch.n_seq_id[i] = 1;
      batch.seq_id[i][0] = 0;
      batch.logits[i] = 1;
    }
    if (llama_decode(ctx, batch) != 0) return 1;
    double sum = 0.0;
    bool greedy = true;
    for (size_t i = ctxlen; i < ids.size(); ++i) {
      const float* row = llama_get_logits_ith(ctx, static_cast<int32_t>(i - 1));
      float max = row[0];
      int best = 0;
      for (int v = 1; v < n_vocab; ++v)
        if (row[v] > max) max = row[v], best = v;
      double z = 0.0;
      for (int v = 0; v < n_vocab; ++v) z += std::exp(static_cast<double>(row[v]) - max);
      sum += static_cast<double>(row[ids[i]]) - max - std::log(z);
      greedy = greedy && best == ids[i];
    }
    std::printf("%.9f %d\n", sum, greedy ? 1 : 0);
  }
  llama_batch_free(batch);
  llama_free(ctx);
  llama_model_free(model);
  return 0;
}
