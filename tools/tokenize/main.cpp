// loom-tokenize: prints the token ids and pieces of a text, like llama.cpp's llama-tokenize.
//   loom-tokenize MODEL [--prompt TEXT | --file F] [--ids] [--no-bos] [--parse-special]
// MODEL is a GGUF file (vocab-only files too), a tokenizer.json, or an HF model directory.
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>

#include "core/common/error.hpp"
#include "core/formats/gguf_file.hpp"
#include "core/tokenizer/tokenizer.hpp"
#include "core/tokenizer/tokenizer_json.hpp"

namespace {

void usage(std::ostream& out) {
  out << "usage: loom-tokenize MODEL [--prompt TEXT | --file F] [--ids] [--no-bos] "
         "[--parse-special]\n"
         "  MODEL            a .gguf file, a tokenizer.json, or a directory with tokenizer.json\n"
         "  --prompt TEXT    text to tokenize\n"
         "  --file F         read the text from file F\n"
         "  --ids            print only the ids, as [1, 2, 3]\n"
         "  --no-bos         do not add the BOS/EOS tokens the model asks for\n"
         "  --parse-special  match special-token text (\"<|eot_id|>\") as the special token\n";
}

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
  bool have_text = false;
  bool ids_only = false;
  bool add_special = true;
  bool parse_special = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      usage(std::cout);
      return 0;
    } else if ((arg == "--prompt" || arg == "-p") && i + 1 < argc) {
      text = argv[++i];
      have_text = true;
    } else if ((arg == "--file" || arg == "-f") && i + 1 < argc) {
      std::ifstream in(argv[++i], std::ios::binary);
      if (!in) {
        std::cerr << "loom-tokenize: cannot open '" << argv[i] << "'\n";
        return 1;
      }
      std::stringstream ss;
      ss << in.rdbuf();
      text = ss.str();
      have_text = true;
    } else if (arg == "--ids") {
      ids_only = true;
    } else if (arg == "--no-bos") {
      add_special = false;
    } else if (arg == "--parse-special") {
      parse_special = true;
    } else if (model.empty() && arg[0] != '-') {
      model = arg;
    } else {
      std::cerr << "loom-tokenize: unknown or incomplete argument '" << arg << "'\n";
      usage(std::cerr);
      return 2;
    }
  }
  if (model.empty() || !have_text) {
    usage(std::cerr);
    return 2;
  }
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
