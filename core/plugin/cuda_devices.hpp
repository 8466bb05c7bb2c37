// How many CUDA devices the host offers plugins (loom_host_api::num_cuda_devices).
#pragma once

#include <cstdint>

namespace loom {

// 0 on a CPU-only build. The CUDA path replaces the body (cudaGetDeviceCount under
// LOOM_HAVE_CUDA) so GPU plugins can refuse through score() on machines without one.
int32_t visible_cuda_devices();

}  // namespace loom
