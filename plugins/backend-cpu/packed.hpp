// Repacked matmul weights: a backend-private copy of a Q8_0 (or Q4_0, MXFP4) weight matrix in the layout the AVX-512
// VNNI kernel streams best (16 rows interleaved per group, scales together, quants biased to unsigned), made on a
// weight's first use and kept until its buffer is written or freed. Decode then reads every weight byte once with one
// dot-product instruction per 64 bytes instead of the row-at-a-time kernel's sign fix-ups and scalar scales.
#pragma once

#include <basalt/plugin_backend.h>

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "packed-layout.hpp"
#include "types.hpp"

namespace basalt::cpu {

class ThreadPool;

// Quantizes one F32 row (k a multiple of 32) into the packed activation layout (the same quants as Q8_0).
void quantize_row_packed_act(const float* x, uint8_t* y, int64_t k);

struct PackedWeight {
    uint8_t* data = nullptr;  // groups of packed_group_bytes(type, k / 32) bytes, 64-byte aligned
    int64_t rows = 0;         // rows of one matrix (of one expert)
    int64_t k = 0;
    int64_t stride = 0;  // source row stride
    const basalt_buffer* buffer = nullptr;
    basalt_dtype type = BASALT_DTYPE_Q8_0;  // the source's type: BASALT_DTYPE_Q8_0, Q4_0 or MXFP4 groups
    int64_t experts = 1;        // matrices (a MOE_MATMUL's experts): expert e's groups follow expert e - 1's
    int64_t expert_stride = 0;  // source bytes from one expert's first row to the next one's
};

// Bytes of one packed group of `type` (Q8_0, Q4_0 or MXFP4) with nb blocks per row.
inline int64_t packed_group_bytes(basalt_dtype type, int64_t nb) noexcept {
    return type == BASALT_DTYPE_Q4_0    ? packed_q4_0_group_bytes(nb)
           : type == BASALT_DTYPE_MXFP4 ? packed_mxfp4_group_bytes(nb)
                                        : packed_group_bytes(nb);
}

// Packed groups of one matrix (one expert) of p.
inline int64_t packed_groups(const PackedWeight& p) noexcept {
    return (p.rows + kPackRows - 1) / kPackRows;
}

// The packed copies of one backend instance, keyed by the source weight's address. Their memory comes in chunks
// of 2 MiB-aligned anonymous mappings with transparent huge pages requested (few page faults while packing, few
// TLB misses while streaming), one chunk list per source buffer, filled in first-use order so the matrices of a
// decode step follow each other in memory. Not thread-safe (a backend instance is used by one thread at a time).
class PackCache {
  public:
    // limit: most bytes of packed copies; past it, get() returns nullptr for new matrices (they keep the row
    // kernels, which give the same floats).
    explicit PackCache(uint64_t limit) : limit_(limit) {}
    ~PackCache();
    PackCache(const PackCache&) = delete;
    PackCache& operator=(const PackCache&) = delete;

    // The packed copy of the Q8_0, Q4_0 or MXFP4 (`type`) matrix at w (rows x k, row stride `stride`, inside
    // `buffer`; `experts` such matrices `expert_stride` bytes apart, as a MOE_MATMUL's weights), packing it on the
    // pool first when there is none yet. Returns nullptr when the type or shape cannot be packed or the limit is
    // reached (logged once); throws sdk::error when memory runs out.
    const PackedWeight* get(ThreadPool& pool, const basalt_buffer* buffer, const uint8_t* w, int64_t rows, int64_t k,
                            int64_t stride, basalt_dtype type = BASALT_DTYPE_Q8_0, int64_t experts = 1,
                            int64_t expert_stride = 0);
    // Drops the packed copies of weights inside `buffer` and their memory (it is being written or freed).
    void drop(const basalt_buffer* buffer);

  private:
    struct Chunk {
        uint8_t* base = nullptr;
        uint64_t size = 0;
        uint64_t used = 0;
    };
    uint8_t* allocate(const basalt_buffer* buffer, uint64_t size);

    std::unordered_map<const uint8_t*, PackedWeight> map_;
    std::unordered_map<const basalt_buffer*, std::vector<Chunk>> chunks_;
    uint64_t limit_;
    uint64_t packed_ = 0;  // bytes of packed copies (the chunks' used parts), held against limit_
    bool warned_ = false;
};

}  // namespace basalt::cpu
