// Where libbasalt lives on disk, so an installed tree finds its plugins relative to itself.
#pragma once

#include <filesystem>

namespace basalt {

// Returns the folder holding libbasalt (empty if it cannot be determined).
std::filesystem::path library_dir();
// Returns the default plugin folder: <library_dir>/basalt/plugins.
std::filesystem::path default_plugin_dir();

}  // namespace basalt
