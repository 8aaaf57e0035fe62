// The machine's memory as Linux reports it (/proc/meminfo), for refusing a session that cannot fit before anything
// is allocated; and a byte count rendered for messages.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace basalt {

struct HostMemory {
    uint64_t available = 0;  // MemAvailable, bytes
    uint64_t swap_free = 0;  // SwapFree, bytes (0 when the line is missing)
    uint64_t usable() const { return available + swap_free; }
};

// Parses the text of /proc/meminfo; nullopt when it has no MemAvailable line (a kernel before 3.14, not Linux).
std::optional<HostMemory> parse_meminfo(std::string_view text);
// Reads /proc/meminfo; nullopt when it cannot be read or parsed.
std::optional<HostMemory> host_memory();
// "123456789 B (117.7 MiB)"
std::string describe_bytes(uint64_t bytes);

}  // namespace basalt
