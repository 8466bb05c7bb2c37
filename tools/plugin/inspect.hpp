// `loom-plugin inspect FILE.so`: what a plugin's descriptor says and whether this host takes it.
#pragma once

#include <filesystem>
#include <ostream>

namespace loom::tools {

// Prints the descriptor of `file` (kind, ABI and interface versions beside the host's, name,
// version, description), the host's verdict, the score on this machine (with the reason when 0)
// and the published config keys. Returns 0 when the host accepts the plugin and it can run
// here, 1 otherwise (the reason is printed). Throws loom::Error when the file is not a plugin.
int inspect_plugin(const std::filesystem::path& file, std::ostream& out);

}  // namespace loom::tools
