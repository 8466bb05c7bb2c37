// The host side of loom_draft_model_api (speculator interface 1.1): opens draft models for a
// speculator plugin, refuses one whose vocabulary is not the target's, and forwards the plugin's
// calls to DraftModel, turning loom::Error into a status and a message at the C boundary. It owns
// every model it opened (closed by the plugin, or at the latest when the service goes), so it must
// outlive the speculator instance it was given to.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/engine/draft_model.hpp"
#include "core/plugin/plugin_host.hpp"
#include "core/tokenizer/tokenizer.hpp"
#include "loom/speculator.h"

namespace loom {

class DraftModelService {
 public:
  // target: the served model's tokenizer (a draft must match it token for token); attention and
  // kv_dtype: the target's, a draft's defaults.
  DraftModelService(PluginHost& host, ThreadPool& threads, const Tokenizer& target, PluginSpec attention,
                    loom_dtype kv_dtype);
  ~DraftModelService();
  DraftModelService(const DraftModelService&) = delete;
  DraftModelService& operator=(const DraftModelService&) = delete;

  const loom_draft_model_api* api() const { return &api_; }

  // What open() does, in C++: throws loom::Error naming the option, the file or the first token
  // that differs.
  DraftModel& open(const std::string& path, const std::string& options_json);
  void close(DraftModel* model);

 private:
  // Why `model`'s tokenizer is not the target's, or "" when it is.
  std::string vocabulary_mismatch(const DraftModel& model) const;

  PluginHost& host_;
  ThreadPool& threads_;
  const Tokenizer& target_;
  PluginSpec attention_;
  loom_dtype kv_dtype_;
  std::vector<std::unique_ptr<DraftModel>> models_;
  loom_draft_model_api api_{};
};

}  // namespace loom
