// The speculator skeleton: proposes what followed the previous occurrence of the last token
// (prompt lookup with n = 1); a real speculator matches longer n-grams or runs a draft model.
#include "tools/plugin/skeleton.hpp"

namespace loom::tools {

SkeletonKind speculator_skeleton() {
  SkeletonKind k;
  k.class_header = R"skel(
class @CLASS@ {
 public:
  @CLASS@(const loom::sdk::Host&, const loom_speculator_create_args&, std::string_view config) {
    @IDENT@_plugin::refuse_config_keys(config);
  }

  // For each request: find the latest earlier occurrence of its last token and propose the
  // tokens that followed it, at most max_drafts of them.
  void propose(loom_spec_request* requests, int32_t num_requests) {
    for (int32_t r = 0; r < num_requests; ++r) {
      loom_spec_request& q = requests[r];
      const int32_t last = q.num_tokens - 1;
      for (int32_t i = last - 1; i >= 0; --i) {
        if (q.token_ids[i] != q.token_ids[last]) continue;
        for (int32_t j = i + 1; j < last && q.num_drafts < q.max_drafts; ++j) q.draft_ids[q.num_drafts++] = q.token_ids[j];
        break;
      }
    }
  }
};
)skel";
  k.test_body = R"skel(    loom_speculator_create_args args{sizeof(loom_speculator_create_args), 32, 64, 3, nullptr};
    @CLASS@ plugin(host, args, "{}");
    const int32_t tokens[] = {5, 6, 7, 8, 5};
    int32_t drafts[3] = {0, 0, 0};
    loom_spec_request q{sizeof(loom_spec_request), 1, tokens, 5, 2, 3, drafts, 0, nullptr, 0};
    plugin.propose(&q, 1);
    check(q.num_drafts == 3 && drafts[0] == 6 && drafts[1] == 7 && drafts[2] == 8,
          "after 5 comes what followed the earlier 5: 6 7 8");
    const int32_t fresh[] = {1, 2, 3};
    loom_spec_request none{sizeof(loom_spec_request), 2, fresh, 3, 3, 3, drafts, 0, nullptr, 0};
    plugin.propose(&none, 1);
    check(none.num_drafts == 0, "a token never seen before proposes nothing");)skel";
  return k;
}

}  // namespace loom::tools
