#include "model/model-path.hpp"

#include <algorithm>
#include <cstdlib>
#include <system_error>
#include <vector>

#include "host/library-path.hpp"
#include "support/error.hpp"

namespace basalt {
namespace {

constexpr const char* kDefaultModel = "target";
constexpr const char* kShippedPrefix = "basalt-fortunes-";

bool is_file(const std::filesystem::path& p) {
    std::error_code ec;
    return std::filesystem::is_regular_file(p, ec);
}

// The short names of the shipped models found in dir ("draft, target"), for error messages.
std::string shipped_names(const std::filesystem::path& dir) {
    std::vector<std::string> names;
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
        std::string f = e.path().filename().string();
        if (e.path().extension() != ".gguf") continue;
        f.resize(f.size() - 5);
        if (f.rfind(kShippedPrefix, 0) == 0) f = f.substr(std::char_traits<char>::length(kShippedPrefix));
        names.push_back(f);
    }
    std::sort(names.begin(), names.end());
    std::string s;
    for (const auto& n : names) s += (s.empty() ? "" : ", ") + n;
    return s.empty() ? "none" : s;
}

}  // namespace

std::filesystem::path models_dir() {
    if (const char* env = std::getenv("BASALT_MODELS_DIR"); env != nullptr && *env != '\0') return env;
    const auto lib = library_dir();
    if (lib.empty()) return {};
    return (lib.parent_path() / "share" / "basalt" / "models").lexically_normal();
}

std::filesystem::path resolve_model_path(const std::string& name) {
    // Paths (and anything that exists under that name: a file, or a directory or FIFO the reader refuses by
    // kind) are left to the GGUF reader, whose errors name the file.
    std::error_code ec;
    if (name.find('/') != std::string::npos || (!name.empty() && std::filesystem::exists(name, ec))) return name;
    const std::string n = name.empty() ? kDefaultModel : name;
    const auto dir = models_dir();
    for (const std::string& candidate : {n, n + ".gguf", std::string(kShippedPrefix) + n + ".gguf"}) {
        if (!dir.empty() && is_file(dir / candidate)) return dir / candidate;
    }
    fail(BASALT_ERR_NOT_FOUND,
         "model '{}' not found: no such file, and no shipped model of that name in '{}' (shipped models: {}; "
         "BASALT_MODELS_DIR overrides the folder)",
         n, dir.string(), shipped_names(dir));
}

}  // namespace basalt
