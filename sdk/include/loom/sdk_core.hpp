// C++ helpers shared by sdk.hpp and the per-kind vtable generators: errors, the error buffer,
// the Host wrapper and the exception guard every trampoline runs its body in.
// Depends only on the C ABI headers and the C++ standard library.
#pragma once

#include <algorithm>
#include <concepts>
#include <cstdint>
#include <cstring>
#include <exception>
#include <mutex>
#include <new>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include "loom/plugin.h"

namespace loom::sdk {

// Thrown for a wrong config table: create()/validate() return LOOM_ERR_CONFIG with the message.
class ConfigError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Thrown to return a specific status with a message (e.g. LOOM_ERR_UNSUPPORTED).
class Error : public std::runtime_error {
 public:
  Error(loom_status status, const std::string& message)
      : std::runtime_error(message), status_(status) {}
  loom_status status() const noexcept { return status_; }

 private:
  loom_status status_;
};

// Whether a struct that starts with `uint32_t struct_size` (a vtable, create args, a usage or
// context struct) is long enough to hold `member`. Structs only grow at the end, a minor version at
// a time, so this is the one check before reading a member a newer minor added: a shorter struct
// comes from an older peer, and the member counts as absent (NULL, or its default).
template <class S, class M>
bool covers(const S& s, M S::*member) noexcept {
  const auto offset = reinterpret_cast<const char*>(&(s.*member)) - reinterpret_cast<const char*>(&s);
  return s.struct_size >= static_cast<size_t>(offset) + sizeof(M);
}

// Whether an optional function member of a vtable is there: covered by struct_size and not NULL.
template <class S, class M>
bool present(const S& s, M S::*member) noexcept {
  return covers(s, member) && s.*member != nullptr;
}

// Writes message into a caller-owned buffer: at most capacity-1 bytes plus the NUL, truncated
// silently, never in the middle of a UTF-8 sequence. Safe on NULL or zero-capacity buffers.
inline void write_error(loom_error_buf* err, std::string_view message) noexcept {
  if (err == nullptr || err->data == nullptr || err->capacity == 0) return;
  size_t n = std::min(message.size(), err->capacity - 1);
  if (n < message.size()) {
    // message[n] is the first byte left out; if it continues a sequence, drop that sequence.
    while (n > 0 && (static_cast<unsigned char>(message[n]) & 0xC0u) == 0x80u) --n;
  }
  std::memcpy(err->data, message.data(), n);
  err->data[n] = '\0';
}

// A short human name for a status ("out of memory"), for messages.
inline const char* status_name(loom_status status) noexcept {
  switch (status) {
    case LOOM_OK:
      return "ok";
    case LOOM_ERR_INVALID_ARGUMENT:
      return "invalid argument";
    case LOOM_ERR_UNSUPPORTED:
      return "unsupported";
    case LOOM_ERR_OUT_OF_MEMORY:
      return "out of memory";
    case LOOM_ERR_NOT_FOUND:
      return "not found";
    case LOOM_ERR_CONFIG:
      return "config error";
    case LOOM_ERR_INTERNAL:
      return "internal error";
  }
  return "unknown status";
}

// The answer of a capability check (can a request of n tokens ever fit, can weights of this
// dtype be read): yes, or no with the reason. A plugin method returning Verdict answers and
// explains in one call: its trampoline sets *ok and, for a no, writes the reason into the caller's
// error buffer while returning LOOM_OK (the convention plugin.h states at loom_error_buf).
struct Verdict {
  bool ok = true;
  std::string reason;  // why not; empty when ok

  static Verdict yes() { return {}; }
  static Verdict no(std::string why) { return {false, std::move(why)}; }
  explicit operator bool() const noexcept { return ok; }
};

// An owned error buffer for calls a plugin makes into another plugin through the host
// (e.g. a scheduler calling the cache). Not copyable: buf points into the object itself.
class ErrorBuffer {
 public:
  ErrorBuffer() = default;
  ErrorBuffer(const ErrorBuffer&) = delete;
  ErrorBuffer& operator=(const ErrorBuffer&) = delete;
  loom_error_buf* buf() noexcept { return &buf_; }
  std::string_view str() const noexcept { return text_; }
  void clear() noexcept { text_[0] = '\0'; }

 private:
  char text_[512] = {0};
  loom_error_buf buf_{text_, sizeof(text_)};
};

// Throws sdk::Error(status, "<what>: <message>") unless status is LOOM_OK.
inline void check(loom_status status, const ErrorBuffer& err, std::string_view what) {
  if (status == LOOM_OK) return;
  std::string message(what);
  message += ": ";
  message += err.str().empty() ? std::string_view(status_name(status)) : err.str();
  throw Error(status, message);
}

// What the host offers a plugin, as a C++ object. Cheap to copy; valid from create() until
// destroy(), so a plugin may keep one as a member.
class Host {
 public:
  explicit Host(const loom_host_api* api) noexcept : api_(api) {}

  const loom_host_api* api() const noexcept { return api_; }
  int32_t num_threads() const noexcept {
    return api_ != nullptr && api_->num_threads > 0 ? api_->num_threads : 1;
  }
  int32_t num_cuda_devices() const noexcept { return api_ != nullptr ? api_->num_cuda_devices : 0; }

