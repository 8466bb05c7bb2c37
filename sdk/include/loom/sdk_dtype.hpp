// ggml's element types by name: the one table of type names and block geometry, shared by the
// core's GGUF reader and writer and by plugins, so every error and log names a type ("q4_1"),
// never its number.
#pragma once

#include <cstdint>
#include <string>

#include "loom/types.h"

namespace loom::sdk {

// Block geometry of a ggml type: {name, elements per block, bytes per block}; block_size 0 when
// the type is unknown (name "unknown").
struct DtypeInfo {
  const char* name;
  int64_t block_size;
  int64_t block_bytes;
};

// Values 0..39 are ggml_type's numbering (ggml.h), names as gguf files and llama.cpp spell them.
inline DtypeInfo dtype_info(loom_dtype t) {
  switch (static_cast<int>(t)) {
    case 0: return {"f32", 1, 4};
    case 1: return {"f16", 1, 2};
    case 2: return {"q4_0", 32, 18};
    case 3: return {"q4_1", 32, 20};
    case 6: return {"q5_0", 32, 22};
    case 7: return {"q5_1", 32, 24};
    case 8: return {"q8_0", 32, 34};
    case 9: return {"q8_1", 32, 36};
    case 10: return {"q2_K", 256, 84};
    case 11: return {"q3_K", 256, 110};
    case 12: return {"q4_K", 256, 144};
    case 13: return {"q5_K", 256, 176};
    case 14: return {"q6_K", 256, 210};
    case 15: return {"q8_K", 256, 292};
    case 16: return {"iq2_xxs", 256, 66};
    case 17: return {"iq2_xs", 256, 74};
    case 18: return {"iq3_xxs", 256, 98};
    case 19: return {"iq1_s", 256, 50};
    case 20: return {"iq4_nl", 32, 18};
    case 21: return {"iq3_s", 256, 110};
    case 22: return {"iq2_s", 256, 82};
    case 23: return {"iq4_xs", 256, 136};
    case 24: return {"i8", 1, 1};
    case 25: return {"i16", 1, 2};
    case 26: return {"i32", 1, 4};
    case 27: return {"i64", 1, 8};
    case 28: return {"f64", 1, 8};
    case 29: return {"iq1_m", 256, 56};
    case 30: return {"bf16", 1, 2};
    case 34: return {"tq1_0", 256, 54};
    case 35: return {"tq2_0", 256, 66};
    case 39: return {"mxfp4", 32, 17};
    case LOOM_DTYPE_U8: return {"u8", 1, 1};
    case LOOM_DTYPE_FP8_E4M3: return {"fp8_e4m3", 1, 1};
    default: return {"unknown", 0, 0};
  }
}

// "q4_1"; an unknown value reads "ggml type 4 (unknown)" so the number is still there to report.
inline std::string type_name(loom_dtype t) {
  const DtypeInfo info = dtype_info(t);
  if (info.block_size != 0) return info.name;
  return "ggml type " + std::to_string(static_cast<int>(t)) + " (unknown)";
}

}  // namespace loom::sdk
