// The machine's memory read bandwidth, the roofline that `basalt bench` and bench-backend-ops judge decode and
// kernels against. Header-only (standard library and intrinsics only), so a client of the public C API and a
// core-linked benchmark include the same probe.
#pragma once

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <thread>
#include <vector>

namespace basalt::bench {

// Sums n 64-bit words (AVX-512 or AVX2 loads where the CPU has them: a scalar loop cannot keep one core's memory
// pipe full).
#if defined(__x86_64__)
__attribute__((target("avx2"))) inline uint64_t sum_words_avx2(const uint64_t* p, size_t n) {
    __m256i a0 = _mm256_setzero_si256(), a1 = a0, a2 = a0, a3 = a0;
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        a0 = _mm256_add_epi64(a0, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + i)));
        a1 = _mm256_add_epi64(a1, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + i + 4)));
        a2 = _mm256_add_epi64(a2, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + i + 8)));
        a3 = _mm256_add_epi64(a3, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + i + 12)));
    }
    alignas(32) uint64_t lanes[4];
    _mm256_store_si256(reinterpret_cast<__m256i*>(lanes),
                       _mm256_add_epi64(_mm256_add_epi64(a0, a1), _mm256_add_epi64(a2, a3)));
    uint64_t s = lanes[0] + lanes[1] + lanes[2] + lanes[3];
    for (; i < n; ++i) s += p[i];
    return s;
}

// The same with 512-bit loads (a core's fastest stream where it has them).
__attribute__((target("avx512f"))) inline uint64_t sum_words_avx512(const uint64_t* p, size_t n) {
    __m512i a0 = _mm512_setzero_si512(), a1 = a0, a2 = a0, a3 = a0;
    size_t i = 0;
    for (; i + 32 <= n; i += 32) {
        a0 = _mm512_add_epi64(a0, _mm512_loadu_si512(p + i));
        a1 = _mm512_add_epi64(a1, _mm512_loadu_si512(p + i + 8));
        a2 = _mm512_add_epi64(a2, _mm512_loadu_si512(p + i + 16));
        a3 = _mm512_add_epi64(a3, _mm512_loadu_si512(p + i + 24));
    }
    alignas(64) uint64_t lanes[8];
    _mm512_store_si512(lanes, _mm512_add_epi64(_mm512_add_epi64(a0, a1), _mm512_add_epi64(a2, a3)));
    uint64_t s = 0;
    for (uint64_t v : lanes) s += v;
    for (; i < n; ++i) s += p[i];
    return s;
}
#endif

// The widest loads this CPU has (not the ISA a backend was told to use: the probe measures the machine's limit).
inline uint64_t sum_words(const uint64_t* p, size_t n) {
#if defined(__x86_64__)
    if (__builtin_cpu_supports("avx512f")) return sum_words_avx512(p, n);
    if (__builtin_cpu_supports("avx2")) return sum_words_avx2(p, n);
#endif
    uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    size_t i = 0;
    for (; i + 4 <= n; i += 4) {
        s0 += p[i];
        s1 += p[i + 1];
        s2 += p[i + 2];
        s3 += p[i + 3];
    }
    for (; i < n; ++i) s0 += p[i];
    return s0 + s1 + s2 + s3;
}

// Read bandwidth of `threads` threads summing disjoint slices of a 512 MiB buffer (written once, so every page is
// real memory). measure() keeps the best pass seen: `basalt bench` probes before its warm-up repetition and after
// the last one, so a moment when the shared machine's memory was slow does not lower the roofline. (Probing
// between timed repetitions slowed the F16 prefill after it by ~15 % on the shared VM, so it does not.)
// One probe per thread count; not thread-safe (one caller at a time).
class BandwidthProbe {
  public:
    explicit BandwidthProbe(unsigned threads)
        : threads_(std::max(1u, threads)), buf_((size_t{512} << 20) / sizeof(uint64_t) + 8, 1) {}

    // Runs `passes` passes; returns the best bytes/s of all passes so far.
    double measure(int passes) {
        using Clock = std::chrono::steady_clock;
        // A backend's pool spins a little after each graph before its workers sleep: let them, or the probe's
        // threads would share the cores with them.
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        // From the first 64-byte boundary: a 512-bit load across two cache lines costs two.
        const auto skip = static_cast<size_t>((64 - reinterpret_cast<uintptr_t>(buf_.data()) % 64) % 64 / 8);
        const uint64_t* words = buf_.data() + skip;
        const size_t n = (buf_.size() - 8) / 8 * 8;
        for (int rep = 0; rep < passes; ++rep) {
            std::atomic<uint64_t> sum{0};
            const auto t0 = Clock::now();
            std::vector<std::thread> pool;
            for (unsigned t = 0; t < threads_; ++t) {
                pool.emplace_back([&, t] {
                    const size_t b = n * t / threads_ / 8 * 8, e = n * (t + 1) / threads_ / 8 * 8;
                    sum += sum_words(words + b, e - b);
                });
            }
            for (auto& th : pool) th.join();
            const double s = std::chrono::duration<double>(Clock::now() - t0).count();
            best_ = std::max(best_, static_cast<double>(n * sizeof(uint64_t)) / s);
            sink_ = sum.load();  // keeps the sums (every word is 1, so it is n)
        }
        return best_;
    }

    // Best bytes/s seen so far (0 before the first measure).
    double best() const noexcept { return best_; }

  private:
    unsigned threads_;
    std::vector<uint64_t> buf_;
    double best_ = 0;
    volatile uint64_t sink_ = 0;
};

}  // namespace basalt::bench
