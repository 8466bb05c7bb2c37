#include "core/formats/model_presets.hpp"

#include <charconv>
#include <map>

#include "core/common/error.hpp"

namespace loom {

void LlamaShape::validate() const {
  std::string problems;
  auto add = [&](const std::string& p) { problems += (problems.empty() ? "" : "; ") + p; };
  const std::pair<const char*, int64_t> sizes[] = {{"dim", dim},       {"hidden", hidden_dim},
                                                   {"layers", n_layers}, {"heads", n_heads},
                                                   {"kv_heads", n_kv_heads}, {"ctx", context_length}};
  for (const auto& [name, v] : sizes) {
    if (v <= 0) add(std::string(name) + " = " + std::to_string(v) + " must be positive");
  }
  if (arch != "llama" && arch != "gemma3") add("arch \"" + arch + "\" is not llama or gemma3");
  if (head_dim < 0) add("head_dim = " + std::to_string(head_dim) + " must not be negative");
  if (head_dim == 0 && n_heads > 0 && dim % n_heads != 0)
    add("dim " + std::to_string(dim) + " is not a multiple of heads " + std::to_string(n_heads));
  if (n_heads > 0 && n_kv_heads > 0 && n_heads % n_kv_heads != 0) {
    add("heads " + std::to_string(n_heads) + " is not a multiple of kv_heads " + std::to_string(n_kv_heads));
  }
  if (n_heads > 0 && (head_dim > 0 || dim % n_heads == 0) && head_size() % 2 != 0)
    add("head size " + std::to_string(head_size()) + " is odd");
  if (sliding_window < 0 || window_period < 0) add("sliding_window and its period must not be negative");
  if (!(rms_eps > 0.0f)) add("eps must be positive");
  if (rope_freq_base && !(*rope_freq_base > 0.0f)) add("rope_base must be positive");
  if (n_experts < 0 || n_experts_used < 0) add("experts must not be negative");
  if (n_experts > 0 && (n_experts_used < 1 || n_experts_used > n_experts))
    add("experts used " + std::to_string(n_experts_used) + " is not in 1.." + std::to_string(n_experts));
  if (n_experts == 0 && n_experts_used > 0) add("experts used without experts");
  if (n_experts > 0 && arch != "llama") add("experts are written for arch llama only (Mixtral's layout)");
  if (!problems.empty()) throw Error("model shape: " + problems);
}

const std::vector<ModelPreset>& llama_presets() {
  // Shapes of real models (Llama 1/2 125M-class, Llama 3.2 1B, Llama 3.1 8B) so benchmarks on
  // random weights cost what the real models cost.
  static const std::vector<ModelPreset> presets = [] {
    auto shape = [](int64_t dim, int64_t hidden, int64_t layers, int64_t heads, int64_t kv, int64_t ctx,
                    std::optional<float> rope) {
      LlamaShape s;
      s.dim = dim;
      s.hidden_dim = hidden;
      s.n_layers = layers;
      s.n_heads = heads;
      s.n_kv_heads = kv;
      s.context_length = ctx;
      s.rope_freq_base = rope;
      return s;
    };
    auto gemma3 = [](LlamaShape s, int64_t head_dim, int64_t window, int64_t period) {
      s.arch = "gemma3";
      s.head_dim = head_dim;
      s.sliding_window = window;
      s.window_period = period;
      s.rms_eps = 1e-6f;
      s.tied_output = true;  // Gemma ties its head to the embedding
      return s;
    };
    auto mixtral = [](LlamaShape s, int64_t experts, int64_t used) {
      s.n_experts = experts;
      s.n_experts_used = used;
      return s;
    };
    return std::vector<ModelPreset>{
        {"tiny", "dim 64, hidden 172, 2 layers, 8 heads, 4 kv heads, ctx 512 (tests)", shape(64, 172, 2, 8, 4, 512, std::nullopt)},
        {"llama-125m", "dim 768, hidden 2048, 12 layers, 12 heads, 12 kv heads, ctx 2048", shape(768, 2048, 12, 12, 12, 2048, std::nullopt)},
        {"llama-1b", "dim 2048, hidden 8192, 16 layers, 32 heads, 8 kv heads, ctx 2048 (Llama 3.2 1B shape)", shape(2048, 8192, 16, 32, 8, 2048, 500000.0f)},
        {"llama-8b", "dim 4096, hidden 14336, 32 layers, 32 heads, 8 kv heads, ctx 8192 (Llama 3.1 8B shape)", shape(4096, 14336, 32, 32, 8, 8192, 500000.0f)},
        {"gemma3-tiny", "gemma3: dim 64, hidden 128, 3 layers (2 local of window 8, 1 global), 4 heads, 1 kv head, "
                        "head_dim 32, ctx 512 (tests)",
         gemma3(shape(64, 128, 3, 4, 1, 512, 1000000.0f), 32, 8, 3)},
        {"gemma3-270m", "gemma3: dim 640, hidden 2048, 18 layers (5 local of window 512 per global), 4 heads, 1 kv head, "
                        "head_dim 256, ctx 32768 (Gemma 3 270M shape)",
         gemma3(shape(640, 2048, 18, 4, 1, 32768, 1000000.0f), 256, 512, 6)},
        {"mixtral-tiny", "Mixtral-style MoE: dim 64, 4 experts of hidden 128 (top 2), 2 layers, 8 heads, 4 kv heads, "
                         "ctx 512 (tests)",
         mixtral(shape(64, 128, 2, 8, 4, 512, 1000000.0f), 4, 2)},
        // Mixtral 8x7B's routing (8 experts, top 2, GQA 4:1) at a size two cores can run: with
        // the Llama 2 vocabulary 1.15B weights, 0.36B of them read per token (embedding and head
        // included).
        {"mixtral-1b", "Mixtral-style MoE: dim 1024, 8 experts of hidden 3584 (top 2), 12 layers, 16 heads, 4 kv heads, "
                       "ctx 4096 (Mixtral 8x7B's routing, scaled down)",
         mixtral(shape(1024, 3584, 12, 16, 4, 4096, 1000000.0f), 8, 2)},
    };
  }();
  return presets;
}

LlamaShape llama_preset(const std::string& name) {
  std::string valid;
  for (const auto& p : llama_presets()) {
    if (p.name == name) return p.shape;
    valid += (valid.empty() ? "" : ", ") + p.name;
  }
  throw Error("unknown model preset '" + name + "' (valid: " + valid + ")", LOOM_ERR_NOT_FOUND);
}

LlamaShape parse_llama_dims(const std::string& spec) {
  std::map<std::string, std::string> kv;
  size_t start = 0;
  while (start <= spec.size()) {
    const size_t end = std::min(spec.find(',', start), spec.size());
    const std::string item = spec.substr(start, end - start);
    const size_t eq = item.find('=');
    if (eq == std::string::npos || eq == 0) throw Error("--dims: '" + item + "' is not key=value");
    const std::string key = item.substr(0, eq);
    if (!kv.emplace(key, item.substr(eq + 1)).second) throw Error("--dims: '" + key + "' given twice");
    start = end + 1;
  }
  auto take_int = [&](const char* key, std::optional<int64_t> fallback) -> int64_t {
    const auto it = kv.find(key);
    if (it == kv.end()) {
      if (!fallback) throw Error(std::string("--dims: missing ") + key + "=");
      return *fallback;
    }
    int64_t v = 0;
    const auto [ptr, ec] = std::from_chars(it->second.data(), it->second.data() + it->second.size(), v);
    if (ec != std::errc() || ptr != it->second.data() + it->second.size()) {
      throw Error(std::string("--dims: ") + key + "=" + it->second + " is not an integer");
    }
    kv.erase(it);
    return v;
  };
  auto take_float = [&](const char* key) -> std::optional<float> {
    const auto it = kv.find(key);
    if (it == kv.end()) return std::nullopt;
    size_t used = 0;
    float v = 0;
    try {
      v = std::stof(it->second, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != it->second.size()) throw Error(std::string("--dims: ") + key + "=" + it->second + " is not a number");
    kv.erase(it);
    return v;
  };
  LlamaShape s;
  s.dim = take_int("dim", std::nullopt);
  s.hidden_dim = take_int("hidden", std::nullopt);
  s.n_layers = take_int("layers", std::nullopt);
  s.n_heads = take_int("heads", std::nullopt);
  s.n_kv_heads = take_int("kv_heads", s.n_heads);
  s.context_length = take_int("ctx", 2048);
  s.rope_freq_base = take_float("rope_base");
  if (auto eps = take_float("eps")) s.rms_eps = *eps;
  if (!kv.empty()) {
    throw Error("--dims: unknown key '" + kv.begin()->first + "' (valid: dim, hidden, layers, heads, kv_heads, ctx, rope_base, eps)");
  }
  s.validate();
  return s;
}

}  // namespace loom