  // Logs one line built by streaming every part: host.log(LOOM_LOG_INFO, "blocks: ", n).
  template <class... Parts>
  void log(loom_log_level level, const Parts&... parts) const {
    if (api_ == nullptr || api_->log == nullptr) return;
    std::ostringstream line;
    (line << ... << parts);
    const std::string text = line.str();
    api_->log(api_->host_ctx, level, text.c_str());
  }
  template <class... Parts>
  void debug(const Parts&... parts) const {
    log(LOOM_LOG_DEBUG, parts...);
  }
  template <class... Parts>
  void info(const Parts&... parts) const {
    log(LOOM_LOG_INFO, parts...);
  }
  template <class... Parts>
  void warn(const Parts&... parts) const {
    log(LOOM_LOG_WARN, parts...);
  }
  template <class... Parts>
  void error(const Parts&... parts) const {
    log(LOOM_LOG_ERROR, parts...);
  }

  // Runs fn(begin, end, thread) -- or fn(begin, end) -- over [0, n) on the host's thread pool.
  // An exception thrown by fn on any thread is rethrown here (the first one wins) after every
  // range is done; it never unwinds through the host.
  template <class Fn>
  void parallel_for(int64_t n, Fn&& fn) const {
    if (n <= 0) return;
    struct Context {
      std::remove_reference_t<Fn>* fn;
      std::mutex mutex;
      std::exception_ptr error;
    } ctx{&fn, {}, {}};
    loom_parallel_fn trampoline = +[](void* raw, int64_t begin, int64_t end, int32_t thread) {
      auto* c = static_cast<Context*>(raw);
      try {
        if constexpr (std::is_invocable_v<Fn&, int64_t, int64_t, int32_t>) {
          (*c->fn)(begin, end, thread);
        } else {
          static_assert(std::is_invocable_v<Fn&, int64_t, int64_t>,
                        "parallel_for needs fn(int64_t begin, int64_t end[, int32_t thread])");
          (void)thread;
          (*c->fn)(begin, end);
        }
      } catch (...) {
        std::lock_guard<std::mutex> lock(c->mutex);
        if (!c->error) c->error = std::current_exception();
      }
    };
    if (api_ == nullptr || api_->parallel_for == nullptr) {
      trampoline(&ctx, 0, n, 0);
    } else {
      api_->parallel_for(api_->host_ctx, n, trampoline, &ctx);
    }
    if (ctx.error) std::rethrow_exception(ctx.error);
  }

 private:
  const loom_host_api* api_;
};

namespace detail {

// Runs body and turns its outcome into a status: a loom_status it returns is passed through
// (with a generic message when it is an error), void means LOOM_OK, and every exception becomes
// a status plus its text in err. Nothing escapes into the C caller.
template <class Body>
loom_status guarded(loom_error_buf* err, Body&& body) noexcept {
  try {
    if constexpr (std::is_void_v<std::invoke_result_t<Body&>>) {
      body();
      return LOOM_OK;
    } else {
      static_assert(std::is_same_v<std::invoke_result_t<Body&>, loom_status>,
                    "a plugin method must return void or loom_status");
      const loom_status status = body();
      if (status != LOOM_OK) write_error(err, status_name(status));
      return status;
    }
  } catch (const ConfigError& e) {
    write_error(err, e.what());
    return LOOM_ERR_CONFIG;
  } catch (const Error& e) {
    write_error(err, e.what());
    return e.status();
  } catch (const std::bad_alloc&) {
    write_error(err, "out of memory (std::bad_alloc)");
    return LOOM_ERR_OUT_OF_MEMORY;
  } catch (const std::exception& e) {
    write_error(err, e.what());
    return LOOM_ERR_INTERNAL;
  } catch (...) {
    write_error(err, "unknown exception");
    return LOOM_ERR_INTERNAL;
  }
}

// Writes a capability check's answer to the C out-pointer and, for a no, its reason to err. A bool
// answer is a Verdict without a reason.
inline loom_status answer(const Verdict& v, int32_t* ok, loom_error_buf* err) {
  if (ok == nullptr) throw Error(LOOM_ERR_INVALID_ARGUMENT, "the answer's out-pointer is NULL");
  *ok = v.ok ? 1 : 0;
  if (!v.ok) write_error(err, v.reason.empty() ? std::string_view("refused without a reason") : v.reason);
  return LOOM_OK;
}
inline loom_status answer(bool yes, int32_t* ok, loom_error_buf* err) { return answer(Verdict{yes, {}}, ok, err); }

// Runs a method that returns loom_status or void and gives its status (void: LOOM_OK).
template <class Call>
loom_status status_of(Call&& call) {
  if constexpr (std::is_void_v<std::invoke_result_t<Call&>>) {
    call();
    return LOOM_OK;
  } else {
    return call();
  }
}

template <class T>
T& self_as(void* self) noexcept {
  return *static_cast<T*>(self);
}

}  // namespace detail
}  // namespace loom::sdk
