#include "core/plugin/cuda_devices.hpp"

namespace loom {

int32_t visible_cuda_devices() {
  // The CPU build sees no device. A CUDA build extends this with cudaGetDeviceCount.
  return 0;
}

}  // namespace loom
