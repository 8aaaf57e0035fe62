#include "buffers.hpp"

#include <basalt/sdk/plugin.hpp>

#include <cstdlib>
#include <string>

namespace basalt::cpu {

void* aligned_alloc_bytes(const basalt_host* host, uint64_t size) {
    const uint64_t rounded = (size + kAlign - 1) / kAlign * kAlign;
    if (size > (uint64_t{1} << 48) || rounded == 0) {
        if (size == 0) return aligned_alloc_bytes(host, kAlign);
        throw sdk::error(BASALT_ERR_OUT_OF_MEMORY, "backend 'cpu': cannot allocate " + std::to_string(size) + " bytes");
    }
    void* p = nullptr;
    if (host != nullptr && BASALT_HAS_FIELD(host, basalt_host, alloc) && host->alloc != nullptr &&
        host->free != nullptr) {
        p = host->alloc(host->ctx, static_cast<size_t>(rounded), kAlign);
    } else {
        p = std::aligned_alloc(kAlign, static_cast<size_t>(rounded));
    }
    if (p == nullptr) {
        throw sdk::error(BASALT_ERR_OUT_OF_MEMORY,
                         "backend 'cpu': out of memory allocating " + std::to_string(size) + " bytes");
    }
    return p;
}

void aligned_free_bytes(const basalt_host* host, void* p) {
    if (p == nullptr) return;
    if (host != nullptr && BASALT_HAS_FIELD(host, basalt_host, free) && host->alloc != nullptr &&
        host->free != nullptr) {
        host->free(host->ctx, p);
    } else {
        std::free(p);
    }
}

Arena::~Arena() {
    aligned_free_bytes(host_, data_);
}

uint8_t* Arena::reserve(uint64_t size) {
    if (size <= size_ && data_ != nullptr) return data_;
    // Grow by at least 1.5x so a slowly growing batch does not reallocate every step.
    uint64_t want = size_ + size_ / 2;
    if (want < size) want = size;
    auto* p = static_cast<uint8_t*>(aligned_alloc_bytes(host_, want));
    aligned_free_bytes(host_, data_);
    data_ = p;
    size_ = want;
    return data_;
}

}  // namespace basalt::cpu
