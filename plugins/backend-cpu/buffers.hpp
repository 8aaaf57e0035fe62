// Device buffers of the CPU backend: 64-byte-aligned host memory (owned) or wrapped host memory (borrowed,
// e.g. memory-mapped weights), plus the reusable arena for intermediates.
#pragma once

#include <basalt/plugin_backend.h>

#include <cstdint>

// The opaque handle of the ABI, defined by this backend.
struct basalt_buffer {
    uint8_t* data = nullptr;
    uint64_t size = 0;
    bool owned = false;
    bool read_only = false;
    bool file_pages = false;  // wrapped by buffer_wrap_file: pages no longer read may be dropped (they reload)
    uint32_t usage = 0;       // BASALT_BUFFER_* hints given to buffer_alloc
};

namespace basalt::cpu {

constexpr size_t kAlign = 64;

// 64-byte-aligned memory from the host's allocator (malloc-family fallback). Throws sdk::error on failure.
void* aligned_alloc_bytes(const basalt_host* host, uint64_t size);
void aligned_free_bytes(const basalt_host* host, void* p);

// A growable aligned block reused across graph_compute calls (contents not preserved on growth).
class Arena {
  public:
    explicit Arena(const basalt_host* host) : host_(host) {}
    ~Arena();
    Arena(const Arena&) = delete;
    Arena& operator=(const Arena&) = delete;
    uint8_t* reserve(uint64_t size);
    uint64_t capacity() const noexcept { return size_; }

  private:
    const basalt_host* host_;
    uint8_t* data_ = nullptr;
    uint64_t size_ = 0;
};

}  // namespace basalt::cpu
