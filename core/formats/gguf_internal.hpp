// Shared by the GGUF reader and writer; not part of the public API.
#pragma once

#include <cstdint>

#include "loom/types.h"

namespace loom {

// Block geometry of a ggml type: {name, elements per block, bytes per block}; block_size 0 when
// the type is unknown.
struct DtypeInfo {
  const char* name;
  int64_t block_size;
  int64_t block_bytes;
};
DtypeInfo dtype_info(loom_dtype t);

}  // namespace loom
