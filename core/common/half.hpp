// IEEE half and bfloat16 <-> float conversions (bit-exact, round-to-nearest-even). One definition
// for the core and the plugins: the SDK's (loom/sdk_half.hpp), named here in namespace loom.
#pragma once

#include "loom/sdk_half.hpp"

namespace loom {

using sdk::bf16_to_f32;
using sdk::f16_to_f32;
using sdk::f32_to_bf16;
using sdk::f32_to_f16;

}  // namespace loom
