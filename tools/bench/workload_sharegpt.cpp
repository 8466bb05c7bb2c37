#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "core/common/error.hpp"
#include "tools/bench/workload.hpp"

namespace loom::bench {
namespace {

using Json = nlohmann::json;

// The first human turn and the gpt answer right after it; false when the entry has none.
bool first_exchange(const Json& entry, std::string& prompt, std::string& answer) {
  const auto turns = entry.find("conversations");
  if (turns == entry.end() || !turns->is_array()) return false;
  for (size_t i = 0; i + 1 < turns->size(); ++i) {
    const Json& a = (*turns)[i];
    const Json& b = (*turns)[i + 1];
    if (!a.is_object() || !b.is_object()) return false;
    if (a.value("from", "") == "human" && b.value("from", "") == "gpt" &&
        a.contains("value") && a["value"].is_string() && b.contains("value") &&
        b["value"].is_string()) {
      prompt = a["value"].get<std::string>();
      answer = b["value"].get<std::string>();
      return true;
    }
  }
  return false;
}

}  // namespace

std::vector<Conversation> sharegpt_workload(size_t n, const ShareGptOptions& options,
                                            const PromptText& text, uint64_t seed) {
  if (options.path.empty()) throw Error("--dataset-name sharegpt needs --dataset-path FILE");
  std::ifstream in(options.path);
  if (!in) throw Error("--dataset-path: cannot open '" + options.path + "'");
  const Json data = Json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (!data.is_array()) throw Error(options.path + ": not a ShareGPT file (a JSON array expected)");

  std::vector<Conversation> usable;
  for (const Json& entry : data) {
    std::string prompt, answer;
    if (!entry.is_object() || !first_exchange(entry, prompt, answer)) continue;
    const int64_t prompt_len = text.count_tokens(prompt);
    const int64_t output_len = text.count_tokens(answer);
    if (prompt_len < 4 || output_len < 4 || prompt_len > 1024 || prompt_len + output_len > 2048) {
      continue;
    }
    Conversation c;
    c.turns.push_back(PromptTurn{std::move(prompt), output_len});
    usable.push_back(std::move(c));
  }
  if (usable.empty()) throw Error(options.path + ": no conversation passes the length filter");
  std::mt19937_64 rng(seed);
  std::shuffle(usable.begin(), usable.end(), rng);
  std::vector<Conversation> out;
  out.reserve(n);
  for (size_t i = 0; i < n; ++i) out.push_back(usable[i % usable.size()]);
  return out;
}

}  // namespace loom::bench
