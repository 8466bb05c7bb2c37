#include "tools/plugin/skeleton.hpp"

#include <algorithm>
#include <cctype>
#include <fstream>
#include <system_error>

#include "core/common/error.hpp"
#include "core/plugin/plugin_kind.hpp"

namespace loom::tools {
namespace fs = std::filesystem;
namespace {

std::string replace_all(std::string text, const std::string& from, const std::string& to) {
  for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size()))
    text.replace(at, from.size(), to);
  return text;
}

std::string camel(const std::string& words) {
  std::string out;
  bool upper = true;
  for (char c : words) {
    if (c == '_' || c == '-') {
      upper = true;
      continue;
    }
    out += upper ? static_cast<char>(std::toupper(static_cast<unsigned char>(c))) : c;
    upper = false;
  }
  return out;
}

SkeletonKind kind_part(loom_plugin_kind kind) {
  switch (kind) {
    case LOOM_KIND_ATTENTION:
      return attention_skeleton();
    case LOOM_KIND_QUANTIZATION:
      return quantization_skeleton();
    case LOOM_KIND_SCHEDULER:
      return scheduler_skeleton();
    case LOOM_KIND_CACHE:
      return cache_skeleton();
    case LOOM_KIND_CACHE_OFFLOAD:
      return cache_offload_skeleton();
    case LOOM_KIND_SEMANTIC_CACHE:
      return semantic_cache_skeleton();
    case LOOM_KIND_SPECULATOR:
      return speculator_skeleton();
  }
  throw Error("no skeleton for plugin kind " + kind_name(kind));
}

// What every skeleton starts with: a build that finds the installed SDK, and the config rule
// every plugin follows (unknown keys are refused). A skeleton has no keys yet.
constexpr const char* kCMakeLists = R"skel(# @KIND@ plugin '@NAME@', made by `loom-plugin new @KIND@ @NAME@`. Build it against an
# installed Loom and run its tests:
#   cmake -S . -B build -DCMAKE_PREFIX_PATH=<loom install prefix>
#   cmake --build build && ctest --test-dir build --output-on-failure
# Then serve with it: [plugins] dirs = ["<this dir>/build"] and [@KIND@] plugin = "@NAME@".
cmake_minimum_required(VERSION 3.20)
project(loom_@KIND@_@IDENT@ LANGUAGES CXX)
set(CMAKE_CXX_STANDARD 20)
set(CMAKE_CXX_STANDARD_REQUIRED ON)
set(CMAKE_CXX_EXTENSIONS OFF)

find_package(LoomSDK 0.1 REQUIRED)

# libloom-@KIND@-@NAME@.so, with the flags the host expects (hidden visibility, no undefined
# symbols, -fno-gnu-unique, C++20, PIC).
loom_add_plugin(@KIND@ @NAME@ @FILE@.cpp)

# Conformance hook: test_@IDENT@ drives the class through its kind's calls (add your cases there);
# `loom-plugin inspect` checks that the host accepts the built library.
enable_testing()
add_executable(test_@IDENT@ test_@IDENT@.cpp)
target_link_libraries(test_@IDENT@ PRIVATE Loom::sdk)
add_test(NAME @IDENT@_calls COMMAND test_@IDENT@)
if(LoomSDK_PLUGIN_TOOL)
  add_test(NAME @IDENT@_accepted_by_host COMMAND ${LoomSDK_PLUGIN_TOOL} inspect $<TARGET_FILE:loom-@KIND@-@NAME@>)
endif()
)skel";

constexpr const char* kHeaderTop = R"skel(// @KIND@/@NAME@: made by `loom-plugin new`. The class below is plain C++; @FILE@.cpp turns it
// into the C ABI with one LOOM_@MACRO@_PLUGIN line (loom/sdk.hpp). Each method takes the C vtable
// function's arguments minus `self` and `err` (loom/@KIND@.h documents every one); throwing
// loom::sdk::Error(status, message) returns that status and message to the host.
#pragma once

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "loom/@KIND@.h"
#include "loom/sdk_core.hpp"

