// Reading an INT4 weight that loom-convert --quantize int4 stored pre-quantized in a GGUF
// (int4_format.hpp, "Pre-quantized storage"): the packed words N (I32) and the companions
// N.scale (F32) and N.zero (I8, optional), looked up through the host's find_tensor.
#pragma once

#include "int4_format.hpp"
#include "loom/quantization.h"

namespace loom_int4 {

// The weight those tensors hold, copied out of the model file; its group size comes from the
// stored scales, not from the plugin's config. Throws loom::sdk::Error (LOOM_ERR_INVALID_ARGUMENT)
// naming the tensor when a companion is missing, or a shape, dtype or zero point is wrong.
Int4Weight read_prequantized(const loom_tensor_view* words, const loom_weight_info* info);

}  // namespace loom_int4
