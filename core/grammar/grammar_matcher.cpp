#include "core/grammar/grammar_matcher.hpp"

#include <algorithm>
#include <numeric>

#include "core/common/error.hpp"

namespace loom {
namespace {

// Beyond this many stacks a grammar is too ambiguous to run; the state is treated as dead.
constexpr size_t kMaxStacks = 4096;

// Expands the top of `stack` until it is a byte set (or the stack is empty: complete), adding
// every result to `out`. Edits `stack` in place and restores it.
void expand(const Grammar& g, GrammarStack& stack, StackSet& out) {
  if (stack.empty() || g.elements[stack.back()].kind == GrammarElement::kBytes) {
    if (out.size() < kMaxStacks) out.push(stack);
    return;
  }
  const uint32_t pos = stack.back();
  const GrammarElement e = g.elements[pos];
  stack.pop_back();
  if (e.kind == GrammarElement::kEnd) {
    expand(g, stack, out);
  } else {
    // A reference last in its alternative returns straight to the caller's caller (tail call).
    const bool tail = g.elements[pos + 1].kind == GrammarElement::kEnd;
    if (!tail) stack.push_back(pos + 1);
    for (uint32_t alt : g.rule_alternatives[e.value]) {
      stack.push_back(alt);
      expand(g, stack, out);
      stack.pop_back();
    }
    if (!tail) stack.pop_back();
  }
  stack.push_back(pos);
}

}  // namespace

void StackSet::push(const GrammarStack& s) {
  if (size_ < slots_.size()) {
    slots_[size_] = s;
  } else {
    slots_.push_back(s);
  }
  ++size_;
}

void StackSet::canonicalize() {
  if (size_ < 2) return;
  std::sort(slots_.begin(), slots_.begin() + static_cast<std::ptrdiff_t>(size_));
  size_t w = 1;
  for (size_t r = 1; r < size_; ++r) {
    if (slots_[r] != slots_[w - 1]) std::swap(slots_[w++], slots_[r]);
  }
  size_ = w;
}

void StackSet::append_key(std::string& key) const {
  for (size_t i = 0; i < size_; ++i) {
    const uint32_t n = static_cast<uint32_t>(slots_[i].size());
    key.append(reinterpret_cast<const char*>(&n), sizeof(n));
    key.append(reinterpret_cast<const char*>(slots_[i].data()), n * sizeof(uint32_t));
  }
}

bool StackSet::operator==(const StackSet& o) const {
  if (size_ != o.size_) return false;
  for (size_t i = 0; i < size_; ++i) {
    if (slots_[i] != o.slots_[i]) return false;
  }
  return true;
}

void grammar_step(const Grammar& g, const StackSet& in, uint8_t b, StackSet& out) {
  out.clear();
  thread_local GrammarStack work;
  for (size_t i = 0; i < in.size(); ++i) {
    const GrammarStack& s = in[i];
    if (s.empty()) continue;
    const GrammarElement& top = g.elements[s.back()];
    if (!g.byte_sets[top.value].test(b)) continue;
    work = s;
    work.back() += 1;  // the next element of the same alternative
    expand(g, work, out);
  }
  out.canonicalize();
}

GrammarMatcher::GrammarMatcher(std::shared_ptr<const Grammar> grammar) : grammar_(std::move(grammar)) {
  GrammarStack stack;
  for (uint32_t alt : grammar_->rule_alternatives[grammar_->root]) {
    stack.assign(1, alt);
    expand(*grammar_, stack, stacks_);
  }
  stacks_.canonicalize();
}

bool GrammarMatcher::accept_byte(uint8_t b) {
  grammar_step(*grammar_, stacks_, b, scratch_);
  if (scratch_.empty()) return false;
  std::swap(stacks_, scratch_);
  return true;
}

bool GrammarMatcher::accept_bytes(std::string_view bytes) {
  StackSet saved = stacks_;
  for (char c : bytes) {
    if (!accept_byte(static_cast<uint8_t>(c))) {
      stacks_ = std::move(saved);
      return false;
    }
  }
  return true;
}

bool GrammarMatcher::is_complete() const {
  for (size_t i = 0; i < stacks_.size(); ++i) {
    if (stacks_[i].empty()) return true;
  }
  return false;
}

bool GrammarMatcher::can_continue() const {
  for (size_t i = 0; i < stacks_.size(); ++i) {
    if (!stacks_[i].empty()) return true;
  }
  return false;
}

}  // namespace loom
