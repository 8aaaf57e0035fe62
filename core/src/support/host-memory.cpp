#include "support/host-memory.hpp"

#include <fstream>
#include <sstream>

#include <fmt/format.h>

namespace basalt {
namespace {

// The value of a "Key:   1234 kB" line in bytes, or nullopt when the key is absent or malformed.
std::optional<uint64_t> field_bytes(std::string_view text, std::string_view key) {
    size_t at = 0;
    while (at < text.size()) {
        const size_t end = std::min(text.find('\n', at), text.size());
        const std::string_view line = text.substr(at, end - at);
        at = end + 1;
        if (line.size() <= key.size() || line.substr(0, key.size()) != key || line[key.size()] != ':') continue;
        size_t i = key.size() + 1;
        while (i < line.size() && line[i] == ' ') ++i;
        uint64_t v = 0;
        size_t digits = 0;
        for (; i < line.size() && line[i] >= '0' && line[i] <= '9'; ++i, ++digits) {
            if (v > (UINT64_MAX - 9) / 10) return std::nullopt;
            v = v * 10 + static_cast<uint64_t>(line[i] - '0');
        }
        if (digits == 0) return std::nullopt;
        const std::string_view unit = line.substr(i);
        if (unit == " kB") {
            if (v > UINT64_MAX / 1024) return std::nullopt;
            return v * 1024;
        }
        return unit.empty() ? std::optional<uint64_t>(v) : std::nullopt;
    }
    return std::nullopt;
}

}  // namespace

std::optional<HostMemory> parse_meminfo(std::string_view text) {
    const auto available = field_bytes(text, "MemAvailable");
    if (!available) return std::nullopt;
    HostMemory m;
    m.available = *available;
    m.swap_free = field_bytes(text, "SwapFree").value_or(0);
    return m;
}

std::optional<HostMemory> host_memory() {
    std::ifstream in("/proc/meminfo");
    if (!in) return std::nullopt;
    std::ostringstream text;
    text << in.rdbuf();
    return parse_meminfo(text.str());
}

std::string describe_bytes(uint64_t bytes) {
    static constexpr const char* kUnits[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    if (bytes < 1024) return fmt::format("{} B", bytes);
    double v = static_cast<double>(bytes) / 1024;
    size_t u = 0;
    while (v >= 1024 && u + 1 < std::size(kUnits)) {
        v /= 1024;
        ++u;
    }
    return fmt::format("{} B ({:.1f} {})", bytes, v, kUnits[u]);
}

}  // namespace basalt
