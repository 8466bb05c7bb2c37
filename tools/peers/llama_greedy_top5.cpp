// llama.cpp's greedy decode as an oracle: loads a GGUF with libllama, feeds the given prompt ids
// (no BOS added), and for each of up to N steps prints one line "chosen top1 top2 top3 top4 top5"
// (ids, best first; chosen = top1), stopping after an end-of-generation token. Used by
// tools/peers/greedy_vs_llama_cpp.py; not part of the build:
//   g++ -O2 -std=c++17 llama_greedy_top5.cpp -I LLAMA/include -I LLAMA/ggml/include \
//       -L BUILD/bin -lllama -lggml -lggml-base -Wl,-rpath,BUILD/bin -o llama-greedy-top5
//   llama-greedy-top5 MODEL.gguf 1,2,3 48 [auto|on|off]
// The optional last argument sets flash attention (default: llama.cpp's own default, auto), so
// the oracle can also be compared with itself under its two attention paths.
#include <llama.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

int main(int argc, char** argv) {
  if (argc != 4 && argc != 5) {
    std::fprintf(stderr, "usage: %s MODEL.gguf ID,ID,... N [auto|on|off]\n", argv[0]);
    return 2;
  }
  llama_backend_init();
  llama_model* model = llama_model_load_from_file(argv[1], llama_model_default_params());
  if (model == nullptr) return 1;
  std::vector<llama_token> prompt;
  const std::string ids = argv[2];
  for (size_t p = 0; p < ids.size();) {
    size_t q = ids.find(',', p);
    if (q == std::string::npos) q = ids.size();
    prompt.push_back(std::atoi(ids.substr(p, q - p).c_str()));
    p = q + 1;
  }
  // Room for the prompt and every step, the prompt in one batch (long prompts: sliding windows).
  llama_context_params cp = llama_context_default_params();
  cp.n_ctx = static_cast<uint32_t>(std::max<size_t>(1024, prompt.size() + std::atoi(argv[3]) + 16));
  cp.n_batch = cp.n_ctx;
  cp.n_threads = 2;
  if (argc == 5) {
    const std::string fa = argv[4];
    cp.flash_attn_type = fa == "on" ? LLAMA_FLASH_ATTN_TYPE_ENABLED
                         : fa == "off" ? LLAMA_FLASH_ATTN_TYPE_DISABLED
                                       : LLAMA_FLASH_ATTN_TYPE_AUTO;
  }
  llama_context* ctx = llama_init_from_model(model, cp);
  const llama_vocab* vocab = llama_model_get_vocab(model);
  const int n_vocab = llama_vocab_n_tokens(vocab);
  std::vector<int> order(static_cast<size_t>(n_vocab));
  llama_token next = 0;
  llama_batch batch = llama_batch_get_one(prompt.data(), static_cast<int32_t>(prompt.size()));
  for (int step = 0; step < std::atoi(argv[3]); ++step) {
    if (llama_decode(ctx, batch) != 0) return 1;
    const float* logits = llama_get_logits_ith(ctx, -1);
    for (int k = 0; k < n_vocab; ++k) order[static_cast<size_t>(k)] = k;
    std::partial_sort(order.begin(), order.begin() + 5, order.end(),
                      [&](int a, int b) { return logits[a] > logits[b]; });
    next = order[0];
    std::printf("%d", next);
    for (int k = 0; k < 5; ++k) std::printf(" %d", order[static_cast<size_t>(k)]);
    std::printf("\n");
    if (llama_vocab_is_eog(vocab, next)) break;
    batch = llama_batch_get_one(&next, 1);
  }
  return 0;
}
