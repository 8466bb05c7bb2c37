// The engine's view of a grammar on the demo vocabulary: the masked row, end tokens only where
// the output is complete, the finished state, jump-forward over forced tokens, shared masks.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "core/engine/constraint_state.hpp"
#include "core/formats/gguf_file.hpp"
#include "core/grammar/gbnf_parser.hpp"
#include "core/tokenizer/tokenizer.hpp"

namespace loom {
namespace {

class EngineConstraintState : public ::testing::Test {
 protected:
  void SetUp() override {
    file_ = std::make_unique<GgufFile>(GgufFile::open(std::string(LOOM_TEST_DATA) + "/stories260K.gguf"));
    tok_ = load_tokenizer(*file_);
    registry_ = std::make_unique<ConstraintRegistry>(*tok_);
  }
  std::shared_ptr<const Grammar> grammar(const char* text) { return std::make_shared<const Grammar>(parse_gbnf(text)); }
  // The tokens whose piece is exactly `bytes` (a letter has its own token and a byte-fallback
  // one), ascending.
  std::vector<int32_t> ids_of(const std::string& bytes) const {
    std::vector<int32_t> found;
    for (int32_t id = 0; id < tok_->vocab_size(); ++id) {
      if (!tok_->is_eog(id) && tok_->token_to_piece(id) == bytes) found.push_back(id);
    }
    return found;
  }
  int32_t only_id_of(const std::string& bytes) const {
    const std::vector<int32_t> ids = ids_of(bytes);
    EXPECT_EQ(ids.size(), 1u) << bytes;
    return ids.empty() ? -1 : ids[0];
  }
  std::vector<int32_t> allowed(ConstraintState& c) {
    const std::vector<float> row(static_cast<size_t>(tok_->vocab_size()), 0.5f);
    std::vector<float> out;
    EXPECT_TRUE(c.mask(row, out));
    std::vector<int32_t> ids;
    for (size_t i = 0; i < out.size(); ++i) {
      if (out[i] == 0.5f) {
        ids.push_back(static_cast<int32_t>(i));
      } else {
        EXPECT_TRUE(std::isinf(out[i]) && out[i] < 0);
      }
    }
    return ids;
  }

  std::unique_ptr<GgufFile> file_;
  std::unique_ptr<Tokenizer> tok_;
  std::unique_ptr<ConstraintRegistry> registry_;
};

TEST_F(EngineConstraintState, MasksEndTokensUntilCompleteAndFinishes) {
  auto c = registry_->start(grammar("root ::= \"a\" | \"ab\""));
  const std::vector<int32_t> a = ids_of("a"), ab = ids_of("ab");
  std::vector<int32_t> b = ids_of("b");
  ASSERT_EQ(a.size(), 2u);
  ASSERT_EQ(b.size(), 2u);
  std::vector<int32_t> first = a;
  first.insert(first.end(), ab.begin(), ab.end());
  std::sort(first.begin(), first.end());
  EXPECT_EQ(allowed(*c), first);  // no end token yet
  EXPECT_TRUE(c->accept(a[1]));
  EXPECT_TRUE(c->is_complete());
  EXPECT_FALSE(c->is_finished());
  std::vector<int32_t> second = b;
  second.push_back(tok_->eos_id());
  std::sort(second.begin(), second.end());
  EXPECT_EQ(allowed(*c), second);
  EXPECT_FALSE(c->accept(a[0]));  // not allowed here: refused, state unchanged
  EXPECT_FALSE(c->accept(tok_->bos_id()));  // a control token never is
  EXPECT_TRUE(c->accept(b[0]));
  EXPECT_TRUE(c->is_finished());
  EXPECT_EQ(allowed(*c), (std::vector<int32_t>{tok_->eos_id()}));
}

TEST_F(EngineConstraintState, JumpForwardAppendsOnlyForcedTokens) {
  // No token of the demo vocabulary holds a byte of U+4E00 (E4 B8 80) but its byte-fallback
  // token: after the first, the next five are forced.
  auto c = registry_->start(grammar("root ::= \"\\u4e00\\u4e00\" [ab]"));
  const int32_t e4 = only_id_of("\xE4"), b8 = only_id_of("\xB8"), x80 = only_id_of("\x80");
  EXPECT_EQ(allowed(*c), (std::vector<int32_t>{e4}));
  EXPECT_TRUE(c->accept(e4));
  std::vector<int32_t> tokens;
  c->append_forced(tokens, 2);  // room for two only
  EXPECT_EQ(tokens, (std::vector<int32_t>{b8, x80}));
  c->append_forced(tokens, 10);
  EXPECT_EQ(tokens, (std::vector<int32_t>{b8, x80, e4, b8, x80}));
  c->append_forced(tokens, 10);  // [ab] leaves four tokens: nothing is forced
  EXPECT_EQ(tokens.size(), 5u);
  EXPECT_FALSE(c->is_complete());
}

TEST_F(EngineConstraintState, RequestsWithTheSameGrammarTextShareMasks) {
  auto one = registry_->start(grammar("root ::= [a-z]+"));
  auto two = registry_->start(grammar("root ::= [a-z]+"));
  EXPECT_EQ(allowed(*one), allowed(*two));
  EXPECT_TRUE(one->accept(ids_of("a")[0]));
  EXPECT_TRUE(two->accept(ids_of("b")[1]));
  EXPECT_EQ(allowed(*one), allowed(*two));  // the same state: one mask for both
}

}  // namespace
}  // namespace loom
