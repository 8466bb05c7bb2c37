// Which quantization plugin reads the model's weights. Plugins claim formats (quantization
// interface 1.3's `reads`: native, as stored, converted at load, or cannot); the host asks every
// installed quantization plugin about every linear-weight type of the file before loading any
// weight, and
//   - `plugin = "auto"` (the default) takes the plugin whose worst answer over those types is
//     best (ties: more tensors read natively, then the name), and says which and why;
//   - an explicit plugin that cannot read a type is refused naming a tensor of that type, the
//     type, the plugin's reason and the plugins that could read every weight.
// No plugin name is hard-coded here: a third-party plugin that claims a format takes part.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/executor/llama_model.hpp"
#include "core/plugin/plugin_host.hpp"
#include "core/plugin/plugin_spec.hpp"
#include "loom/sdk_quant_reading.hpp"

namespace loom {

inline constexpr const char* kAutoQuantization = "auto";

// One stored type among the model's linear weights: the first tensor of that type (for
// messages) and how many there are.
struct WeightTypeUse {
  loom_dtype dtype = LOOM_DTYPE_INVALID;
  std::string first_tensor;
  int32_t count = 0;
};

// The types of the weights the quantization plugin prepares (every layer's Q/K/V/O, gate, up,
// down and the output head), in order of first appearance.
std::vector<WeightTypeUse> linear_weight_types(const LlamaWeights& weights);

// One plugin's answers, aligned with the types asked about; `problem` set (and readings empty)
// when the plugin could not be created to ask.
struct PluginReadings {
  std::string plugin;
  std::vector<sdk::Reading> readings;
  std::string problem;
};

struct QuantizationChoice {
  std::string plugin;
  std::string why;  // one line for the start-up log
};

// The decision alone, on answers already gathered. Throws loom::Error when the configured plugin
// (or, for "auto", every plugin) cannot read some type; `format` is the file's
// loom.quantization.format ("" when it has none), for the messages.
QuantizationChoice choose_quantization(const std::string& configured, const std::vector<WeightTypeUse>& types,
                                       const std::vector<PluginReadings>& answers, std::string_view format);

// Asks the host's quantization plugins (the configured one with its spec, every other one found
// with an empty config) and decides. Returns the spec to create: the configured one, or for
// "auto" the chosen plugin's name with the table's path/config.
PluginSpec resolve_quantization(const PluginHost& host, const PluginSpec& configured, const LlamaWeights& weights,
                                std::string_view format, std::string* why);

}  // namespace loom
