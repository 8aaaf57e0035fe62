// Where Basalt's shipped models live, and how short model names ("target", "draft") resolve to files.
#pragma once

#include <filesystem>
#include <string>

namespace basalt {

// Returns the shipped-models folder: $BASALT_MODELS_DIR if set, else <library_dir>/../share/basalt/models
// (the same relative place in the build tree and in an install). Thread-safe.
std::filesystem::path models_dir();

// Resolves `name` to a model file. A path (containing '/') or an existing file is returned unchanged; an empty name
// means the default model ("target"); a bare name (no '/') is looked up in models_dir() as NAME, NAME.gguf and
// basalt-fortunes-NAME.gguf. Throws BASALT_ERR_NOT_FOUND naming what was tried and the shipped names.
std::filesystem::path resolve_model_path(const std::string& name);

}  // namespace basalt
