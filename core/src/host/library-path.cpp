#include "host/library-path.hpp"

#include <dlfcn.h>

#include <system_error>

namespace basalt {
namespace {
// Any function defined in libbasalt: dladdr maps its address back to the library file.
void anchor() {}
}  // namespace

std::filesystem::path library_dir() {
    Dl_info info{};
    if (dladdr(reinterpret_cast<void*>(&anchor), &info) == 0 || info.dli_fname == nullptr) return {};
    std::error_code ec;
    auto path = std::filesystem::canonical(info.dli_fname, ec);
    if (ec) path = std::filesystem::absolute(info.dli_fname, ec);
    return path.parent_path();
}

std::filesystem::path default_plugin_dir() {
    auto dir = library_dir();
    if (dir.empty()) return {};
    return dir / "basalt" / "plugins";
}

}  // namespace basalt
