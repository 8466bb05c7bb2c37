// `loom-bench tokenizer`: single-threaded encode throughput (MB/s, tokens/s) of any tokenizer
// Loom loads (GGUF, tokenizer.json, HF directory) on a text file or a generated English text.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace loom::bench {

// A deterministic English-like text of about `bytes` bytes: common words, capitalised sentence
// starts, punctuation, numbers, contractions and paragraph breaks from a fixed-seed generator.
std::string generate_english_text(size_t bytes, uint32_t seed = 42);

int tokenizer_main(int argc, char** argv);

}  // namespace loom::bench
