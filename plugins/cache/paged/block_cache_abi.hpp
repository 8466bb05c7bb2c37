// The C ABI of a block-pool cache plugin (paged, radix): trampolines from loom_cache_vtable to a
// C++ class, each guarded so exceptions become a status and a message, plus validate/create/
// destroy for the descriptor. Mutating calls run the class's invariant check afterwards.
//
// Cache must provide: static constexpr const char* kLabel ("cache paged"); a constructor
// (const loom_host_api*, const loom_cache_create_args&, const kv_pool_config::Config&);
// num_blocks(), block_size(), fits(n, err), match_prefix(req), can_allocate(req, n),
// allocate(req, n, &cached), append(req, n), commit(req), free_seq(id), block_table(id),
// usage(out), fork(parent, child_id), take_block_copies() and after_mutation().
#pragma once

#include <string>

#include "kv_pool_config.hpp"
#include "loom/cache.h"
#include "loom/sdk_core.hpp"

namespace loom::block_cache {

template <class Cache>
struct Abi {
  static Cache& of(void* self) { return *static_cast<Cache*>(self); }

  static const loom_request_view& checked(const loom_request_view* req) {
    if (req == nullptr) {
      throw sdk::Error(LOOM_ERR_INVALID_ARGUMENT, std::string(Cache::kLabel) + ": request view is null");
    }
    return *req;
  }

  // Runs a mutating call, then the invariant check.
  template <class Body>
  static loom_status mutating(void* self, loom_error_buf* err, Body&& body) {
    return sdk::detail::guarded(err, [&] {
      body();
      of(self).after_mutation();
    });
  }

  static loom_status layout(void* self, loom_cache_layout* out, loom_error_buf* err) {
    return sdk::detail::guarded(err, [&] {
      out->num_blocks = of(self).num_blocks();
      out->block_size = of(self).block_size();
    });
  }

  static loom_status fits(void* self, int32_t max_total_tokens, int32_t* ok, loom_error_buf* err) {
    return sdk::detail::guarded(err, [&] { *ok = of(self).fits(max_total_tokens, err) ? 1 : 0; });
  }

  static loom_status match_prefix(void* self, const loom_request_view* req, int32_t* num_cached_tokens,
                                  loom_error_buf* err) {
    return sdk::detail::guarded(err, [&] { *num_cached_tokens = of(self).match_prefix(checked(req)); });
  }

  static loom_status can_allocate(void* self, const loom_request_view* req, int32_t num_new_tokens,
                                  int32_t* ok, loom_error_buf* err) {
    return sdk::detail::guarded(err, [&] { *ok = of(self).can_allocate(checked(req), num_new_tokens) ? 1 : 0; });
  }

  static loom_status allocate(void* self, const loom_request_view* req, int32_t num_new_tokens,
                              int32_t* num_cached_tokens, loom_error_buf* err) {
    return mutating(self, err, [&] { of(self).allocate(checked(req), num_new_tokens, num_cached_tokens); });
  }

  static loom_status append(void* self, const loom_request_view* req, int32_t num_new_tokens, loom_error_buf* err) {
    return mutating(self, err, [&] { of(self).append(checked(req), num_new_tokens); });
  }

  static loom_status commit(void* self, const loom_request_view* req, loom_error_buf* err) {
    return mutating(self, err, [&] { of(self).commit(checked(req)); });
  }

  static loom_status free_seq(void* self, uint64_t request_id, loom_error_buf* err) {
    return mutating(self, err, [&] { of(self).free_seq(request_id); });
  }

  static loom_status block_table(void* self, uint64_t request_id, loom_block_list* out, loom_error_buf* err) {
    return sdk::detail::guarded(err, [&] { *out = of(self).block_table(request_id); });
  }

  static loom_status usage(void* self, loom_cache_usage* out, loom_error_buf* err) {
    return sdk::detail::guarded(err, [&] { of(self).usage(out); });
  }

  static loom_status fork(void* self, const loom_request_view* parent, uint64_t child_id, loom_error_buf* err) {
    return mutating(self, err, [&] { of(self).fork(checked(parent), child_id); });
  }

  static loom_status take_block_copies(void* self, loom_block_copy_list* out, loom_error_buf* err) {
    return sdk::detail::guarded(err, [&] {
      if (out == nullptr) throw sdk::Error(LOOM_ERR_INVALID_ARGUMENT, std::string(Cache::kLabel) + ": copy list is null");
      *out = of(self).take_block_copies();
    });
  }

  static constexpr loom_cache_vtable kVtable = {sizeof(loom_cache_vtable), &layout, &fits, &match_prefix,
                                                &can_allocate, &allocate, &append, &commit, &free_seq,
                                                &block_table, &usage, &fork, &take_block_copies};

  static loom_status validate(const char* config_json, loom_error_buf* err) {
    return sdk::detail::guarded(err, [&] { kv_pool_config::parse_config(config_json, Cache::kLabel); });
  }

  static loom_status create(const loom_host_api* host, const void* create_args, const char* config_json,
                            void** self, const void** vtable, loom_error_buf* err) {
    return sdk::detail::guarded(err, [&] {
      const kv_pool_config::Config cfg = kv_pool_config::parse_config(config_json, Cache::kLabel);
      const auto* args = static_cast<const loom_cache_create_args*>(create_args);
      if (args == nullptr || args->struct_size < sizeof(loom_cache_create_args)) {
        throw sdk::Error(LOOM_ERR_INVALID_ARGUMENT, std::string(Cache::kLabel) + ": missing or too old create args");
      }
      kv_pool_config::check_kv_dtype(*args, Cache::kLabel);
      *self = new Cache(host, *args, cfg);
      *vtable = &kVtable;
    });
  }

  static void destroy(void* self) { delete static_cast<Cache*>(self); }

  static constexpr loom_plugin_desc descriptor(const char* name, const char* description) {
    return loom_plugin_desc{sizeof(loom_plugin_desc), LOOM_ABI_VERSION, LOOM_KIND_CACHE, LOOM_CACHE_IFACE_MAJOR,
                            LOOM_CACHE_IFACE_MINOR, name, "0.1.0", description, nullptr, &validate, &create,
                            &destroy};
  }
};

}  // namespace loom::block_cache
