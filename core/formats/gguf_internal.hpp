// Shared by the GGUF reader and writer; not part of the public API.
#pragma once

#include <cstdint>

#include "loom/sdk_dtype.hpp"
#include "loom/types.h"

namespace loom {

// Block geometry of a ggml type (the SDK's one table).
using DtypeInfo = sdk::DtypeInfo;
DtypeInfo dtype_info(loom_dtype t);

}  // namespace loom
