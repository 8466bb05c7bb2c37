// loom-tokenize: prints the token ids and pieces of a text, like llama.cpp's llama-tokenize.
//   loom-tokenize MODEL (--prompt TEXT | --file F) [--ids] [--no-bos] [--parse-special]
// MODEL is a GGUF file (vocab-only files too), a tokenizer.json, or an HF model directory.
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>

#include "core/common/command_line.hpp"
#include "core/common/error.hpp"
#include "core/formats/gguf_file.hpp"
#include "core/tokenizer/tokenizer.hpp"
#include "core/tokenizer/tokenizer_json.hpp"

namespace {

std::unique_ptr<loom::Tokenizer> open_tokenizer(const std::string& path) {
  namespace fs = std::filesystem;
  if (fs::is_directory(path) || fs::path(path).extension() == ".json") {
    return loom::load_tokenizer_json(path);
  }
  return loom::load_tokenizer(loom::GgufFile::open(path));
}

}  // namespace

int main(int argc, char** argv) {
  std::string model;
  std::string text;
  std::string file;
  bool ids_only = false;
  bool no_bos = false;
  bool parse_special = false;
  CLI::App app{"Prints the token ids and pieces of a text, like llama.cpp's llama-tokenize.", "loom-tokenize"};
  loom::cli::apply_style(app);
  app.add_option("MODEL", model, "a .gguf file, a tokenizer.json, or a directory with tokenizer.json")->required();
  auto* prompt = app.add_option("-p,--prompt", text, "text to tokenize");
  app.add_option("-f,--file", file, "read the text from this file")->check(CLI::ExistingFile)->excludes(prompt);
  app.add_flag("--ids", ids_only, "print only the ids, as [1, 2, 3]");
  app.add_flag("--no-bos", no_bos, "do not add the BOS/EOS tokens the model asks for");
  app.add_flag("--parse-special", parse_special, "match special-token text (\"<|eot_id|>\") as the special token");
  app.callback([&] {
    if (prompt->count() == 0 && file.empty()) throw CLI::RequiredError("--prompt or --file");
  });
  if (auto status = loom::cli::parse(app, argc, argv)) return *status;
  if (!file.empty()) {
    std::ifstream in(file, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    text = ss.str();
  }
  const bool add_special = !no_bos;
  try {
    const auto tok = open_tokenizer(model);
    const std::vector<int32_t> ids = tok->encode(text, add_special, parse_special);
    if (ids_only) {
      std::cout << '[';
      for (size_t i = 0; i < ids.size(); ++i) std::cout << (i ? ", " : "") << ids[i];
      std::cout << "]\n";
    } else {
      for (const int32_t id : ids) {
        std::cout << id << " -> '" << tok->token_to_piece(id, /*render_special=*/true) << "'\n";
      }
    }
  } catch (const std::exception& e) {
    std::cerr << "loom-tokenize: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
