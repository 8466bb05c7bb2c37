#include "core/engine/draft_model_service.hpp"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "core/common/error.hpp"
#include "loom/sdk_core.hpp"
#include "loom/sdk_kv_quant.hpp"

namespace loom {
namespace {

DraftModelService& self_of(void* ctx) { return *static_cast<DraftModelService*>(ctx); }

template <class Body>
loom_status at_boundary(loom_error_buf* err, Body&& body) noexcept {
  try {
    body();
    return LOOM_OK;
  } catch (const Error& e) {
    sdk::write_error(err, e.what());
    return e.code() == LOOM_OK ? LOOM_ERR_INTERNAL : e.code();
  } catch (const std::bad_alloc&) {
    sdk::write_error(err, "draft model: out of memory");
    return LOOM_ERR_OUT_OF_MEMORY;
  } catch (const std::exception& e) {
    sdk::write_error(err, e.what());
    return LOOM_ERR_INTERNAL;
  }
}

DraftModelOptions parse_options(const std::string& json_text, PluginSpec attention, loom_dtype kv_dtype) {
  DraftModelOptions out;
  out.attention = std::move(attention);
  out.kv_dtype = kv_dtype;
  const nlohmann::json j = nlohmann::json::parse(json_text.empty() ? "{}" : json_text, nullptr, false);
  LOOM_CHECK(j.is_object(), "draft model options: not a JSON object: " + json_text);
  std::vector<std::string> problems;
  auto text = [&](const std::string& key, std::string& into) {
    if (!j.contains(key)) return;
    if (j[key].is_string() && !j[key].get<std::string>().empty()) into = j[key].get<std::string>();
    else problems.push_back("\"" + key + "\" must be a non-empty string");
  };
  for (const auto& [key, value] : j.items()) {
    if (key != "quantization" && key != "attention" && key != "kv_dtype" && key != "kv_tokens")
      problems.push_back("unknown key \"" + key + "\" (valid: quantization, attention, kv_dtype, kv_tokens)");
  }
  text("quantization", out.quantization.name);
  std::string attention_name = out.attention.name;
  text("attention", attention_name);
  if (attention_name != out.attention.name) out.attention = PluginSpec{LOOM_KIND_ATTENTION, attention_name, "", "{}"};
  std::string kv;
  text("kv_dtype", kv);
  if (!kv.empty()) out.kv_dtype = sdk::kv::dtype_from_name(kv.c_str());
  if (out.kv_dtype == LOOM_DTYPE_INVALID) problems.push_back("\"kv_dtype\" \"" + kv + "\" is not a KV dtype");
  if (j.contains("kv_tokens")) {
    const auto& v = j["kv_tokens"];
    if (v.is_number_integer() && v.get<int64_t>() >= DraftModel::kBlockSize && v.get<int64_t>() <= (int64_t{1} << 30))
      out.kv_tokens = v.get<int64_t>();
    else
      problems.push_back("\"kv_tokens\" must be an integer in [" + std::to_string(DraftModel::kBlockSize) + ", 2^30]");
  }
  if (!problems.empty()) {
    std::string all = "draft model options: ";
    for (size_t i = 0; i < problems.size(); ++i) all += (i ? "; " : "") + problems[i];
    throw Error(all, LOOM_ERR_CONFIG);
  }
  return out;
}

}  // namespace

DraftModelService::DraftModelService(PluginHost& host, ThreadPool& threads, const Tokenizer& target,
                                     PluginSpec attention, loom_dtype kv_dtype)
    : host_(host), threads_(threads), target_(target), attention_(std::move(attention)), kv_dtype_(kv_dtype) {
  api_.struct_size = sizeof(api_);
  api_.ctx = this;
  api_.open = [](void* ctx, const char* path, const char* options, void** model, loom_error_buf* err) {
    return at_boundary(err, [&] {
      LOOM_CHECK(path != nullptr && model != nullptr, "draft model: open needs a path and an output pointer");
      *model = &self_of(ctx).open(path, options != nullptr ? options : "{}");
    });
  };
  api_.forward = [](void* ctx, void* model, const loom_draft_seq* seqs, int32_t num_seqs, float* logits, int32_t* ok,
                    loom_error_buf* err) {
    return at_boundary(err, [&] {
      LOOM_CHECK(model != nullptr && num_seqs >= 0 && (num_seqs == 0 || (seqs && logits && ok)),
                 "draft model: forward needs a model and, for any sequence, its logits and ok buffers");
      auto* m = static_cast<DraftModel*>(model);
      m->forward(std::span<const loom_draft_seq>(seqs, static_cast<size_t>(num_seqs)), self_of(ctx).target_.vocab_size(),
                 logits, ok);
    });
  };
  api_.release = [](void*, void* model, uint64_t seq_id) {
    if (model != nullptr) static_cast<DraftModel*>(model)->release(seq_id);
  };
  api_.close = [](void* ctx, void* model) { self_of(ctx).close(static_cast<DraftModel*>(model)); };
}

DraftModelService::~DraftModelService() = default;

std::string DraftModelService::vocabulary_mismatch(const DraftModel& model) const {
  const std::unique_ptr<Tokenizer> draft = model.source().load_tokenizer();
  if (draft->vocab_size() != target_.vocab_size())
    return "its vocabulary has " + std::to_string(draft->vocab_size()) + " tokens, the target's " +
           std::to_string(target_.vocab_size());
  if (model.vocab_size() < target_.vocab_size())
    return "its output layer has " + std::to_string(model.vocab_size()) + " rows for a vocabulary of " +
           std::to_string(target_.vocab_size());
  for (int32_t id = 0; id < target_.vocab_size(); ++id) {
    const std::string a = draft->token_to_piece(id, true), b = target_.token_to_piece(id, true);
    if (a != b) return "token " + std::to_string(id) + " is \"" + a + "\" there and \"" + b + "\" in the target";
  }
  return "";
}

DraftModel& DraftModelService::open(const std::string& path, const std::string& options_json) {
  const DraftModelOptions options = parse_options(options_json, attention_, kv_dtype_);
  auto model = std::make_unique<DraftModel>(path, options, host_, threads_);
  const std::string mismatch = vocabulary_mismatch(*model);
  if (!mismatch.empty())
    throw Error("draft model " + path + " does not share the target's tokenizer: " + mismatch, LOOM_ERR_INVALID_ARGUMENT);
  models_.push_back(std::move(model));
  return *models_.back();
}

void DraftModelService::close(DraftModel* model) {
  std::erase_if(models_, [&](const std::unique_ptr<DraftModel>& m) { return m.get() == model; });
}

}  // namespace loom
