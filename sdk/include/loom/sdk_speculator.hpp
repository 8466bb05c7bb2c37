// Per-kind glue for sdk.hpp, speculator kind: its identity (KindTraits) and the vtable generator.
//
//   class MySpeculator {
//    public:
//     MySpeculator(const loom::sdk::Host& host, const loom_speculator_create_args& args, C config);
//     void propose(loom_spec_request* requests, int32_t num_requests);
//     // optional:
//     void observe(uint64_t request_id, int32_t num_drafts, int32_t num_accepted);
//     void finish(uint64_t request_id, const int32_t* token_ids, int32_t num_tokens, int32_t num_prompt_tokens);
//   };
//   LOOM_SPECULATOR_PLUGIN(MySpeculator, "mine", "0.1.0", "one-line description");
#pragma once

#include "loom/sdk_core.hpp"
#include "loom/sdk_vtables.hpp"
#include "loom/speculator.h"

namespace loom::sdk {

template <>
struct KindTraits<loom_speculator_vtable> {
  static constexpr loom_plugin_kind kKind = LOOM_KIND_SPECULATOR;
  static constexpr uint32_t kMajor = LOOM_SPECULATOR_IFACE_MAJOR;
  static constexpr uint32_t kMinor = LOOM_SPECULATOR_IFACE_MINOR;
  using CreateArgs = loom_speculator_create_args;
};

namespace detail {
template <class T>
concept HasObserve = requires(T& t, uint64_t id, int32_t n) { t.observe(id, n, n); };
template <class T>
concept HasFinish = requires(T& t, uint64_t id, const int32_t* tokens, int32_t n) { t.finish(id, tokens, n, n); };
}  // namespace detail

template <class T>
struct VtableFor<loom_speculator_vtable, T> {
  static loom_status propose(void* s, loom_spec_request* requests, int32_t n, loom_error_buf* err) noexcept {
    return detail::guarded(err, [&] {
      if (n > 0 && requests == nullptr) throw Error(LOOM_ERR_INVALID_ARGUMENT, "propose: the request array is NULL");
      return detail::status_of([&] { return detail::self_as<T>(s).propose(requests, n); });
    });
  }
  static loom_status observe(void* s, uint64_t id, int32_t drafts, int32_t accepted, loom_error_buf* err) noexcept {
    return detail::guarded(err, [&] { return detail::status_of([&] { return detail::self_as<T>(s).observe(id, drafts, accepted); }); });
  }
  static loom_status finish(void* s, uint64_t id, const int32_t* tokens, int32_t n, int32_t prompt,
                            loom_error_buf* err) noexcept {
    return detail::guarded(err, [&] {
      if (n > 0 && tokens == nullptr) throw Error(LOOM_ERR_INVALID_ARGUMENT, "finish: the token ids are NULL");
      return detail::status_of([&] { return detail::self_as<T>(s).finish(id, tokens, n, prompt); });
    });
  }
  static constexpr decltype(loom_speculator_vtable::observe) observe_or_null() {
    if constexpr (detail::HasObserve<T>)
      return &observe;
    else
      return nullptr;
  }
  static constexpr decltype(loom_speculator_vtable::finish) finish_or_null() {
    if constexpr (detail::HasFinish<T>)
      return &finish;
    else
      return nullptr;
  }
  static const loom_speculator_vtable kTable;
};

template <class T>
const loom_speculator_vtable VtableFor<loom_speculator_vtable, T>::kTable = {
    sizeof(loom_speculator_vtable), &propose, observe_or_null(), finish_or_null()};

}  // namespace loom::sdk
