// Errors inside the core are exceptions of one type carrying a status code; they are turned into
// HTTP errors at the server edge and into loom_status at the plugin boundary.
#pragma once

#include <stdexcept>
#include <string>

#include "loom/plugin.h"

namespace loom {

class Error : public std::runtime_error {
 public:
  explicit Error(std::string message, loom_status code = LOOM_ERR_INVALID_ARGUMENT)
      : std::runtime_error(std::move(message)), code_(code) {}
  loom_status code() const { return code_; }

 private:
  loom_status code_;
};

// Throws loom::Error(message) unless cond holds.
#define LOOM_CHECK(cond, message)                                   \
  do {                                                              \
    if (!(cond)) throw ::loom::Error(std::string(message));         \
  } while (0)

// A fixed-size error buffer for calls across the plugin ABI.
struct ErrorBuffer {
  char text[1024] = {0};
  loom_error_buf buf() { return loom_error_buf{text, sizeof(text)}; }
  std::string str() const { return text; }
};

}  // namespace loom
