// Where the running executable lives: the host searches it for plugins and the CLI for configs.
#pragma once

#include <filesystem>

namespace loom {

// Directory of /proc/self/exe; empty when it cannot be read.
std::filesystem::path executable_dir();

}  // namespace loom
