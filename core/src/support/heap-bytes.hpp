// What standard containers hold on the heap, for the memory plan's host tables (the parsed metadata, the
// tokenizer's vocabulary): the bytes malloc hands out for each allocation a container makes, by the layouts of
// libstdc++ (small strings inline up to 15 bytes, hash nodes with a cached hash) and glibc's chunk rounding (16
// bytes of alignment, 8 of header, 32 at least). An estimate of resident memory, exact to a few percent.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

namespace basalt::heap {

// The chunk malloc takes for a request of n bytes (0: nothing).
inline uint64_t chunk(uint64_t n) noexcept {
    if (n == 0) return 0;
    const uint64_t c = (n + 8 + 15) / 16 * 16;
    return c < 32 ? 32 : c;
}

// A string's own allocation (none while it fits inline).
inline uint64_t of(const std::string& s) noexcept {
    return s.capacity() > 15 ? chunk(s.capacity() + 1) : 0;
}

// A vector's buffer, and its strings' allocations when it holds strings.
template <typename T>
uint64_t of(const std::vector<T>& v) noexcept {
    uint64_t b = chunk(v.capacity() * sizeof(T));
    if constexpr (std::is_same_v<T, std::string>) {
        for (const std::string& s : v) b += of(s);
    }
    return b;
}

// A hash map: its bucket array and one node per element (next pointer, the pair, the cached hash), plus the
// keys' own allocations when they are strings.
template <typename K, typename V, typename H, typename E>
uint64_t of(const std::unordered_map<K, V, H, E>& m) noexcept {
    uint64_t b = m.bucket_count() > 1 ? chunk(m.bucket_count() * sizeof(void*)) : 0;
    b += m.size() * chunk(sizeof(void*) + sizeof(std::pair<const K, V>) + sizeof(size_t));
    if constexpr (std::is_same_v<K, std::string>) {
        for (const auto& kv : m) b += of(kv.first);
    }
    return b;
}

// A tree set: one node per element (colour, three links, the value).
template <typename T>
uint64_t of(const std::set<T>& s) noexcept {
    return s.size() * chunk(4 * sizeof(void*) + sizeof(T));
}

}  // namespace basalt::heap
