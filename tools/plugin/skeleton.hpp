// `loom-plugin new KIND NAME DIR`: writes a buildable plugin skeleton for one kind.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "loom/plugin.h"

namespace loom::tools {

// The per-kind part of a skeleton: the plugin class (a header, so the test can use it too) and
// the body of the test program's main(). Both use the placeholders @NAME@, @CLASS@ and @KIND@.
struct SkeletonKind {
  std::string class_header;  // after the generated includes and config helper
  std::string test_body;     // statements inside main(); `check(bool, what)` is in scope
};

SkeletonKind attention_skeleton();
SkeletonKind quantization_skeleton();
SkeletonKind scheduler_skeleton();
SkeletonKind cache_skeleton();
SkeletonKind cache_offload_skeleton();
SkeletonKind semantic_cache_skeleton();
SkeletonKind speculator_skeleton();

// "my_sched" -> "MySched" + "Scheduler": a C++ identifier for the class.
std::string skeleton_class_name(loom_plugin_kind kind, const std::string& name);

// Writes DIR/CMakeLists.txt, DIR/<name>_<kind>.hpp, DIR/<name>_<kind>.cpp and DIR/test_<name>.cpp;
// returns the files written. Throws loom::Error for an invalid name or when DIR already holds
// any of them (nothing is overwritten).
std::vector<std::filesystem::path> write_skeleton(loom_plugin_kind kind, const std::string& name,
                                                  const std::filesystem::path& dir);

}  // namespace loom::tools
