// Device memory: chunks (one VkBuffer + VkDeviceMemory each, host-visible when the device allows), buffers
// split into overlapping chunks past the allocation limit, host reads and writes (mapped, else through a
// staging chunk), and the arena that holds a graph's intermediates.
#include <algorithm>
#include <cstring>
#include <memory>
#include <vector>

#include "backend.hpp"
#include "common.hpp"

namespace basalt::vk {
namespace {

constexpr uint64_t kStagingBytes = 16u << 20;

}  // namespace

uint32_t Backend::memory_type(uint32_t bits, VkMemoryPropertyFlags want) const {
    for (uint32_t i = 0; i < mem_.memoryTypeCount; ++i) {
        if ((bits & (1u << i)) != 0 && (mem_.memoryTypes[i].propertyFlags & want) == want) return i;
    }
    return UINT32_MAX;
}

void Backend::make_chunk(basalt_buffer::Chunk& c, uint64_t size, bool prefer_host) {
    size = std::max<uint64_t>(16, (size + 15) / 16 * 16);
    VkBufferCreateInfo bi{};
    bi.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO;
    bi.size = size;
    bi.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT;
    bi.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
    vk_check(a_.vkCreateBuffer(dev_, &bi, nullptr, &c.buf), "vkCreateBuffer");
    VkMemoryRequirements req{};
    a_.vkGetBufferMemoryRequirements(dev_, c.buf, &req);
    const VkMemoryPropertyFlags host = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
    const VkMemoryPropertyFlags local = VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT;
    std::vector<VkMemoryPropertyFlags> order = prefer_host
                                                   ? std::vector<VkMemoryPropertyFlags>{host}
                                                   : std::vector<VkMemoryPropertyFlags>{local | host, local, host};
    VkResult last = VK_ERROR_OUT_OF_DEVICE_MEMORY;
    for (VkMemoryPropertyFlags want : order) {
        const uint32_t type = memory_type(req.memoryTypeBits, want);
        if (type == UINT32_MAX) continue;
        VkMemoryAllocateInfo ai{};
        ai.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO;
        ai.allocationSize = req.size;
        ai.memoryTypeIndex = type;
        last = a_.vkAllocateMemory(dev_, &ai, nullptr, &c.mem);
        if (last != VK_SUCCESS) {
            c.mem = VK_NULL_HANDLE;
            continue;
        }
        vk_check(a_.vkBindBufferMemory(dev_, c.buf, c.mem, 0), "vkBindBufferMemory");
        if ((mem_.memoryTypes[type].propertyFlags & host) == host) {
            void* p = nullptr;
            vk_check(a_.vkMapMemory(dev_, c.mem, 0, VK_WHOLE_SIZE, 0, &p), "vkMapMemory");
            c.mapped = static_cast<uint8_t*>(p);
        }
        c.size = size;
        return;
    }
    a_.vkDestroyBuffer(dev_, c.buf, nullptr);
    c.buf = VK_NULL_HANDLE;
    vk_fail("allocating " + std::to_string(size) + " bytes of device memory", last);
}

void Backend::destroy_chunk(basalt_buffer::Chunk& c) {
    if (c.buf != VK_NULL_HANDLE) a_.vkDestroyBuffer(dev_, c.buf, nullptr);
    if (c.mem != VK_NULL_HANDLE) a_.vkFreeMemory(dev_, c.mem, nullptr);
    c = basalt_buffer::Chunk{};
}

basalt_buffer* Backend::alloc(uint64_t size, bool single_chunk) {
    auto b = std::make_unique<basalt_buffer>();
    b->size = size;
    if (size <= chunk_cap_) {
        b->chunks.resize(1);
    } else {
        if (single_chunk) {
            throw sdk::error(BASALT_ERR_OUT_OF_MEMORY, std::string(kLabel) + ": a buffer of " + std::to_string(size) +
                                                           " bytes exceeds the device's largest allocation of " +
                                                           std::to_string(chunk_cap_) + " bytes");
        }
        // Chunks of chunk_cap_ bytes starting every 3/4 chunk: a tensor up to a quarter chunk never straddles.
        const uint64_t step = chunk_step();
        for (uint64_t begin = 0;; begin += step) {
            basalt_buffer::Chunk c;
            c.begin = begin;
            b->chunks.push_back(c);
            if (begin + chunk_cap_ >= size) break;
        }
    }
    try {
        for (auto& c : b->chunks) {
            const uint64_t begin = c.begin;
            make_chunk(c, std::min(chunk_cap_, size - begin), false);
            c.begin = begin;
        }
    } catch (...) {
        for (auto& c : b->chunks) destroy_chunk(c);
        throw;
    }
    buffers_.insert(b.get());
    return b.release();
}

void Backend::free(basalt_buffer* b) {
    if (buffers_.erase(b) == 0) return;
    forget_recordings();  // they may bind it (and a new buffer may come at the same address)
    for (auto& c : b->chunks) destroy_chunk(c);
    delete b;
}

void Backend::staging_copy(const basalt_buffer::Chunk& c, uint64_t off, uint8_t* host, uint64_t size, bool upload) {
    if (staging_.buf == VK_NULL_HANDLE) make_chunk(staging_, kStagingBytes, true);
    for (uint64_t done = 0; done < size;) {
        const uint64_t n = std::min(kStagingBytes, size - done);
        if (upload) std::memcpy(staging_.mapped, host + done, n);
        begin_commands(cmd_, true);
        VkBufferCopy region{};
        region.srcOffset = upload ? 0 : off + done;
        region.dstOffset = upload ? off + done : 0;
        region.size = n;
        a_.vkCmdCopyBuffer(cmd_, upload ? staging_.buf : c.buf, upload ? c.buf : staging_.buf, 1, &region);
        vk_check(a_.vkEndCommandBuffer(cmd_), "vkEndCommandBuffer");
        submit_and_wait(cmd_);
        if (!upload) std::memcpy(host + done, staging_.mapped, n);
        done += n;
    }
}

void Backend::write(basalt_buffer* b, uint64_t offset, const void* src, uint64_t size) {
    auto* s = static_cast<uint8_t*>(const_cast<void*>(src));  // staging_copy only reads it when uploading
    for (auto& c : b->chunks) {
        const uint64_t lo = std::max(offset, c.begin);
        const uint64_t hi = std::min(offset + size, c.begin + std::min(c.size, b->size - c.begin));
        if (lo >= hi) continue;
        if (c.mapped != nullptr) {
            std::memcpy(c.mapped + (lo - c.begin), s + (lo - offset), hi - lo);
        } else {
            staging_copy(c, lo - c.begin, s + (lo - offset), hi - lo, true);
        }
    }
    check_validation("buffer_write");
}

void Backend::read(basalt_buffer* b, uint64_t offset, void* dst, uint64_t size) {
    auto* d = static_cast<uint8_t*>(dst);
    uint64_t pos = offset;
    const uint64_t end = offset + size;
    for (auto& c : b->chunks) {
        const uint64_t cend = c.begin + std::min(c.size, b->size - c.begin);
        if (pos >= end) break;
        if (pos < c.begin || pos >= cend) continue;
        const uint64_t hi = std::min(end, cend);
        if (c.mapped != nullptr) {
            std::memcpy(d + (pos - offset), c.mapped + (pos - c.begin), hi - pos);
        } else {
            staging_copy(c, pos - c.begin, d + (pos - offset), hi - pos, false);
        }
        pos = hi;
    }
    check_validation("buffer_read");
}

void Backend::ensure_arena(uint64_t bytes) {
    if (bytes <= arena_.size) return;
    forget_recordings();  // they bind the old arena
    destroy_chunk(arena_);
    if (bytes > chunk_cap_) {
        throw sdk::error(BASALT_ERR_OUT_OF_MEMORY, std::string(kLabel) + ": intermediates need " +
                                                       std::to_string(bytes) + " bytes, more than one allocation of " +
                                                       std::to_string(chunk_cap_));
    }
    make_chunk(arena_, std::max<uint64_t>(bytes, arena_.size * 3 / 2), false);
}

}  // namespace basalt::vk
