// llama.cpp's tokenizer test vectors (tests/data/vocab/*.inp/.out), as its test-tokenizer-0
// reads them: inputs separated by "\n__ggml_vocab_test__\n" (the file ends with one), outputs
// one line of space-separated ids per input, without BOS.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace loom::test {

inline std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

struct VocabCase {
  std::string text;
  std::vector<int32_t> ids;
};

// Reads base + ".inp" and base + ".out" (base: the vocab file's path, e.g. ".../ggml-vocab-gpt-2.gguf").
inline std::vector<VocabCase> read_vocab_cases(const std::string& base) {
  const std::string inp = read_file(base + ".inp");
  const std::string sep = "\n__ggml_vocab_test__\n";
  std::vector<std::string> texts;
  for (size_t pos = 0; pos < inp.size();) {
    const size_t next = inp.find(sep, pos);
    if (next == std::string::npos) {
      texts.push_back(inp.substr(pos));
      break;
    }
    texts.push_back(inp.substr(pos, next - pos));
    pos = next + sep.size();
  }
  std::istringstream out(read_file(base + ".out"));
  std::vector<VocabCase> cases;
  std::string line;
  for (size_t i = 0; std::getline(out, line); ++i) {
    VocabCase c;
    c.text = i < texts.size() ? texts[i] : "";
    std::istringstream ids(line);
    for (int32_t id; ids >> id;) c.ids.push_back(id);
    cases.push_back(std::move(c));
  }
  EXPECT_EQ(cases.size(), texts.size()) << base;
  return cases;
}

}  // namespace loom::test