namespace @IDENT@_plugin {

// The plugin's config arrives as the JSON text of its TOML table (minus plugin/path). This
// skeleton has no keys yet, so anything but an empty object is refused, as unknown keys must be.
inline void refuse_config_keys(std::string_view config_json) {
  std::string text;
  for (char c : config_json)
    if (!std::isspace(static_cast<unsigned char>(c))) text += c;
  if (!text.empty() && text != "{}")
    throw loom::sdk::ConfigError("@KIND@ @NAME@: no config keys are known yet, got " + std::string(config_json));
}

}  // namespace @IDENT@_plugin
)skel";

constexpr const char* kSource = R"skel(// The shared object's entry: descriptor, C trampolines and the exported loom_plugin_entry_v1.
#include "loom/sdk.hpp"
#include "@FILE@.hpp"

LOOM_@MACRO@_PLUGIN(@CLASS@, "@NAME@", "0.1.0", "@KIND@ plugin @NAME@ (skeleton from loom-plugin new)");
)skel";

constexpr const char* kTest = R"skel(// Conformance hook for @KIND@/@NAME@: calls the class the way the host calls the plugin and
// checks exact results. Extend it with the cases your plugin must meet. Exit status 0 = pass.
#include <cstdio>
#include <cstdlib>

#include "@FILE@.hpp"

namespace {
int failures = 0;
void check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "FAILED: %s\n", what);
    ++failures;
  }
}
}  // namespace

int main() {
  const loom::sdk::Host host(nullptr);  // no host: logging is a no-op
  try {
@BODY@
  } catch (const std::exception& e) {
    std::fprintf(stderr, "FAILED: exception: %s\n", e.what());
    return 1;
  }
  if (failures == 0) std::printf("@KIND@ @NAME@: all checks passed\n");
  return failures == 0 ? 0 : 1;
}
)skel";

std::string macro_of(loom_plugin_kind kind) {
  std::string out;
  for (char c : kind_name(kind)) out += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

}  // namespace

std::string skeleton_class_name(loom_plugin_kind kind, const std::string& name) {
  std::string cls = camel(name) + camel(kind_name(kind));
  if (!cls.empty() && std::isdigit(static_cast<unsigned char>(cls[0]))) cls = "Plugin" + cls;
  return cls;
}

std::vector<fs::path> write_skeleton(loom_plugin_kind kind, const std::string& name, const fs::path& dir) {
  const bool valid = !name.empty() && std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-';
  });
  if (!valid) throw Error("invalid plugin name '" + name + "' (use letters, digits, '_' and '-')");
  const std::string ident = replace_all(name, "-", "_");
  const std::string file = ident + "_" + kind_name(kind);
  const SkeletonKind part = kind_part(kind);
  auto fill = [&](std::string text) {
    text = replace_all(text, "@BODY@", part.test_body);
    text = replace_all(text, "@FILE@", file);
    text = replace_all(text, "@CLASS@", skeleton_class_name(kind, name));
    text = replace_all(text, "@MACRO@", macro_of(kind));
    text = replace_all(text, "@IDENT@", ident);
    text = replace_all(text, "@KIND@", kind_name(kind));
    return replace_all(text, "@NAME@", name);
  };
  const std::vector<std::pair<fs::path, std::string>> files = {
      {dir / "CMakeLists.txt", fill(kCMakeLists)},
      {dir / (file + ".hpp"), fill(std::string(kHeaderTop) + part.class_header)},
      {dir / (file + ".cpp"), fill(kSource)},
      {dir / ("test_" + ident + ".cpp"), fill(kTest)},
  };
  for (const auto& [path, text] : files) {
    std::error_code ec;
    if (fs::exists(path, ec)) throw Error("'" + path.string() + "' already exists; nothing was written");
  }
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw Error("cannot create directory '" + dir.string() + "': " + ec.message());
  std::vector<fs::path> written;
  for (const auto& [path, text] : files) {
    std::ofstream out(path, std::ios::binary);
    out << text;
    if (!out) throw Error("cannot write '" + path.string() + "'");
    written.push_back(path);
  }
  return written;
}

}  // namespace loom::tools
