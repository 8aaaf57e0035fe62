#include "packed.hpp"

#include <basalt/sdk/plugin.hpp>

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <iterator>
#include <string>
#include <type_traits>
#include <vector>

#include "buffers.hpp"
#include "kernels.hpp"
#include "thread-pool.hpp"

namespace basalt::cpu {

void quantize_row_packed_act(const float* x, uint8_t* y, int64_t k) {
    const int64_t nb = k / kQK;
    auto* scale = reinterpret_cast<float*>(y + k);
    auto* bias = reinterpret_cast<int32_t*>(y + k + nb * 4);
    for (int64_t b = 0; b < nb; ++b) {
        BlockQ8_0 blk;
        quantize_row_q8_0(x + b * kQK, &blk, kQK);
        std::memcpy(y + b * kQK, blk.qs, kQK);
        scale[b] = fp16_to_fp32(blk.d);
        for (int c = 0; c < kQK / 4; ++c) {
            int32_t sum = 0;
            for (int i = 0; i < 4; ++i) sum += blk.qs[c * 4 + i];
            bias[b * 8 + c] = -128 * sum;
        }
    }
}

namespace {

void pack_group(const uint8_t* w, int64_t rows, int64_t k, int64_t stride, int64_t g, uint8_t* dst) {
    const int64_t nb = k / kQK;
    auto* scales = reinterpret_cast<uint16_t*>(dst);
    auto* quants = reinterpret_cast<uint32_t*>(dst + packed_scale_bytes(nb));
    std::memset(dst, 0, static_cast<size_t>(packed_scale_bytes(nb)));
    for (int64_t r = 0; r < kPackRows; ++r) {
        const int64_t row = g * kPackRows + r;
        if (row >= rows) {
            for (int64_t b = 0; b < nb; ++b) {
                for (int c = 0; c < kQK / 4; ++c) quants[(b * 8 + c) * kPackRows + r] = 0x80808080u;
            }
            continue;
        }
        const auto* src = reinterpret_cast<const BlockQ8_0*>(w + row * stride);
        for (int64_t b = 0; b < nb; ++b) {
            scales[b * kPackRows + r] = src[b].d;
            uint32_t q[kQK / 4];
            std::memcpy(q, src[b].qs, sizeof(q));
            for (int c = 0; c < kQK / 4; ++c) quants[(b * 8 + c) * kPackRows + r] = q[c] ^ 0x80808080u;
        }
    }
}

// A Q4_0 or MXFP4 group (packed-layout.hpp): per block the 16 rows' scales (Q4_0: its F16 scale; MXFP4: its
// exponent minus 128 as a byte), then the codes paired by chunk.
template <typename Block>
void pack_group_nibbles(const uint8_t* w, int64_t rows, int64_t k, int64_t stride, int64_t g, uint8_t* dst) {
    constexpr bool kMx = std::is_same_v<Block, BlockMXFP4>;
    const int64_t nb = k / kQK;
    const int64_t head = kMx ? packed_mxfp4_scale_bytes(nb) : packed_scale_bytes(nb);
    uint8_t* codes = dst + head;
    std::memset(dst, 0, static_cast<size_t>(head));
    for (int64_t r = 0; r < kPackRows; ++r) {
        const int64_t row = g * kPackRows + r;
        const auto* src = row < rows ? reinterpret_cast<const Block*>(w + row * stride) : nullptr;
        // Padding rows: the code of the value 0 in every nibble.
        const uint32_t pad = kMx ? 0u : 0x88888888u;
        for (int64_t b = 0; b < nb; ++b) {
            // Words of 4 code bytes: byte j of q[i] holds element 4i + j (low nibble) and 4i + j + 16 (high).
            uint32_t q[4] = {pad, pad, pad, pad};
            if (src != nullptr) {
                std::memcpy(q, src[b].qs, sizeof(q));
                if constexpr (kMx) {
                    dst[b * kPackRows + r] = static_cast<uint8_t>(src[b].e ^ 0x80);
                } else {
                    reinterpret_cast<uint16_t*>(dst)[b * kPackRows + r] = src[b].d;
                }
            }
            // Pair p's byte e: element 8p + e in the low nibble, 8p + 4 + e in the high one.
            constexpr uint32_t lo = 0x0f0f0f0fu;
            const uint32_t pairs[4] = {(q[0] & lo) | ((q[1] & lo) << 4), (q[2] & lo) | ((q[3] & lo) << 4),
                                       ((q[0] >> 4) & lo) | (q[1] & ~lo), ((q[2] >> 4) & lo) | (q[3] & ~lo)};
            for (int p = 0; p < 4; ++p)
                std::memcpy(codes + b * kPackRows * kQK / 2 + p * 64 + r * 4, &pairs[p], sizeof(uint32_t));
        }
    }
}

// Drops the resident pages of [p, p + bytes) from this process (a read-only private file mapping: they read back
// unchanged). Pages at the ends shared with neighbouring tensors come back on their next read.
void release_pages(const uint8_t* p, uint64_t bytes) noexcept {
#ifdef MADV_DONTNEED
    static const auto page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
    const uintptr_t begin = reinterpret_cast<uintptr_t>(p) & ~(page - 1);
    const uintptr_t end = (reinterpret_cast<uintptr_t>(p) + bytes + page - 1) & ~(page - 1);
    if (end > begin) ::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_DONTNEED);
#else
    (void)p, (void)bytes;
#endif
}

}  // namespace

constexpr uint64_t kHugePage = uint64_t{2} << 20;
constexpr uint64_t kChunkBytes = uint64_t{64} << 20;

PackCache::~PackCache() {
    for (auto& [buffer, list] : chunks_) {
        for (const Chunk& c : list) ::munmap(c.base, c.size);
    }
}

