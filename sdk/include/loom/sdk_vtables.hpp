// Per-kind glue for sdk.hpp: for each kind, its identity (KindTraits) and a generator that turns
// a plain C++ class into the kind's C vtable (static trampolines, each run inside
// detail::guarded). A class method takes the C function's arguments minus `self` and `err`, and
// returns loom_status or void. Members marked (optional) in the C header stay NULL unless the
// class defines them.
#pragma once

#include <concepts>

#include "loom/attention.h"
#include "loom/cache.h"
#include "loom/cache_offload.h"
#include "loom/quantization.h"
#include "loom/scheduler.h"
#include "loom/sdk_core.hpp"
#include "loom/sdk_quant_reading.hpp"
#include "loom/semantic_cache.h"

namespace loom::sdk {

// KindTraits<Vtable>: kind enum, interface version and create-args type (void: none).
template <class Vtable>
struct KindTraits;

template <>
struct KindTraits<loom_attention_vtable> {
  static constexpr loom_plugin_kind kKind = LOOM_KIND_ATTENTION;
  static constexpr uint32_t kMajor = LOOM_ATTENTION_IFACE_MAJOR,
                            kMinor = LOOM_ATTENTION_IFACE_MINOR;
  using CreateArgs = loom_attention_create_args;
};
template <>
struct KindTraits<loom_quantization_vtable> {
  static constexpr loom_plugin_kind kKind = LOOM_KIND_QUANTIZATION;
  static constexpr uint32_t kMajor = LOOM_QUANTIZATION_IFACE_MAJOR;
  static constexpr uint32_t kMinor = LOOM_QUANTIZATION_IFACE_MINOR;
  using CreateArgs = loom_quantization_create_args;
};
template <>
struct KindTraits<loom_scheduler_vtable> {
  static constexpr loom_plugin_kind kKind = LOOM_KIND_SCHEDULER;
  static constexpr uint32_t kMajor = LOOM_SCHEDULER_IFACE_MAJOR,
                            kMinor = LOOM_SCHEDULER_IFACE_MINOR;
  using CreateArgs = loom_scheduler_create_args;
};
template <>
struct KindTraits<loom_cache_vtable> {
  static constexpr loom_plugin_kind kKind = LOOM_KIND_CACHE;
  static constexpr uint32_t kMajor = LOOM_CACHE_IFACE_MAJOR, kMinor = LOOM_CACHE_IFACE_MINOR;
  using CreateArgs = loom_cache_create_args;
};
template <>
struct KindTraits<loom_cache_offload_vtable> {
  static constexpr loom_plugin_kind kKind = LOOM_KIND_CACHE_OFFLOAD;
  static constexpr uint32_t kMajor = LOOM_CACHE_OFFLOAD_IFACE_MAJOR;
  static constexpr uint32_t kMinor = LOOM_CACHE_OFFLOAD_IFACE_MINOR;
  using CreateArgs = loom_cache_offload_create_args;
};
template <>
struct KindTraits<loom_semantic_cache_vtable> {
  static constexpr loom_plugin_kind kKind = LOOM_KIND_SEMANTIC_CACHE;
  static constexpr uint32_t kMajor = LOOM_SEMANTIC_CACHE_IFACE_MAJOR;
  static constexpr uint32_t kMinor = LOOM_SEMANTIC_CACHE_IFACE_MINOR;
  using CreateArgs = loom_semantic_cache_create_args;
};

// VtableFor<Vtable, T>::kTable is the static vtable for class T.
template <class Vtable, class T>
struct VtableFor;

namespace detail {
// A request view for a cache method that takes it by pointer, or by reference (then a NULL view
// is refused with LOOM_ERR_INVALID_ARGUMENT before the method runs).
struct RequestArg {
  const loom_request_view* ptr;
  operator const loom_request_view*() const noexcept { return ptr; }
  operator const loom_request_view&() const {
    if (ptr == nullptr) throw Error(LOOM_ERR_INVALID_ARGUMENT, "request view is NULL");
    return *ptr;
  }
};
// Whether t.method(args...) is well-formed, for optional members.
template <class T>
concept HasMatchPrefix = requires(T& t, RequestArg r, int32_t* n) { t.match_prefix(r, n); } ||
                         requires(T& t, RequestArg r) { t.match_prefix(r); };
template <class T>
concept HasCommit = requires(T& t, RequestArg r) { t.commit(r); };
// Cache interface 1.1: copy-on-write forking. A class has both or neither.
template <class T>
concept HasFork = requires(T& t, RequestArg parent, uint64_t child) { t.fork(parent, child); };
// Cache interface 1.3: trimming a sequence's tail (speculative decoding's rollback).
template <class T>
concept HasTrim = requires(T& t, RequestArg r, int32_t n) { t.trim(r, n); };
// Cache interface 1.4: evicted blocks for spilling, and the chain hashes a lookup would use.
template <class T>
concept HasTakeEvicted = requires(T& t) { t.take_evicted(); };
template <class T>
concept HasEvictCached = requires(T& t, int32_t n) { { t.evict_cached(n) } -> std::convertible_to<int32_t>; };
template <class T>
concept HasGroupBlockTable = requires(const T& t, uint64_t id, int32_t group) {
  { t.group_block_table(id, group) } -> std::convertible_to<loom_block_list>;
};
template <class T>
concept HasBlockHashes = requires(const T& t, RequestArg req, uint64_t* out, int32_t capacity) {
  { t.block_hashes(req, out, capacity) } -> std::convertible_to<int32_t>;
};
// Cache interface 1.6: the chain hashes of one block-table group.
template <class T>
concept HasGroupBlockHashes = requires(const T& t, RequestArg req, int32_t group, uint64_t* out, int32_t capacity) {
  { t.group_block_hashes(req, group, out, capacity) } -> std::convertible_to<int32_t>;
};
#if LOOM_CACHE_OFFLOAD_IFACE_MINOR >= 1
// Cache-offload interface 1.1: save with the entry's provenance.
template <class T>
concept HasSaveEntry = requires(T& t, const loom_offload_entry* e, int32_t block) { t.save_entry(e, block); };
#endif
// A cache class's after_mutation() runs after every call that changes its state (allocate,
// append, commit, free, fork): the place for an invariant check.
template <class T>
concept HasAfterMutation = requires(T& t) { t.after_mutation(); };
}  // namespace detail

template <class T>
struct VtableFor<loom_attention_vtable, T> {
  static loom_status forward(void* s, const loom_attention_batch* batch, const loom_tensor_view* q,
                             const loom_tensor_view* k, const loom_tensor_view* v,
                             loom_tensor_view* k_cache, loom_tensor_view* v_cache,
                             loom_tensor_view* out, loom_error_buf* err) noexcept {
    return detail::guarded(
        err, [&] { return detail::self_as<T>(s).forward(batch, q, k, v, k_cache, v_cache, out); });
  }
  // Interface 1.1: a class with forward_rope_k(batch, rope, q, k, v, k_cache, v_cache, out) rotates
  // K as it writes it; without one the entry stays null and the host rotates K itself.
  static loom_status forward_rope_k(void* s, const loom_attention_batch* batch, const loom_rope* rope,
                                    const loom_tensor_view* q, const loom_tensor_view* k, const loom_tensor_view* v,
                                    loom_tensor_view* k_cache, loom_tensor_view* v_cache, loom_tensor_view* out,
                                    loom_error_buf* err) noexcept {
    if constexpr (kHasRopeK) {
      return detail::guarded(err, [&] {
        return detail::self_as<T>(s).forward_rope_k(batch, rope, q, k, v, k_cache, v_cache, out);
      });
    } else {  // never in the table (null there); here only so the address is well-formed
      (void)s, (void)batch, (void)rope, (void)q, (void)k, (void)v, (void)k_cache, (void)v_cache, (void)out;
      write_error(err, "forward_rope_k is not implemented");
      return LOOM_ERR_UNSUPPORTED;
    }
  }
  static constexpr bool kHasRopeK = requires(T& t, const loom_attention_batch* b, const loom_rope* r,
                                             const loom_tensor_view* x, loom_tensor_view* y) {
    t.forward_rope_k(b, r, x, x, x, y, y, y);
  };
  // Interface 1.2: a class with forward_window(batch, window, rope, q, k, v, k_cache, v_cache, out)
  // declares sliding-window attention (rope is NULL unless the class also has forward_rope_k).
  static loom_status forward_window(void* s, const loom_attention_batch* batch, int32_t window, const loom_rope* rope,
                                    const loom_tensor_view* q, const loom_tensor_view* k, const loom_tensor_view* v,
                                    loom_tensor_view* k_cache, loom_tensor_view* v_cache, loom_tensor_view* out,
                                    loom_error_buf* err) noexcept {
    if constexpr (kHasWindow) {
      return detail::guarded(err, [&] {
        return detail::self_as<T>(s).forward_window(batch, window, rope, q, k, v, k_cache, v_cache, out);
      });
    } else {  // never in the table (null there); here only so the address is well-formed
      (void)s, (void)batch, (void)window, (void)rope, (void)q, (void)k, (void)v, (void)k_cache, (void)v_cache,
          (void)out;
      write_error(err, "forward_window is not implemented");
      return LOOM_ERR_UNSUPPORTED;
    }
  }
  static constexpr bool kHasWindow = requires(T& t, const loom_attention_batch* b, int32_t w, const loom_rope* r,
                                              const loom_tensor_view* x, loom_tensor_view* y) {
    t.forward_window(b, w, r, x, x, x, y, y, y);
  };
  static constexpr loom_attention_vtable kTable = {sizeof(loom_attention_vtable), &forward,
                                                   kHasRopeK ? &forward_rope_k : nullptr,
                                                   kHasWindow ? &forward_window : nullptr};
};

// A quantization class either has the C-shaped members (prepare_weight(weight, void** handle),
// linear(void* handle, x, y), release_weight(handle)), or the value-shaped ones:
//   Handle prepare_weight(const loom_tensor_view* weight, const loom_weight_info* info);  // info
//       may be NULL; Handle is a pointer or a std::unique_ptr
//   using WeightType = W;  // optional: handles are W*, linear gets `const W&`, and release
//                          // deletes the W unless the class has release_weight(void*)
// supports(dtype) may return Verdict or bool instead of taking the `int32_t* ok`.
template <class T>
struct VtableFor<loom_quantization_vtable, T> {
  static constexpr bool kTyped = requires { typename T::WeightType; };
  static constexpr bool kValuePrepare =
      requires(T& t, const loom_tensor_view* w, const loom_weight_info* i) { t.prepare_weight(w, i); };

