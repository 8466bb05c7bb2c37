// Every tokenizer kind on arbitrary input: SentencePiece BPE (stories260K.gguf), byte-level BPE
// (Qwen3's tokenizer.json). Encode of arbitrary bytes with and without special-token
// parsing, decode of arbitrary ids (in and just past the vocabulary) and the incremental
// detokenizer over them. A loom::Error is an answer; anything else escaping, or a crash, is not.
// Selector byte: low bit picks the tokenizer, bit 2 = ids instead of text.
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "core/common/error.hpp"
#include "core/formats/gguf_file.hpp"
#include "core/tokenizer/incremental_detokenizer.hpp"
#include "core/tokenizer/tokenizer.hpp"
#include "core/tokenizer/tokenizer_json.hpp"
#include "tests/fuzz/fuzz_support.hpp"

namespace {

const std::vector<std::unique_ptr<loom::Tokenizer>>& tokenizers() {
  static const auto all = [] {
    std::vector<std::unique_ptr<loom::Tokenizer>> t;
    t.push_back(loom::load_tokenizer(loom::GgufFile::open(loom::fuzz::data_path("stories260K.gguf"))));
    t.push_back(loom::load_tokenizer_json(loom::fuzz::data_path("hf_tokenizers/qwen3/tokenizer.json")));
    return t;
  }();
  return all;
}

}  // namespace

// Loading takes seconds under ASan; done here, it does not count against a unit's -timeout.
extern "C" int LLVMFuzzerInitialize(int*, char***) {
  (void)tokenizers();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto [selector, rest] = loom::fuzz::select(data, size);
  const auto& all = tokenizers();
  const loom::Tokenizer& tok = *all[selector & 1u];
  try {
    std::vector<int32_t> ids;
    if (selector & 4u) {
      // Ids from the bytes, folded to the vocabulary plus a few past its end (the routes check
      // ids against the vocabulary; a decoder must still refuse, not read out of bounds).
      const auto span = static_cast<uint32_t>(tok.vocab_size()) + 4u;
      for (size_t i = 0; i + 4 <= rest.size(); i += 4) {
        uint32_t v;
        std::memcpy(&v, rest.data() + i, 4);
        ids.push_back(static_cast<int32_t>(v % span));
      }
    } else {
      ids = tok.encode(rest, (selector & 8u) != 0, (selector & 16u) != 0);
      for (int32_t id : ids)
        if (id < 0 || id >= tok.vocab_size()) __builtin_trap();  // encode made an id that does not exist
    }
    (void)tok.decode(ids, (selector & 32u) != 0);
    loom::IncrementalDetokenizer detok(tok, {}, (selector & 32u) != 0);
    for (int32_t id : ids) (void)detok.push(id);
    (void)detok.flush();
  } catch (const loom::Error&) {
  }
  return 0;
}
