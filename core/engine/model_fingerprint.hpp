// The fingerprint a persistent cache_offload tier stores beside every block: which model file
// and which KV layout the block's bytes belong to. Blocks written under another fingerprint are
// never loaded (another model, another quantization, another dtype, block size or split of the
// layers into block-table groups).
#pragma once

#include <cstdint>
#include <string>

#include "core/executor/kv_groups.hpp"
#include "loom/types.h"

namespace loom {

struct KvLayoutDesc {
  loom_dtype kv_dtype = LOOM_DTYPE_F32;
  int32_t n_layers = 0, n_kv_heads = 0, head_dim = 0, block_size = 0;
  // Which layers a block holds, and in which slots: with one group every layer, in order (empty
  // counts as that too).
  KvGroups groups;
};

// 64-bit content hash of the model: the file itself, or for a Hugging Face directory every
// regular file in it, in name order. Files over 1 GiB are sampled (their size and 64 evenly
// spaced 1 MiB windows) so a start-up does not read tens of gigabytes.
uint64_t model_file_hash(const std::string& path);
// "<file hash hex>-t<dtype>-L<layers>-H<kv heads>-D<head dim>-B<block size>", and with several
// block-table groups "-G<groups>x<layers per block>-<hash of each layer's group and slot>": a
// run without groups keeps the fingerprint it had before groups existed.
std::string model_fingerprint(uint64_t file_hash, const KvLayoutDesc& layout);

}  // namespace loom
