// The operator's control vectors of `basalt serve`: loaded into the engine at start from --control-vector
// NAME=FILE and --steer-dir DIR (every regular *.gguf in it, named by its stem); requests name them in "steer"
// and never make the server open a file. docs/server.md, "Steering".
#pragma once

#include <basalt/basalt.h>

#include <string>
#include <vector>

namespace basalt::serve {

// Loads every NAME=FILE of `named` and every regular *.gguf of `dir` ("": none) into `engine`
// (basalt_engine_add_control_vector) and fills `names` (sorted). Returns "" or why not, naming the option and
// the file. Call before the server takes requests.
std::string load_control_vectors(basalt_engine* engine, const std::vector<std::string>& named, const std::string& dir,
                                 std::vector<std::string>& names);

}  // namespace basalt::serve
