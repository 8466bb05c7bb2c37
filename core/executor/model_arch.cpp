#include "core/executor/model_arch.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "core/common/error.hpp"

namespace loom {

const ArchSpec* find_arch_by_name(const std::string& gguf_arch) {
  for (const ArchSpec& a : kArchitectures)
    if (gguf_arch == a.name) return &a;
  return nullptr;
}

const ArchSpec* find_arch_for_gguf(const std::string& gguf_arch, bool has_experts) {
  const ArchSpec* row = find_arch_by_name(gguf_arch);
  if (row == nullptr || !has_experts || row->moe.experts) return row;
  for (const ArchSpec& a : kArchitectures)
    if (a.moe.experts && gguf_arch == a.gguf_arch) return &a;
  return row;
}

const ArchSpec* find_arch_by_hf(const std::string& hf_class, const std::string& hf_type) {
  for (const ArchSpec& a : kArchitectures)
    if (*a.hf_class != '\0' && hf_class == a.hf_class) return &a;
  if (hf_class.empty())
    for (const ArchSpec& a : kArchitectures)
      if (*a.hf_type != '\0' && hf_type == a.hf_type) return &a;
  return nullptr;
}

std::string supported_architectures(bool with_hf) {
  std::string s;
  for (const ArchSpec& a : kArchitectures) {
    if (with_hf && *a.hf_class == '\0') continue;  // GGUF-only families
    if (!with_hf && a.moe.experts && std::string(a.name) != a.gguf_arch) continue;  // read as its gguf_arch
    s += (s.empty() ? "" : ", ") + std::string(with_hf ? a.hf_class : a.name);
  }
  return s;
}

double rope_attention_factor(const RopeScaling& s) {
  if (s.type != "yarn") return 1.0;
  if (s.attention_factor > 0.0) return s.attention_factor;
  return s.factor <= 1.0 ? 1.0 : 0.1 * std::log(s.factor) + 1.0;
}

std::vector<double> rope_inv_freq(int32_t rope_dim, double base, const RopeScaling& s) {
  if (rope_dim <= 0 || rope_dim % 2 != 0) throw Error("rope: rotary dimension " + std::to_string(rope_dim) + " must be even");
  if (!(base > 0.0)) throw Error("rope: rope_theta " + std::to_string(base) + " must be positive");
  const int32_t n = rope_dim / 2;
  std::vector<double> inv(static_cast<size_t>(n));
  for (int32_t i = 0; i < n; ++i) inv[static_cast<size_t>(i)] = std::pow(base, -2.0 * i / rope_dim);
  if (s.type == "none" || s.type == "default") return inv;
  if (!(s.factor >= 1.0)) throw Error("rope_scaling.factor " + std::to_string(s.factor) + " must be at least 1 for " + s.type);
  const double d = rope_dim;
  if (s.type == "linear") {
    for (double& f : inv) f /= s.factor;
  } else if (s.type == "dynamic") {
    const double scaled_base = base * std::pow(s.factor * s.factor - s.factor + 1.0, d / (d - 2.0));
    for (int32_t i = 0; i < n; ++i) inv[static_cast<size_t>(i)] = std::pow(scaled_base, -2.0 * i / rope_dim);
  } else if (s.type == "llama3") {
    if (s.original_max_position <= 0) throw Error("rope_scaling.original_max_position_embeddings is required for llama3");
    if (!(s.high_freq_factor > s.low_freq_factor) || !(s.low_freq_factor > 0.0))
      throw Error("rope_scaling: llama3 needs 0 < low_freq_factor < high_freq_factor");
    const double old_len = static_cast<double>(s.original_max_position);
    const double low_wavelen = old_len / s.low_freq_factor, high_wavelen = old_len / s.high_freq_factor;
    for (double& f : inv) {
      const double wavelen = 2.0 * std::numbers::pi / f;
      if (wavelen < high_wavelen) continue;           // high frequencies: unchanged
      if (wavelen > low_wavelen) { f /= s.factor; continue; }  // low frequencies: interpolated
      const double smooth = (old_len / wavelen - s.low_freq_factor) / (s.high_freq_factor - s.low_freq_factor);
      f = (1.0 - smooth) * f / s.factor + smooth * f;
    }
  } else if (s.type == "yarn") {
    if (s.original_max_position <= 0) throw Error("rope_scaling.original_max_position_embeddings is required for yarn");
    const double orig = static_cast<double>(s.original_max_position);
    auto correction_dim = [&](double rotations) {
      return d * std::log(orig / (rotations * 2.0 * std::numbers::pi)) / (2.0 * std::log(base));
    };
    double low = correction_dim(s.beta_fast), high = correction_dim(s.beta_slow);
    if (s.truncate) {
      low = std::floor(low);
      high = std::ceil(high);
    }
    low = std::max(low, 0.0);
    high = std::min(high, d - 1.0);
    if (low == high) high += 0.001;  // no singular ramp
    for (int32_t i = 0; i < n; ++i) {
      const double ramp = std::clamp((i - low) / (high - low), 0.0, 1.0);
      const double extrapolation = 1.0 - ramp;  // share of the unscaled frequency
      double& f = inv[static_cast<size_t>(i)];
      f = (f / s.factor) * (1.0 - extrapolation) + f * extrapolation;
    }
  } else {
    throw Error("rope_scaling type \"" + s.type + "\" is not supported (none, linear, dynamic, llama3, yarn)",
                LOOM_ERR_UNSUPPORTED);
  }
  return inv;
}

}  // namespace loom
