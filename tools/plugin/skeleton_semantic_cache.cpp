// The semantic_cache skeleton: exact match on (model, tenant, prompt, sampling parameters).
#include "tools/plugin/skeleton.hpp"

namespace loom::tools {

SkeletonKind semantic_cache_skeleton() {
  SkeletonKind k;
  k.class_header = R"skel(
// Returns a stored answer only for a byte-identical request; near-identical matching (an
// embedding and a threshold) is what a real semantic cache adds.
class @CLASS@ {
 public:
  @CLASS@(const loom::sdk::Host&, std::string_view config) { @IDENT@_plugin::refuse_config_keys(config); }

  loom_status lookup(const loom_semantic_query* query, int32_t* hit, loom_semantic_answer* answer) {
    auto it = answers_.find(key_of(*query));
    *hit = it != answers_.end() ? 1 : 0;
    if (*hit == 0) return LOOM_OK;
    const Stored& s = it->second;
    answer->length = s.text.size();  // > capacity: the host calls again with a bigger buffer
    std::memcpy(answer->text, s.text.data(), std::min(s.text.size(), answer->capacity));
    answer->completion_tokens = s.completion_tokens;
    answer->finish_reason = s.finish_reason;
    return LOOM_OK;
  }

  loom_status store(const loom_semantic_query* query, const loom_semantic_answer* answer) {
    answers_[key_of(*query)] = Stored{std::string(answer->text, answer->length), answer->completion_tokens,
                                      answer->finish_reason};
    return LOOM_OK;
  }

 private:
  struct Stored {
    std::string text;
    int32_t completion_tokens;
    int32_t finish_reason;
  };
  // Fields joined with NUL bytes, which none of them contains, so distinct queries never collide.
  static std::string key_of(const loom_semantic_query& q) {
    std::string key = q.model ? q.model : "";
    key += '\0';
    key += q.tenant ? q.tenant : "";
    key += '\0';
    key.append(q.prompt, q.prompt_len);
    key += '\0';
    key += q.params ? q.params : "";
    return key;
  }

  std::map<std::string, Stored> answers_;
};
)skel";
  k.test_body = R"skel(    @CLASS@ plugin(host, "{}");
    // Zero first, then the members this test sets (the host fills the later ones, interface 1.1).
    loom_semantic_query query{};
    query.struct_size = sizeof(query);
    query.model = "m";
    query.tenant = "";
    query.prompt = "Hello";
    query.prompt_len = 5;
    query.params = "temperature=0";
    char text[16] = {0};
    loom_semantic_answer answer{};
    answer.struct_size = sizeof(answer);
    answer.text = text;
    answer.capacity = sizeof(text);
    int32_t hit = -1;
    check(plugin.lookup(&query, &hit, &answer) == LOOM_OK && hit == 0, "an empty cache misses");
    char stored_text[] = "Hi there";
    loom_semantic_answer stored{};
    stored.struct_size = sizeof(stored);
    stored.text = stored_text;
    stored.capacity = stored.length = 8;
    stored.completion_tokens = 3;
    stored.finish_reason = 1;
    check(plugin.store(&query, &stored) == LOOM_OK, "store returns LOOM_OK");
    check(plugin.lookup(&query, &hit, &answer) == LOOM_OK && hit == 1 && answer.length == 8 &&
              std::string(text, 8) == "Hi there" && answer.completion_tokens == 3 && answer.finish_reason == 1,
          "the same query hits with the stored answer");
    query.params = "temperature=1";
    check(plugin.lookup(&query, &hit, &answer) == LOOM_OK && hit == 0, "other sampling parameters miss");)skel";
  return k;
}

}  // namespace loom::tools