uint8_t* PackCache::allocate(const basalt_buffer* buffer, uint64_t size) {
    std::vector<Chunk>& list = chunks_[buffer];
    if (!list.empty() && list.back().size - list.back().used >= size) {
        Chunk& c = list.back();
        uint8_t* p = c.base + c.used;
        c.used += (size + 63) / 64 * 64;
        packed_ += (size + 63) / 64 * 64;
        return p;
    }
    const uint64_t want = std::max(kChunkBytes, (size + kHugePage - 1) / kHugePage * kHugePage);
    // Map a huge page more than needed and trim both ends, so the chunk starts on a huge-page boundary.
    void* raw = ::mmap(nullptr, want + kHugePage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (raw == MAP_FAILED) {
        if (list.empty()) chunks_.erase(buffer);
        throw sdk::error(BASALT_ERR_OUT_OF_MEMORY, "backend 'cpu': out of memory mapping " + std::to_string(want) +
                                                       " bytes for repacked weights (param repack=0 turns it off)");
    }
    const auto addr = reinterpret_cast<uintptr_t>(raw);
    const uintptr_t start = (addr + kHugePage - 1) / kHugePage * kHugePage;
    if (start > addr) ::munmap(raw, start - addr);
    if (const uintptr_t tail = addr + want + kHugePage - (start + want); tail > 0)
        ::munmap(reinterpret_cast<void*>(start + want), tail);
#ifdef MADV_HUGEPAGE
    ::madvise(reinterpret_cast<void*>(start), want, MADV_HUGEPAGE);  // a hint: without THP, small pages serve
#endif
    list.push_back({reinterpret_cast<uint8_t*>(start), want, (size + 63) / 64 * 64});
    packed_ += (size + 63) / 64 * 64;
    return list.back().base;
}

const PackedWeight* PackCache::get(ThreadPool& pool, const basalt_buffer* buffer, const uint8_t* w, int64_t rows,
                                   int64_t k, int64_t stride, basalt_dtype type, int64_t experts,
                                   int64_t expert_stride) {
    if (rows <= 0 || k <= 0 || k % kQK != 0 || experts <= 0) return nullptr;
    if (type != BASALT_DTYPE_Q8_0 && type != BASALT_DTYPE_Q4_0 && type != BASALT_DTYPE_MXFP4) return nullptr;
    if (auto it = map_.find(w); it != map_.end()) {
        const PackedWeight& p = it->second;
        if (p.rows == rows && p.k == k && p.stride == stride && p.buffer == buffer && p.type == type &&
            p.experts == experts && (experts == 1 || p.expert_stride == expert_stride))
            return &p;
        map_.erase(it);  // the same bytes seen with another shape: its old copy's memory goes with the buffer
    }
    const int64_t groups = (rows + kPackRows - 1) / kPackRows;
    const int64_t gb = packed_group_bytes(type, k / kQK);
    const auto need = static_cast<uint64_t>(experts * groups * gb);
    if (packed_ + need > limit_) {
        if (!warned_) {
            warned_ = true;
            sdk::log(BASALT_LOG_WARN, "backend 'cpu'",
                     "repacked weights would pass repack_limit (" + std::to_string(limit_ >> 20) + " MiB, " +
                         std::to_string(packed_ >> 20) +
                         " MiB packed): the remaining matrices use the row kernels (same results, slower decode)");
        }
        return nullptr;
    }
    PackedWeight p;
    p.data = allocate(buffer, need);
    p.rows = rows;
    p.k = k;
    p.stride = stride;
    p.buffer = buffer;
    p.type = type;
    p.experts = experts;
    p.expert_stride = experts > 1 ? expert_stride : 0;
    // Packed in slices of about 8 MiB of source; from a file mapping, each slice's pages are dropped once it is
    // packed, so the peak holds even a large matrix (a 262k-row embedding) about once, not twice.
    const int64_t slice = std::max<int64_t>(1, (int64_t{8} << 20) / (kPackRows * stride));
    const auto row_bytes = static_cast<uint64_t>(k / kQK * type_info(type)->bytes);
    const auto pack = type == BASALT_DTYPE_Q4_0    ? pack_group_nibbles<BlockQ4_0>
                      : type == BASALT_DTYPE_MXFP4 ? pack_group_nibbles<BlockMXFP4>
                                                   : pack_group;
    for (int64_t e = 0; e < experts; ++e) {
        const uint8_t* src = w + e * p.expert_stride;
        uint8_t* dst = p.data + e * groups * gb;
        for (int64_t g0 = 0; g0 < groups; g0 += slice) {
            const int64_t g1 = std::min(groups, g0 + slice);
            pool.parallel_for(g1 - g0,
                              [&](int64_t g, int) { pack(src, rows, k, stride, g0 + g, dst + (g0 + g) * gb); });
            if (!buffer->file_pages) continue;
            const int64_t r0 = g0 * kPackRows, r1 = std::min(rows, g1 * kPackRows);
            release_pages(src + r0 * stride, static_cast<uint64_t>(r1 - r0 - 1) * stride + row_bytes);
        }
    }
    return &map_.emplace(w, p).first->second;
}

void PackCache::drop(const basalt_buffer* buffer) {
    auto list = chunks_.find(buffer);
    if (list == chunks_.end()) return;
    for (auto it = map_.begin(); it != map_.end();) {
        it = it->second.buffer == buffer ? map_.erase(it) : std::next(it);
    }
    for (const Chunk& c : list->second) {
        ::munmap(c.base, c.size);
        packed_ -= c.used;
    }
    chunks_.erase(list);
}

}  // namespace basalt::cpu
