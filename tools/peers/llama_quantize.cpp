// llama.cpp's quantizer as a peer tool: writes OUT.gguf from IN.gguf (f32/f16/bf16) with the file
// type llama-quantize would write for TYPE (its own per-tensor choices for the _S/_M mixes), through
// libllama's llama_model_quantize; the files Loom is then checked on (tools/peers/types_vs_llama_cpp.sh).
// Not part of the build (see llama_greedy_top5.cpp for the compile line):
//   llama-quantize-file IN.gguf OUT.gguf TYPE [THREADS]     TYPE: q4_0 q4_1 q5_0 q5_1 q8_0 q2_k
//                                                           q3_k_m q4_k_m q5_k_m q6_k iq4_nl iq4_xs
#include <llama.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>

int main(int argc, char** argv) {
  static const std::pair<const char*, llama_ftype> kTypes[] = {
      {"q4_0", LLAMA_FTYPE_MOSTLY_Q4_0},     {"q4_1", LLAMA_FTYPE_MOSTLY_Q4_1},
      {"q5_0", LLAMA_FTYPE_MOSTLY_Q5_0},     {"q5_1", LLAMA_FTYPE_MOSTLY_Q5_1},
      {"q8_0", LLAMA_FTYPE_MOSTLY_Q8_0},     {"q2_k", LLAMA_FTYPE_MOSTLY_Q2_K},
      {"q3_k_m", LLAMA_FTYPE_MOSTLY_Q3_K_M}, {"q4_k_m", LLAMA_FTYPE_MOSTLY_Q4_K_M},
      {"q5_k_m", LLAMA_FTYPE_MOSTLY_Q5_K_M}, {"q6_k", LLAMA_FTYPE_MOSTLY_Q6_K},
      {"iq4_nl", LLAMA_FTYPE_MOSTLY_IQ4_NL}, {"iq4_xs", LLAMA_FTYPE_MOSTLY_IQ4_XS},
  };
  if (argc != 4 && argc != 5) {
    std::fprintf(stderr, "usage: %s IN.gguf OUT.gguf TYPE [THREADS]\n", argv[0]);
    return 2;
  }
  llama_model_quantize_params params = llama_model_quantize_default_params();
  bool known = false;
  for (const auto& [name, ftype] : kTypes) {
    if (std::string(argv[3]) == name) {
      params.ftype = ftype;
      known = true;
    }
  }
  if (!known) {
    std::fprintf(stderr, "unknown TYPE %s\n", argv[3]);
    return 2;
  }
  params.nthread = argc == 5 ? std::atoi(argv[4]) : 2;
  llama_backend_init();
  return llama_model_quantize(argv[1], argv[2], &params) == 0 ? 0 : 1;
}
