#include "tools/convert/gguf_dequantize.hpp"

#include <map>

#include "core/common/error.hpp"
#include "loom/sdk_dtype.hpp"
#include "tools/convert/gguf_rewrite.hpp"

namespace loom::convert {

GgufWriter dequantize_gguf(const GgufFile& in, loom_dtype to, std::vector<std::string>* notes) {
  if (!is_float_type(to)) throw Error("dequantize: the target must be f32, f16 or bf16, not " + sdk::type_name(to));
  std::vector<loom_dtype> dtypes;
  std::map<std::string, int> dequantized;  // type name -> tensors, for the notes
  for (const GgufTensorInfo& t : in.tensors()) {
    if (is_float_type(t.dtype) || sdk::dtype_info(t.dtype).block_size <= 1) {
      dtypes.push_back(t.dtype);  // float, integer: nothing to dequantize
      continue;
    }
    if (!can_dequantize(t.dtype))
      throw Error(t.name + ": cannot dequantize " + sdk::type_name(t.dtype) + " (this build reads " +
                  readable_type_names() + ")");
    ++dequantized[sdk::type_name(t.dtype)];
    dtypes.push_back(to);
  }
  if (notes != nullptr)
    for (const auto& [type, n] : dequantized)
      notes->push_back(std::to_string(n) + " " + type + " tensor" + (n == 1 ? "" : "s") + " dequantized to " +
                       sdk::type_name(to));
  const uint32_t file_type = to == LOOM_DTYPE_F32 ? 0 : to == LOOM_DTYPE_F16 ? 1 : 32;
  return rewrite_gguf(in, dtypes, file_type);
}

}  // namespace loom::convert
