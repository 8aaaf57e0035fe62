#include "control-vectors.hpp"

#include <algorithm>
#include <filesystem>
#include <system_error>
#include <utility>

namespace basalt::serve {

std::string load_control_vectors(basalt_engine* engine, const std::vector<std::string>& named, const std::string& dir,
                                 std::vector<std::string>& names) {
    std::vector<std::pair<std::string, std::string>> todo;  // name, file; what to say on failure
    std::vector<std::string> origin;
    for (const std::string& nf : named) {
        const size_t eq = nf.find('=');
        if (eq == std::string::npos || eq == 0 || eq + 1 == nf.size())
            return "--control-vector '" + nf + "' is not NAME=FILE";
        todo.emplace_back(nf.substr(0, eq), nf.substr(eq + 1));
        origin.push_back("--control-vector " + nf);
    }
    if (!dir.empty()) {
        namespace fs = std::filesystem;
        std::error_code ec;
        if (!fs::is_directory(dir, ec)) return "--steer-dir '" + dir + "' is not a directory";
        std::vector<fs::path> files;
        for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
            const fs::path& p = it->path();
            if (p.extension() != ".gguf") continue;
            // Only regular files (a link is followed and its target must be one); FIFOs and devices are skipped.
            if (!fs::is_regular_file(p, ec)) continue;
            files.push_back(p);
        }
        if (ec) return "--steer-dir '" + dir + "': " + ec.message();
        std::sort(files.begin(), files.end());
        for (const fs::path& p : files) {
            todo.emplace_back(p.stem().string(), p.string());
            origin.push_back("--steer-dir " + dir);
        }
    }
    for (size_t i = 0; i < todo.size(); ++i) {
        const auto& [name, file] = todo[i];
        if (basalt_engine_add_control_vector(engine, name.c_str(), file.c_str()) != BASALT_OK)
            return origin[i] + ": control vector '" + name + "': " + basalt_last_error();
        names.push_back(name);
    }
    std::sort(names.begin(), names.end());
    return "";
}

}  // namespace basalt::serve
