// Model file headers from untrusted bytes: GGUF (header, metadata of every value type, tensor
// infos and their bounds) and then what start-up reads from it (the tokenizer, the chat template);
// safetensors (the JSON header and tensor bounds). A loom::Error is the answer to a bad file.
// Selector byte: even = GGUF, odd = safetensors.
#include <cstdint>
#include <vector>

#include "core/common/error.hpp"
#include "core/formats/gguf_file.hpp"
#include "core/formats/safetensors_file.hpp"
#include "core/template/chat_template.hpp"
#include "core/tokenizer/tokenizer.hpp"
#include "tests/fuzz/fuzz_support.hpp"

namespace {

// Every byte a consumer could touch is inside the buffer.
template <typename Tensors>
void touch(const Tensors& tensors) {
  for (const auto& t : tensors) {
    if (t.nbytes == 0) continue;
    const auto* p = static_cast<const uint8_t*>(t.data);
    volatile uint8_t first = p[0], last = p[t.nbytes - 1];
    (void)first, (void)last;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  std::vector<uint8_t> bytes(data + 1, data + size);
  try {
    if (data[0] % 2 == 0) {
      const loom::GgufFile file = loom::GgufFile::from_bytes(std::move(bytes), "fuzz.gguf");
      touch(file.tensors());
      try {
        (void)loom::load_tokenizer(file);
      } catch (const loom::Error&) {
      }
      (void)loom::load_chat_template(file);
    } else {
      const loom::SafetensorsFile file = loom::SafetensorsFile::from_bytes(std::move(bytes), "fuzz.safetensors");
      touch(file.tensors());
    }
  } catch (const loom::Error&) {
  }
  return 0;
}
