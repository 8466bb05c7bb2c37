// A random-weight model of one of loom-convert's presets (f32, stories260K's tokenizer) for tests
// that load models by path: written once per process and preset to a temporary file, removed when
// the process ends.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>

#include "core/formats/gguf_file.hpp"
#include "core/formats/llama_gguf_export.hpp"
#include "core/formats/model_presets.hpp"

namespace loom::test {

struct TemporaryModelFile {
  std::string path;
  ~TemporaryModelFile() { std::filesystem::remove(path); }
};

// init_std 0.2 gives peaked logits: greedy output that depends on the context.
inline const std::string& random_preset_path(const std::string& preset, uint64_t seed) {
  static std::map<std::string, TemporaryModelFile> written;
  const std::string name = preset + "-" + std::to_string(seed);
  TemporaryModelFile& model = written[name];
  if (model.path.empty()) {
    RandomLlamaOptions opts;
    opts.shape = llama_preset(preset);
    opts.dtype = LOOM_DTYPE_F32;
    opts.seed = seed;
    opts.init_std = 0.2f;
    opts.name = preset;
    const GgufMetadata tok = tokenizer_metadata(GgufFile::open(std::string(LOOM_TEST_DATA) + "/stories260K.gguf"));
    const std::filesystem::path file =
        std::filesystem::temp_directory_path() / ("loom-" + name + "-" + std::to_string(::getpid()) + ".gguf");
    random_llama_gguf(opts, tok).write(file.string());
    model.path = file.string();
  }
  return model.path;
}

}  // namespace loom::test