  static loom_status supports(void* s, loom_dtype dtype, int32_t* ok, loom_error_buf* err) noexcept {
    return detail::guarded(err, [&] {
      T& t = detail::self_as<T>(s);
      if constexpr (requires(T& x, loom_dtype d) { x.supports(d); })
        return detail::answer(t.supports(dtype), ok, err);
      else
        return detail::status_of([&] { return t.supports(dtype, ok); });
    });
  }
  // A value-shaped prepare_weight's result, as the opaque handle.
  static void* handle_of(T& t, const loom_tensor_view* weight, const loom_weight_info* info) {
    auto made = t.prepare_weight(weight, info);
    if constexpr (requires { made.release(); })
      return made.release();
    else
      return made;
  }
  static loom_status prepare_weight(void* s, const loom_tensor_view* weight, void** handle,
                                    loom_error_buf* err) noexcept {
    return detail::guarded(err, [&] {
      if constexpr (kValuePrepare) {
        *handle = handle_of(detail::self_as<T>(s), weight, nullptr);
        return LOOM_OK;
      } else {
        return detail::status_of([&] { return detail::self_as<T>(s).prepare_weight(weight, handle); });
      }
    });
  }
  static loom_status linear(void* s, void* handle, const loom_tensor_view* x, loom_tensor_view* y,
                            loom_error_buf* err) noexcept {
    return detail::guarded(err, [&] {
      if constexpr (kTyped) {
        if (handle == nullptr) throw Error(LOOM_ERR_INVALID_ARGUMENT, "weight handle is NULL");
        return detail::status_of([&] {
          return detail::self_as<T>(s).linear(*static_cast<const typename T::WeightType*>(handle), x, y);
        });
      } else {
        return detail::status_of([&] { return detail::self_as<T>(s).linear(handle, x, y); });
      }
    });
  }
  static void release_weight(void* s, void* handle) noexcept {
    // Cannot report: a release that throws is swallowed (and must not leak by design).
    (void)detail::guarded(nullptr, [&] {
      if constexpr (requires(T& t, void* h) { t.release_weight(h); })
        detail::self_as<T>(s).release_weight(handle);
      else
        delete static_cast<typename T::WeightType*>(handle);
    });
  }
  // prepare_weight with the weight's name, role and companions (interface 1.1).
  static loom_status prepare_weight_info(void* s, const loom_tensor_view* weight, const loom_weight_info* info,
                                         void** handle, loom_error_buf* err) noexcept {
    return detail::guarded(err, [&] {
      T& t = detail::self_as<T>(s);
      if constexpr (kValuePrepare) {
        *handle = handle_of(t, weight, info);
        return LOOM_OK;
      } else if constexpr (requires { t.prepare_weight_info(weight, info, handle); }) {
        return detail::status_of([&] { return t.prepare_weight_info(weight, info, handle); });
      } else {
        return detail::status_of([&] { return t.prepare_weight(weight, handle); });
      }
    });
  }
  // A plugin class with linear_group(handles, count, x, y) serves several linears on one x in
  // one call (quantization interface 1.2); without it the host calls linear for each.
  static constexpr bool kHasGroup =
      requires(T& t, void* const* h, const loom_tensor_view* x, loom_tensor_view* y) { t.linear_group(h, 1, x, y); };
  static loom_status linear_group(void* s, void* const* handles, int32_t count, const loom_tensor_view* x,
                                  loom_tensor_view* y, loom_error_buf* err) noexcept {
    return detail::guarded(err, [&] {
      if constexpr (kHasGroup) return detail::status_of([&] { return detail::self_as<T>(s).linear_group(handles, count, x, y); });
      else return LOOM_ERR_UNSUPPORTED;  // never in the table (null there)
    });
  }
  // A plugin class with reads(format, dtype) -> Reading claims the formats it reads (interface
  // 1.3); without it the host infers an answer from supports().
  static constexpr bool kHasReads = requires(const T& t, loom_dtype d) {
    { t.reads(std::string_view(), d) } -> std::same_as<Reading>;
  };
  static loom_status reads(void* s, const char* format, loom_dtype dtype, int32_t* reading,
                           loom_error_buf* err) noexcept {
    return detail::guarded(err, [&] {
      if constexpr (kHasReads) {
        if (reading == nullptr) throw Error(LOOM_ERR_INVALID_ARGUMENT, "the answer's out-pointer is NULL");
        const Reading r = detail::self_as<T>(s).reads(std::string_view(format == nullptr ? "" : format), dtype);
        *reading = r.how;
        if (r.how == LOOM_QUANT_CANNOT_READ)
          write_error(err, r.reason.empty() ? std::string_view("refused without a reason") : r.reason);
        return LOOM_OK;
      } else {
        return LOOM_ERR_UNSUPPORTED;  // never in the table (null there)
      }
    });
  }
  // A plugin class with linear_experts(handles, count, offsets, x, y) runs a mixture-of-experts
  // layer's expert GEMMs in one call (interface 1.4); without it the host calls linear per expert.
  static constexpr bool kHasExperts = requires(T& t, void* const* h, const int32_t* o, const loom_tensor_view* x,
                                               loom_tensor_view* y) { t.linear_experts(h, 1, o, x, y); };
  static loom_status linear_experts(void* s, void* const* handles, int32_t count, const int32_t* offsets,
                                    const loom_tensor_view* x, loom_tensor_view* y, loom_error_buf* err) noexcept {
    return detail::guarded(err, [&] {
      if constexpr (kHasExperts)
        return detail::status_of([&] { return detail::self_as<T>(s).linear_experts(handles, count, offsets, x, y); });
      else return LOOM_ERR_UNSUPPORTED;  // never in the table (null there)
    });
  }
  // A plugin class with linear_top_k(handle, x, k, ids, values) selects a head's k largest outputs
  // per row itself (interface 1.5); without it the host calls linear and selects.
  static constexpr bool kHasTopK = requires(T& t, void* h, const loom_tensor_view* x, int32_t* i, float* v) {
    t.linear_top_k(h, x, 1, i, v);
  };
  static loom_status linear_top_k(void* s, void* handle, const loom_tensor_view* x, int32_t k, int32_t* ids,
                                  float* values, loom_error_buf* err) noexcept {
    return detail::guarded(err, [&] {
      if constexpr (kHasTopK)
        return detail::status_of([&] { return detail::self_as<T>(s).linear_top_k(handle, x, k, ids, values); });
      else return LOOM_ERR_UNSUPPORTED;  // never in the table (null there)
    });
  }
  static constexpr loom_quantization_vtable kTable = {sizeof(loom_quantization_vtable), &supports,
                                                      &prepare_weight, &linear, &release_weight,
                                                      &prepare_weight_info,
                                                      kHasGroup ? &linear_group : nullptr,
                                                      kHasReads ? &reads : nullptr,
                                                      kHasExperts ? &linear_experts : nullptr,
                                                      kHasTopK ? &linear_top_k : nullptr};
};

template <class T>
struct VtableFor<loom_scheduler_vtable, T> {
  static loom_status add_request(void* s, const loom_request_view* req,
                                 loom_error_buf* err) noexcept {
    return detail::guarded(err, [&] { return detail::self_as<T>(s).add_request(req); });
  }
  static loom_status remove_request(void* s, uint64_t id, loom_error_buf* err) noexcept {
    return detail::guarded(err, [&] { return detail::self_as<T>(s).remove_request(id); });
  }
  static loom_status schedule(void* s, const loom_sched_context* ctx, loom_sched_output* out,
                              loom_error_buf* err) noexcept {
    return detail::guarded(err, [&] { return detail::self_as<T>(s).schedule(ctx, out); });
  }
  static loom_status stats(void* s, loom_sched_stats* out, loom_error_buf* err) noexcept {
    return detail::guarded(err, [&] { return detail::self_as<T>(s).stats(out); });
  }
  static constexpr loom_scheduler_vtable kTable = {sizeof(loom_scheduler_vtable), &add_request,
                                                   &remove_request, &schedule, &stats};
};

// A cache class's members take the C function's arguments minus self and err, with the request
// view by pointer or by reference. Where the C function has one out-pointer, the class may return
// the value instead: loom_cache_layout layout(), Verdict (or bool) fits(n) and
// can_allocate(req, n), int32_t match_prefix(req), loom_block_list block_table(id),
// loom_block_copy_list take_block_copies().
template <class T>
struct VtableFor<loom_cache_vtable, T> {
  using Req = const loom_request_view*;
  using Arg = detail::RequestArg;
  // Runs a call that changes the cache's state, then the class's after_mutation() (if any).
  template <class Body>
  static loom_status mutating(void* s, loom_error_buf* err, Body&& body) noexcept {
    return detail::guarded(err, [&] {
      const loom_status status = detail::status_of(body);
      if constexpr (detail::HasAfterMutation<T>) {
        if (status == LOOM_OK) detail::self_as<T>(s).after_mutation();
      }
      return status;
    });
  }
  static loom_status layout(void* s, loom_cache_layout* out, loom_error_buf* err) noexcept {
    return detail::guarded(err, [&] {
      T& t = detail::self_as<T>(s);
      if constexpr (requires { t.layout(); }) {
        const loom_cache_layout l = t.layout();
        out->num_blocks = l.num_blocks;
        out->block_size = l.block_size;
        return LOOM_OK;
      } else {
        return detail::status_of([&] { return t.layout(out); });
      }
    });
  }
  static loom_status fits(void* s, int32_t max_total, int32_t* ok, loom_error_buf* err) noexcept {
    return detail::guarded(err, [&] {
      T& t = detail::self_as<T>(s);
      if constexpr (requires { t.fits(max_total); })
        return detail::answer(t.fits(max_total), ok, err);
      else
        return detail::status_of([&] { return t.fits(max_total, ok); });
    });
  }
  static loom_status match_prefix(void* s, Req req, int32_t* n, loom_error_buf* err) noexcept {
    return detail::guarded(err, [&] {
      T& t = detail::self_as<T>(s);
      if constexpr (requires { t.match_prefix(Arg{req}); }) {
        *n = t.match_prefix(Arg{req});
        return LOOM_OK;
      } else {
        return detail::status_of([&] { return t.match_prefix(Arg{req}, n); });
      }
    });
  }
  static loom_status can_allocate(void* s, Req req, int32_t n, int32_t* ok, loom_error_buf* err) noexcept {
    return detail::guarded(err, [&] {
      T& t = detail::self_as<T>(s);
      if constexpr (requires { t.can_allocate(Arg{req}, n); })
        return detail::answer(t.can_allocate(Arg{req}, n), ok, err);
      else
        return detail::status_of([&] { return t.can_allocate(Arg{req}, n, ok); });
    });
  }
  static loom_status allocate(void* s, Req req, int32_t n, int32_t* cached, loom_error_buf* err) noexcept {
    return mutating(s, err, [&] { return detail::self_as<T>(s).allocate(Arg{req}, n, cached); });
  }
  static loom_status append(void* s, Req req, int32_t n, loom_error_buf* err) noexcept {
    return mutating(s, err, [&] { return detail::self_as<T>(s).append(Arg{req}, n); });
  }
  static loom_status commit(void* s, Req req, loom_error_buf* err) noexcept {
    return mutating(s, err, [&] { return detail::self_as<T>(s).commit(Arg{req}); });
  }
  static loom_status free(void* s, uint64_t id, loom_error_buf* err) noexcept {
    return mutating(s, err, [&] { return detail::self_as<T>(s).free(id); });
  }
  static loom_status block_table(void* s, uint64_t id, loom_block_list* out, loom_error_buf* err) noexcept {
    return detail::guarded(err, [&] {
      T& t = detail::self_as<T>(s);
      if constexpr (requires { t.block_table(id); }) {
        *out = t.block_table(id);
        return LOOM_OK;
      } else {
        return detail::status_of([&] { return t.block_table(id, out); });
      }
    });
  }
  static loom_status usage(void* s, loom_cache_usage* out, loom_error_buf* err) noexcept {
    return detail::guarded(err, [&] { return detail::self_as<T>(s).usage(out); });
  }
  static loom_status fork(void* s, Req parent, uint64_t child_id, loom_error_buf* err) noexcept {
    return mutating(s, err, [&] { return detail::self_as<T>(s).fork(Arg{parent}, child_id); });
  }
  static loom_status take_block_copies(void* s, loom_block_copy_list* out, loom_error_buf* err) noexcept {
    return detail::guarded(err, [&] {
      if (out == nullptr) throw Error(LOOM_ERR_INVALID_ARGUMENT, "take_block_copies: the list is NULL");
      T& t = detail::self_as<T>(s);
      if constexpr (requires { t.take_block_copies(); }) {
        *out = t.take_block_copies();
        return LOOM_OK;
      } else {
        return detail::status_of([&] { return t.take_block_copies(out); });
      }
    });
  }
#if LOOM_CACHE_IFACE_MINOR >= 3  // a plugin built against an older cache.h has no trim
  static loom_status trim(void* s, Req req, int32_t n, loom_error_buf* err) noexcept {
    return mutating(s, err, [&] { return detail::self_as<T>(s).trim(Arg{req}, n); });
  }
  static constexpr decltype(loom_cache_vtable::trim) trim_or_null() {
    if constexpr (detail::HasTrim<T>)
      return &trim;
    else
      return nullptr;
  }
#endif
  // Optional members: only referenced (and so only instantiated) when the class has them.
  static constexpr decltype(loom_cache_vtable::match_prefix) match_prefix_or_null() {
    if constexpr (detail::HasMatchPrefix<T>)
      return &match_prefix;
    else
      return nullptr;
  }
  static constexpr decltype(loom_cache_vtable::commit) commit_or_null() {
    if constexpr (detail::HasCommit<T>)
      return &commit;
    else
      return nullptr;
  }
  static constexpr decltype(loom_cache_vtable::fork) fork_or_null() {
    if constexpr (detail::HasFork<T>)
      return &fork;
    else
      return nullptr;
  }
  static constexpr decltype(loom_cache_vtable::take_block_copies) take_block_copies_or_null() {
    if constexpr (detail::HasFork<T>)
      return &take_block_copies;
    else
      return nullptr;
  }
#if LOOM_CACHE_IFACE_MINOR >= 4
  // take_evicted(): loom_evicted_block_list; block_hashes(req, out, capacity): the count written.
  static loom_status take_evicted(void* s, loom_evicted_block_list* out, loom_error_buf* err) noexcept {
    return detail::guarded(err, [&] {
      if (out == nullptr) throw Error(LOOM_ERR_INVALID_ARGUMENT, "take_evicted: the list is NULL");
      *out = detail::self_as<T>(s).take_evicted();
      return LOOM_OK;
    });
  }
  static loom_status block_hashes(void* s, Req req, uint64_t* out, int32_t capacity, int32_t* count,
                                  loom_error_buf* err) noexcept {
    return detail::guarded(err, [&] {
      if (count == nullptr || (out == nullptr && capacity > 0))
        throw Error(LOOM_ERR_INVALID_ARGUMENT, "block_hashes: out or count is NULL");
      *count = detail::self_as<T>(s).block_hashes(Arg{req}, out, capacity);
      return LOOM_OK;
    });
  }
  static loom_status evict_cached(void* s, int32_t max_blocks, int32_t* count, loom_error_buf* err) noexcept {
    return mutating(s, err, [&] {
      if (count == nullptr) throw Error(LOOM_ERR_INVALID_ARGUMENT, "evict_cached: count is NULL");
      *count = detail::self_as<T>(s).evict_cached(max_blocks);
      return LOOM_OK;
    });
  }
  static constexpr decltype(loom_cache_vtable::evict_cached) evict_cached_or_null() {
    if constexpr (detail::HasEvictCached<T>)
      return &evict_cached;
    else
      return nullptr;
  }
  static constexpr decltype(loom_cache_vtable::take_evicted) take_evicted_or_null() {
    if constexpr (detail::HasTakeEvicted<T>)
      return &take_evicted;
    else
      return nullptr;
  }
  static constexpr decltype(loom_cache_vtable::block_hashes) block_hashes_or_null() {
    if constexpr (detail::HasBlockHashes<T>)
      return &block_hashes;
    else
      return nullptr;
  }
#endif
#if LOOM_CACHE_IFACE_MINOR >= 5
  // group_block_table(id, group): loom_block_list (interface 1.5's block-table groups).
  static loom_status group_block_table(void* s, uint64_t id, int32_t group, loom_block_list* out,
                                       loom_error_buf* err) noexcept {
    return detail::guarded(err, [&] {
      if (out == nullptr) throw Error(LOOM_ERR_INVALID_ARGUMENT, "group_block_table: the list is NULL");
      *out = detail::self_as<T>(s).group_block_table(id, group);
      return LOOM_OK;
    });
  }
  static constexpr decltype(loom_cache_vtable::group_block_table) group_block_table_or_null() {
    if constexpr (detail::HasGroupBlockTable<T>)
      return &group_block_table;
    else
      return nullptr;
  }
#endif
#if LOOM_CACHE_IFACE_MINOR >= 6
  // group_block_hashes(req, group, out, capacity): the count written (interface 1.6).
  static loom_status group_block_hashes(void* s, Req req, int32_t group, uint64_t* out, int32_t capacity,
                                        int32_t* count, loom_error_buf* err) noexcept {
    return detail::guarded(err, [&] {
      if (count == nullptr || (out == nullptr && capacity > 0))
        throw Error(LOOM_ERR_INVALID_ARGUMENT, "group_block_hashes: out or count is NULL");
      *count = detail::self_as<T>(s).group_block_hashes(Arg{req}, group, out, capacity);
      return LOOM_OK;
    });
  }
  static constexpr decltype(loom_cache_vtable::group_block_hashes) group_block_hashes_or_null() {
    if constexpr (detail::HasGroupBlockHashes<T>)
      return &group_block_hashes;
    else
      return nullptr;
  }
#endif
  static const loom_cache_vtable kTable;  // defined below: it calls the functions above
};

template <class T>
const loom_cache_vtable VtableFor<loom_cache_vtable, T>::kTable = {sizeof(loom_cache_vtable),
                                                                   &layout,
                                                                   &fits,
                                                                   match_prefix_or_null(),
                                                                   &can_allocate,
                                                                   &allocate,
                                                                   &append,
                                                                   commit_or_null(),
                                                                   &free,
                                                                   &block_table,
                                                                   &usage,
                                                                   fork_or_null(),
                                                                   take_block_copies_or_null(),
#if LOOM_CACHE_IFACE_MINOR >= 3
                                                                   trim_or_null(),
#endif
#if LOOM_CACHE_IFACE_MINOR >= 4
                                                                   take_evicted_or_null(),
                                                                   block_hashes_or_null(),
                                                                   evict_cached_or_null(),
#endif
#if LOOM_CACHE_IFACE_MINOR >= 5
                                                                   group_block_table_or_null(),
#endif
#if LOOM_CACHE_IFACE_MINOR >= 6
                                                                   group_block_hashes_or_null(),
#endif
};

template <class T>
struct VtableFor<loom_cache_offload_vtable, T> {
  static loom_status save(void* s, uint64_t key, int32_t block, loom_error_buf* err) noexcept {
    return detail::guarded(err, [&] { return detail::self_as<T>(s).save(key, block); });
  }
  static loom_status load(void* s, uint64_t key, int32_t block, loom_error_buf* err) noexcept {
    return detail::guarded(err, [&] { return detail::self_as<T>(s).load(key, block); });
  }
  static loom_status contains(void* s, uint64_t key, int32_t* present,
                              loom_error_buf* err) noexcept {
    return detail::guarded(err, [&] { return detail::self_as<T>(s).contains(key, present); });
  }
  static loom_status drop(void* s, uint64_t key, loom_error_buf* err) noexcept {
    return detail::guarded(err, [&] { return detail::self_as<T>(s).drop(key); });
  }
  static loom_status usage(void* s, loom_cache_offload_usage* out, loom_error_buf* err) noexcept {
    return detail::guarded(err, [&] { return detail::self_as<T>(s).usage(out); });
  }
#if LOOM_CACHE_OFFLOAD_IFACE_MINOR >= 1
  static loom_status save_entry(void* s, const loom_offload_entry* e, int32_t block, loom_error_buf* err) noexcept {
    return detail::guarded(err, [&] {
      if (e == nullptr) throw Error(LOOM_ERR_INVALID_ARGUMENT, "save_entry: the entry is NULL");
      return detail::status_of([&] { return detail::self_as<T>(s).save_entry(e, block); });
    });
  }
  static constexpr decltype(loom_cache_offload_vtable::save_entry) save_entry_or_null() {
    if constexpr (detail::HasSaveEntry<T>)
      return &save_entry;
    else
      return nullptr;
  }
  static constexpr loom_cache_offload_vtable kTable = {
      sizeof(loom_cache_offload_vtable), &save, &load, &contains, &drop, &usage, save_entry_or_null()};
#else
  static constexpr loom_cache_offload_vtable kTable = {
      sizeof(loom_cache_offload_vtable), &save, &load, &contains, &drop, &usage};
#endif
};

template <class T>
struct VtableFor<loom_semantic_cache_vtable, T> {
  static loom_status lookup(void* s, const loom_semantic_query* query, int32_t* hit,
                            loom_semantic_answer* answer, loom_error_buf* err) noexcept {
    return detail::guarded(err, [&] { return detail::self_as<T>(s).lookup(query, hit, answer); });
  }
  static loom_status store(void* s, const loom_semantic_query* query,
                           const loom_semantic_answer* answer, loom_error_buf* err) noexcept {
    return detail::guarded(err, [&] { return detail::self_as<T>(s).store(query, answer); });
  }
  static int32_t needs_embedding(void* s) noexcept { return detail::self_as<T>(s).needs_embedding() ? 1 : 0; }
  static loom_status stats(void* s, loom_semantic_cache_stats* out, loom_error_buf* err) noexcept {
    return detail::guarded(err, [&] { return detail::self_as<T>(s).stats(out); });
  }
  // Optional members: only referenced when the class has them.
  static constexpr decltype(loom_semantic_cache_vtable::needs_embedding) needs_embedding_or_null() {
    if constexpr (requires(T& t) { t.needs_embedding(); })
      return &needs_embedding;
    else
      return nullptr;
  }
  static constexpr decltype(loom_semantic_cache_vtable::stats) stats_or_null() {
    if constexpr (requires(T& t, loom_semantic_cache_stats* o) { t.stats(o); })
      return &stats;
    else
      return nullptr;
  }
  static constexpr loom_semantic_cache_vtable kTable = {sizeof(loom_semantic_cache_vtable), &lookup, &store,
                                                        needs_embedding_or_null(), stats_or_null()};
};

}  // namespace loom::sdk
