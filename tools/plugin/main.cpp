// loom-plugin: tools for plugin authors.
//   loom-plugin inspect FILE.so          what the descriptor says, and whether this host loads it
//   loom-plugin new KIND NAME DIR        a buildable plugin skeleton with a test
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "core/common/error.hpp"
#include "core/common/executable_dir.hpp"
#include "core/plugin/plugin_kind.hpp"
#include "tools/plugin/inspect.hpp"
#include "tools/plugin/skeleton.hpp"

int main(int argc, char** argv) {
  CLI::App app{"loom-plugin: inspect Loom plugins and start new ones"};
  app.require_subcommand(1);

  std::string file;
  CLI::App* inspect = app.add_subcommand(
      "inspect", "Print a plugin's descriptor: kind, ABI and interface versions and whether this host accepts them, "
                 "name, version, description, score on this machine, config keys. Exit status 1 when the host "
                 "would refuse it or it cannot run here.");
  inspect->add_option("file", file, "the plugin's shared object (libloom-<kind>-<name>.so)")->required();

  std::vector<std::string> kinds;
  for (const auto& info : loom::all_kinds()) kinds.emplace_back(info.name);
  std::string kind, name, dir;
  CLI::App* skeleton = app.add_subcommand(
      "new", "Write a plugin skeleton: CMakeLists.txt (find_package(LoomSDK) + loom_add_plugin), the plugin class "
             "with every required method, and a test program. Build it with -DCMAKE_PREFIX_PATH=<loom prefix>.");
  skeleton->add_option("kind", kind, "the plugin kind")->required()->check(CLI::IsMember(kinds));
  skeleton->add_option("name", name, "the plugin's name: letters, digits, '_' and '-'")->required();
  skeleton->add_option("dir", dir, "directory to write into (created; existing files are never overwritten)")
      ->required();

  CLI11_PARSE(app, argc, argv);
  try {
    if (inspect->parsed()) return loom::tools::inspect_plugin(file, std::cout);
    const auto written = loom::tools::write_skeleton(loom::parse_kind(kind), name, dir);
    for (const auto& path : written) std::cout << "wrote " << path.string() << "\n";
    // Run from an install, the prefix is the one this loom-plugin belongs to.
    const auto prefix = loom::executable_dir().parent_path();
    std::error_code ec;
    const std::string prefix_text =
        std::filesystem::exists(prefix / "lib/cmake/LoomSDK/LoomSDKConfig.cmake", ec) ? prefix.string() : "<loom prefix>";
    std::cout << "build: cmake -S " << dir << " -B " << dir << "/build -DCMAKE_PREFIX_PATH=" << prefix_text
              << " && cmake --build " << dir << "/build && ctest --test-dir " << dir << "/build\n";
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "loom-plugin: " << e.what() << "\n";
    return 1;
  }
}
