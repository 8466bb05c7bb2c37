// llama.cpp's own tokenizer as an oracle: prints the ids llama.cpp gives each text of a file
// (texts separated by "\n__ggml_vocab_test__\n", as in its .inp vectors), one line each, no BOS,
// special tokens not parsed. Used by tools/tokenizer/llama_cpp_pre_ids.py; not part of the build:
//   g++ -O1 -std=c++17 llama_cpp_ids.cpp -I LLAMA/include -I LLAMA/ggml/include \
//       -L BUILD/bin -lllama -lggml -lggml-base -Wl,-rpath,BUILD/bin -o llama-cpp-ids
#include <llama.h>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>
int main(int argc, char** argv) {
  llama_backend_init();
  llama_model_params mp = llama_model_default_params();
  mp.vocab_only = true;
  llama_model* model = llama_model_load_from_file(argv[1], mp);
  if (!model) { fprintf(stderr, "load failed\n"); return 1; }
  const llama_vocab* vocab = llama_model_get_vocab(model);
  std::ifstream in(argv[2], std::ios::binary);
  std::stringstream ss; ss << in.rdbuf();
  std::string all = ss.str();
  const std::string sep = "\n__ggml_vocab_test__\n";
  size_t pos = 0;
  while (pos < all.size()) {
    size_t next = all.find(sep, pos);
    std::string text = all.substr(pos, next == std::string::npos ? std::string::npos : next - pos);
    std::vector<llama_token> ids(text.size() * 4 + 16);
    int n = llama_tokenize(vocab, text.data(), (int)text.size(), ids.data(), (int)ids.size(), false, false);
    for (int i = 0; i < n; ++i) printf(i ? " %d" : "%d", ids[i]);
    printf("\n");
    if (next == std::string::npos) break;
    pos = next + sep.size();
  }
  llama_model_free(model);
  return 0;
}
