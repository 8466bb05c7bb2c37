// loom-bench tokenizer: times Tokenizer::encode over a whole text, one thread.
#include "tools/bench/tokenizer_bench.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <random>
#include <sstream>
#include <vector>

#include "core/common/command_line.hpp"
#include "core/formats/gguf_file.hpp"
#include "core/tokenizer/tokenizer.hpp"
#include "core/tokenizer/tokenizer_json.hpp"

namespace loom::bench {

namespace {

std::unique_ptr<Tokenizer> open_tokenizer(const std::string& path) {
  namespace fs = std::filesystem;
  if (fs::is_directory(path) || fs::path(path).extension() == ".json") {
    return load_tokenizer_json(path);
  }
  return load_tokenizer(GgufFile::open(path));
}

}  // namespace

std::string generate_english_text(size_t bytes, uint32_t seed) {
  static const char* const kWords[] = {
      "the", "of", "and", "to", "in", "a", "is", "that", "for", "it", "as", "was", "with", "be",
      "by", "on", "not", "he", "this", "are", "or", "his", "from", "at", "which", "but", "have",
      "an", "had", "they", "you", "were", "their", "one", "all", "we", "can", "her", "has",
      "there", "been", "if", "more", "when", "will", "would", "who", "so", "no", "model",
      "language", "server", "request", "token", "memory", "system", "performance", "between",
      "important", "development", "government", "information", "understanding", "because",
      "through", "however", "different", "following", "without", "something", "available",
      "reasonable", "particularly", "nevertheless", "transformer", "attention", "quickly"};
  static const char* const kContractions[] = {"don't", "it's", "we're", "they've", "I'm",
                                              "you'll", "he'd", "can't"};
  std::mt19937 rng(seed);
  std::string text;
  text.reserve(bytes + 64);
  bool sentence_start = true;
  while (text.size() < bytes) {
    const uint32_t r = rng() % 100;
    std::string word;
    if (r < 4) {
      word = kContractions[rng() % std::size(kContractions)];
    } else if (r < 7) {
      word = std::to_string(rng() % (r < 5 ? 100 : 100000));
    } else {
      word = kWords[rng() % std::size(kWords)];
    }
    if (sentence_start && word[0] >= 'a' && word[0] <= 'z') {
      word[0] = static_cast<char>(word[0] - 'a' + 'A');
    }
    if (!text.empty() && text.back() != '\n') text += ' ';
    text += word;
    sentence_start = false;
    const uint32_t p = rng() % 100;
    if (p < 6) {
      text += ',';
    } else if (p < 12) {
      text += ". ";
      text.pop_back();
      sentence_start = true;
      if (rng() % 8 == 0) text += "\n\n";
    } else if (p < 13) {
      text += '?';
      sentence_start = true;
    }
  }
  return text;
}

int tokenizer_main(int argc, char** argv) {
  std::string tokenizer_path;
  std::string text_path;
  std::string write_path;
  double size_mb = 1.0;
  int repeat = 5;
  CLI::App app{"Encode throughput (MB/s, one thread) of a GGUF or tokenizer.json tokenizer.",
               "loom-bench tokenizer"};
  cli::apply_style(app);
  app.add_option("--tokenizer", tokenizer_path, "a .gguf file, a tokenizer.json or an HF model directory")
      ->required();
  app.add_option("--text", text_path, "text to encode (default: a generated English text)");
  app.add_option("--size-mb", size_mb, "size of the generated text in MB (default 1)");
  app.add_option("--repeat", repeat, "timed passes after the first; the best is reported (default 5)")
      ->check(cli::integer_in(1));
  app.add_option("--write-text", write_path, "also write the text that was encoded to this file");
  if (auto status = cli::parse(app, argc, argv)) return *status;
  try {
    using Clock = std::chrono::steady_clock;
    const auto t_load = Clock::now();
    const auto tok = open_tokenizer(tokenizer_path);
    const double load_s = std::chrono::duration<double>(Clock::now() - t_load).count();
    std::string text;
    if (text_path.empty()) {
      text = generate_english_text(static_cast<size_t>(size_mb * 1e6));
    } else {
      std::ifstream in(text_path, std::ios::binary);
      if (!in) throw std::runtime_error("cannot open '" + text_path + "'");
      std::stringstream ss;
      ss << in.rdbuf();
      text = ss.str();
    }
    if (!write_path.empty()) std::ofstream(write_path, std::ios::binary) << text;

    const auto time_pass = [&](size_t& n_tokens) {
      const auto t0 = Clock::now();
      n_tokens = tok->encode(text, /*add_special=*/false).size();
      return std::chrono::duration<double>(Clock::now() - t0).count();
    };
    size_t n_tokens = 0;
    const double cold_s = time_pass(n_tokens);  // the word cache starts empty
    double best_s = cold_s;
    for (int r = 0; r < repeat; ++r) best_s = std::min(best_s, time_pass(n_tokens));
    const double mb = static_cast<double>(text.size()) / 1e6;
    std::printf("tokenizer: %s (vocab %d, loaded in %.2f s)\n", tokenizer_path.c_str(),
                tok->vocab_size(), load_s);
    const double bytes_per_token =
        static_cast<double>(text.size()) / static_cast<double>(std::max<size_t>(1, n_tokens));
    std::printf("text: %zu bytes, %zu tokens (%.2f bytes/token)\n", text.size(), n_tokens,
                bytes_per_token);
    std::printf("first pass: %.1f MB/s   best of %d: %.1f MB/s, %.0f tokens/s (1 thread)\n",
                mb / cold_s, repeat, mb / best_s, static_cast<double>(n_tokens) / best_s);
  } catch (const std::exception& e) {
    std::cerr << "loom-bench tokenizer: " << e.what() << "\n";
    return 1;
  }
  return 0;
}

}  // namespace loom::bench
