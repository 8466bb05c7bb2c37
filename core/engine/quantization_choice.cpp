#include "core/engine/quantization_choice.hpp"

#include <algorithm>
#include <utility>

#include "core/common/error.hpp"
#include "loom/quantization.h"
#include "loom/sdk_dtype.hpp"

namespace loom {
namespace {

std::string tensor_name(int32_t layer, const char* name) {
  return layer < 0 ? std::string(name) : "blk." + std::to_string(layer) + "." + name;
}

const char* how_label(loom_quant_reading how) {
  switch (how) {
    case LOOM_QUANT_NATIVE: return "as stored with its own kernels";
    case LOOM_QUANT_READS_AS_STORED: return "as stored on a general path";
    case LOOM_QUANT_CONVERTS: return "by converting at load";
    default: return "not at all";
  }
}

// The worst answer of one plugin over every type (CANNOT when it could not be asked).
loom_quant_reading worst(const PluginReadings& p) {
  if (!p.problem.empty() || p.readings.empty()) return LOOM_QUANT_CANNOT_READ;
  loom_quant_reading w = LOOM_QUANT_NATIVE;
  for (const sdk::Reading& r : p.readings) w = std::min(w, r.how);
  return w;
}

int32_t native_tensors(const PluginReadings& p, const std::vector<WeightTypeUse>& types) {
  int32_t n = 0;
  for (size_t i = 0; i < p.readings.size() && i < types.size(); ++i)
    if (p.readings[i].how == LOOM_QUANT_NATIVE) n += types[i].count;
  return n;
}

std::string type_list(const std::vector<WeightTypeUse>& types) {
  std::string s;
  for (const WeightTypeUse& t : types) s += (s.empty() ? "" : ", ") + sdk::type_name(t.dtype) + " (" + std::to_string(t.count) + ")";
  return s;
}

std::string format_note(std::string_view format) {
  return format.empty() ? std::string() : " in a file of loom.quantization.format \"" + std::string(format) + "\"";
}

// The plugins that read every type, best first, as "gguf, int8".
std::string readers(const std::vector<PluginReadings>& answers, const std::string& except) {
  std::string s;
  for (const PluginReadings& p : answers)
    if (p.plugin != except && worst(p) != LOOM_QUANT_CANNOT_READ) s += (s.empty() ? "" : ", ") + p.plugin;
  return s.empty() ? std::string("none of the installed quantization plugins") : s;
}

sdk::Reading ask(const LoadedPlugin& plugin, std::string_view format, loom_dtype dtype) {
  const auto& vt = plugin.vtable<loom_quantization_vtable>();
  const std::string fmt(format);
  if (sdk::present(vt, &loom_quantization_vtable::reads)) {
    int32_t how = LOOM_QUANT_CANNOT_READ;
    ErrorBuffer err;
    loom_error_buf buf = err.buf();
    const loom_status s = vt.reads(plugin.self(), fmt.c_str(), dtype, &how, &buf);
    if (s != LOOM_OK) return sdk::Reading::cannot("reads failed: " + err.str());
    if (how < LOOM_QUANT_CANNOT_READ || how > LOOM_QUANT_NATIVE)
      return sdk::Reading::cannot("reads answered " + std::to_string(how) + ", not a loom_quant_reading");
    return sdk::Reading{static_cast<loom_quant_reading>(how), how == LOOM_QUANT_CANNOT_READ ? err.str() : ""};
  }
  // Before interface 1.3 a plugin claims no format: it may convert what supports() takes from a
  // plain file, and nothing of a loom-convert file, whose bytes only the writer's layout explains.
  if (!format.empty())
    return sdk::Reading::cannot("quantization " + plugin.name() + " predates interface 1.3 and claims no format");
  const sdk::Verdict v = plugin.ask("supports", &loom_quantization_vtable::supports, dtype);
  return v.ok ? sdk::Reading::converts() : sdk::Reading::cannot(v.reason);
}

}  // namespace

std::vector<WeightTypeUse> linear_weight_types(const LlamaWeights& weights) {
  std::vector<WeightTypeUse> types;
  auto add = [&](const loom_tensor_view& v, std::string name) {
    if (v.data == nullptr) return;
    for (WeightTypeUse& t : types) {
      if (t.dtype == v.dtype) {
        ++t.count;
        return;
      }
    }
    types.push_back(WeightTypeUse{v.dtype, std::move(name), 1});
  };
  for (size_t l = 0; l < weights.layers.size(); ++l) {
    const LlamaLayerWeights& w = weights.layers[l];
    const auto layer = static_cast<int32_t>(l);
    add(w.wq, tensor_name(layer, "attn_q.weight"));
    add(w.wk, tensor_name(layer, "attn_k.weight"));
    add(w.wv, tensor_name(layer, "attn_v.weight"));
    add(w.wo, tensor_name(layer, "attn_output.weight"));
    add(w.w_gate, tensor_name(layer, "ffn_gate.weight"));
    add(w.w_up, tensor_name(layer, "ffn_up.weight"));
    add(w.w_down, tensor_name(layer, "ffn_down.weight"));
    // Mixture of experts: the router, every expert's slice of the stacked tensors, the shared expert.
    add(w.router, tensor_name(layer, "ffn_gate_inp.weight"));
    for (const auto& [experts, name] : {std::pair{&w.exp_gate, "ffn_gate_exps.weight"},
                                        std::pair{&w.exp_up, "ffn_up_exps.weight"},
                                        std::pair{&w.exp_down, "ffn_down_exps.weight"}})
      for (const loom_tensor_view& e : *experts) add(e, tensor_name(layer, name));
    add(w.sh_gate, tensor_name(layer, "ffn_gate_shexp.weight"));
    add(w.sh_up, tensor_name(layer, "ffn_up_shexp.weight"));
    add(w.sh_down, tensor_name(layer, "ffn_down_shexp.weight"));
    add(w.sh_router, tensor_name(layer, "ffn_gate_inp_shexp.weight"));
  }
  add(weights.output, weights.tied_output ? "token_embd.weight" : "output.weight");
  return types;
}

QuantizationChoice choose_quantization(const std::string& configured, const std::vector<WeightTypeUse>& types,
                                       const std::vector<PluginReadings>& answers, std::string_view format) {
  if (configured != kAutoQuantization) {
    const auto it = std::find_if(answers.begin(), answers.end(),
                                 [&](const PluginReadings& p) { return p.plugin == configured; });
    if (it == answers.end() || !it->problem.empty())
      throw Error("[quantization] plugin \"" + configured + "\": " +
                  (it == answers.end() ? std::string("not asked") : it->problem));
    for (size_t i = 0; i < types.size(); ++i) {
      const sdk::Reading& r = it->readings.at(i);
      if (r.how != LOOM_QUANT_CANNOT_READ) continue;
      throw Error("[quantization] plugin \"" + configured + "\" cannot read tensor " + types[i].first_tensor + " of type " +
                      sdk::type_name(types[i].dtype) + format_note(format) + " (" + r.reason + "); " +
                      readers(answers, configured) + " can read every weight of this model (or use plugin = \"auto\")",
                  LOOM_ERR_UNSUPPORTED);
    }
    return QuantizationChoice{configured, "configured; it reads " + type_list(types)};
  }

  const PluginReadings* best = nullptr;
  for (const PluginReadings& p : answers) {
    if (worst(p) == LOOM_QUANT_CANNOT_READ) continue;
    if (best == nullptr) {
      best = &p;
      continue;
    }
    const auto key = [&](const PluginReadings& q) { return std::make_pair(worst(q), native_tensors(q, types)); };
    if (key(p) > key(*best) || (key(p) == key(*best) && p.plugin < best->plugin)) best = &p;
  }
  if (best == nullptr) {
    std::string detail;
    for (const PluginReadings& p : answers) {
      std::string why = p.problem;
      for (size_t i = 0; why.empty() && i < p.readings.size(); ++i)
        if (p.readings[i].how == LOOM_QUANT_CANNOT_READ) why = sdk::type_name(types[i].dtype) + ": " + p.readings[i].reason;
      detail += "; " + p.plugin + ": " + why;
    }
    throw Error("[quantization] plugin \"auto\": no installed quantization plugin reads every weight type of this model (" +
                    type_list(types) + format_note(format) + ")" + detail,
                LOOM_ERR_UNSUPPORTED);
  }
  std::string why = "auto chose \"" + best->plugin + "\": it reads ";
  for (size_t i = 0; i < types.size(); ++i)
    why += (i == 0 ? "" : ", ") + sdk::type_name(types[i].dtype) + " (" + std::to_string(types[i].count) + " tensors) " +
           how_label(best->readings[i].how);
  for (const PluginReadings& p : answers) {
    if (&p == best) continue;
    const loom_quant_reading w = worst(p);
    why += "; " + p.plugin + (w == LOOM_QUANT_CANNOT_READ ? " cannot read them all" : std::string(" reads them at worst ") + how_label(w));
  }
  return QuantizationChoice{best->plugin, why};
}

PluginSpec resolve_quantization(const PluginHost& host, const PluginSpec& configured, const LlamaWeights& weights,
                                std::string_view format, std::string* why) {
  const std::vector<WeightTypeUse> types = linear_weight_types(weights);
  const bool automatic = configured.name == kAutoQuantization;
  const loom_quantization_create_args args{sizeof(loom_quantization_create_args), {LOOM_DEVICE_CPU, 0}};
  std::vector<PluginReadings> answers;
  if (automatic && !configured.path.empty())
    throw Error("[quantization] path names one plugin's file, so plugin = \"auto\" has nothing to choose: set plugin to "
                "that plugin's name");
  // The configured plugin's refusals (a config key it does not take, a missing file) are the
  // user's to see as they are; another plugin that cannot be created is left out of the choice.
  auto query = [&](const PluginSpec& spec, bool rethrow) {
    PluginReadings p;
    p.plugin = spec.name;
    try {
      const std::unique_ptr<LoadedPlugin> plugin = host.create(spec, &args);
      for (const WeightTypeUse& t : types) p.readings.push_back(ask(*plugin, format, t.dtype));
    } catch (const Error& e) {
      if (rethrow) throw;
      p.problem = e.what();
      p.readings.clear();
    }
    answers.push_back(std::move(p));
  };
  if (!automatic) query(configured, true);
  for (const PluginInfo& info : host.list(LOOM_KIND_QUANTIZATION)) {
    if (!info.problem.empty() || info.name == configured.name) continue;
    if (std::any_of(answers.begin(), answers.end(), [&](const PluginReadings& p) { return p.plugin == info.name; }))
      continue;  // the same name found in another directory: the first one is the one create() loads
    PluginSpec spec;
    spec.kind = LOOM_KIND_QUANTIZATION;
    spec.name = info.name;
    query(spec, false);
  }
  const QuantizationChoice choice = choose_quantization(configured.name, types, answers, format);
  if (why != nullptr) *why = choice.why;
  PluginSpec out = configured;
  out.name = choice.plugin;
  return out;
}

}  // namespace loom
