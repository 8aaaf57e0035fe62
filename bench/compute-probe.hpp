// The machine's arithmetic peaks, the compute roof that bench-backend-ops and `basalt bench` judge prefill against
// (beside bandwidth-probe.hpp's memory roof): int8 dot products (AVX-512 VNNI `vpdpbusd`, else AVX-VNNI, else
// AVX2 `vpmaddubsw` + `vpmaddwd`) and fp32 fused multiply-adds (512-bit where the CPU has AVX-512, else 256-bit),
// each on `threads` threads at once. Header-only (standard library and intrinsics only).
#pragma once

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

namespace basalt::bench {

// One thread's loop: `iters` rounds of 12 independent chains (more than latency x throughput on current cores),
// returning a value that depends on every chain. Each function counts the operations it performed in `ops`
// (int8: 2 per multiply-add; fp32: 2 per fused multiply-add).
#if defined(__x86_64__)
__attribute__((target("avx512f,avx512vnni"))) inline float peak_int8_vnni512(int64_t iters, double& ops) {
    __m512i acc[12];
    for (int i = 0; i < 12; ++i) acc[i] = _mm512_set1_epi32(i);
    const __m512i u = _mm512_set1_epi8(3);
    __m512i s = _mm512_set1_epi8(-2);
    __asm__("" : "+v"(s));  // not a constant: the loop cannot be folded
    for (int64_t it = 0; it < iters; ++it) {
        for (int i = 0; i < 12; ++i) acc[i] = _mm512_dpbusd_epi32(acc[i], u, s);
    }
    __m512i t = acc[0];
    for (int i = 1; i < 12; ++i) t = _mm512_add_epi32(t, acc[i]);
    ops = static_cast<double>(iters) * 12 * 64 * 2;
    alignas(64) int32_t lanes[16];  // not _mm512_reduce_add_epi32: GCC 12's header trips -Wuninitialized
    _mm512_store_si512(lanes, t);
    return static_cast<float>(lanes[0] + lanes[15]);
}

__attribute__((target("avx2,avxvnni"))) inline float peak_int8_avxvnni(int64_t iters, double& ops) {
    __m256i acc[12];
    for (int i = 0; i < 12; ++i) acc[i] = _mm256_set1_epi32(i);
    const __m256i u = _mm256_set1_epi8(3);
    __m256i s = _mm256_set1_epi8(-2);
    __asm__("" : "+v"(s));
    for (int64_t it = 0; it < iters; ++it) {
        for (int i = 0; i < 12; ++i) acc[i] = _mm256_dpbusd_avx_epi32(acc[i], u, s);
    }
    __m256i t = acc[0];
    for (int i = 1; i < 12; ++i) t = _mm256_add_epi32(t, acc[i]);
    alignas(32) int32_t lanes[8];
    _mm256_store_si256(reinterpret_cast<__m256i*>(lanes), t);
    ops = static_cast<double>(iters) * 12 * 32 * 2;
    return static_cast<float>(lanes[0] + lanes[7]);
}

__attribute__((target("avx2"))) inline float peak_int8_avx2(int64_t iters, double& ops) {
    __m256i acc[12];
    for (int i = 0; i < 12; ++i) acc[i] = _mm256_set1_epi32(i);
    const __m256i u = _mm256_set1_epi8(3);
    const __m256i one = _mm256_set1_epi16(1);
    __m256i s = _mm256_set1_epi8(-2);
    __asm__("" : "+v"(s));
    for (int64_t it = 0; it < iters; ++it) {
        for (int i = 0; i < 12; ++i)
            acc[i] = _mm256_add_epi32(acc[i], _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), one));
    }
    __m256i t = acc[0];
    for (int i = 1; i < 12; ++i) t = _mm256_add_epi32(t, acc[i]);
    alignas(32) int32_t lanes[8];
    _mm256_store_si256(reinterpret_cast<__m256i*>(lanes), t);
    ops = static_cast<double>(iters) * 12 * 32 * 2;
    return static_cast<float>(lanes[0] + lanes[7]);
}

__attribute__((target("avx512f"))) inline float peak_fp32_512(int64_t iters, double& ops) {
    __m512 acc[12];
    for (int i = 0; i < 12; ++i) acc[i] = _mm512_set1_ps(static_cast<float>(i));
    __m512 a = _mm512_set1_ps(0.999f);
    __m512 b = _mm512_set1_ps(1e-3f);
    __asm__("" : "+v"(a), "+v"(b));
    for (int64_t it = 0; it < iters; ++it) {
        for (int i = 0; i < 12; ++i) acc[i] = _mm512_fmadd_ps(acc[i], a, b);
    }
    __m512 t = acc[0];
    for (int i = 1; i < 12; ++i) t = _mm512_add_ps(t, acc[i]);
    ops = static_cast<double>(iters) * 12 * 16 * 2;
    alignas(64) float lanes[16];
    _mm512_store_ps(lanes, t);
    return lanes[0] + lanes[15];
}

__attribute__((target("avx2,fma"))) inline float peak_fp32_256(int64_t iters, double& ops) {
    __m256 acc[12];
    for (int i = 0; i < 12; ++i) acc[i] = _mm256_set1_ps(static_cast<float>(i));
    __m256 a = _mm256_set1_ps(0.999f);
    __m256 b = _mm256_set1_ps(1e-3f);
    __asm__("" : "+v"(a), "+v"(b));
    for (int64_t it = 0; it < iters; ++it) {
        for (int i = 0; i < 12; ++i) acc[i] = _mm256_fmadd_ps(acc[i], a, b);
    }
    __m256 t = acc[0];
    for (int i = 1; i < 12; ++i) t = _mm256_add_ps(t, acc[i]);
    alignas(32) float lanes[8];
    _mm256_store_ps(lanes, t);
    ops = static_cast<double>(iters) * 12 * 8 * 2;
    return lanes[0] + lanes[7];
}
#endif

// Scalar stand-ins (other CPUs): one multiply-add per chain and round.
inline float peak_int8_scalar(int64_t iters, double& ops) {
    int32_t acc[12] = {};
    volatile int8_t vs = -2;
    const int8_t s = vs;
    for (int64_t it = 0; it < iters; ++it) {
        for (int i = 0; i < 12; ++i) acc[i] += 3 * s + i;
    }
    ops = static_cast<double>(iters) * 12 * 2;
    int32_t t = 0;
    for (int32_t v : acc) t += v;
    return static_cast<float>(t);
}

inline float peak_fp32_scalar(int64_t iters, double& ops) {
    float acc[12] = {};
    volatile float va = 0.999f;
    const float a = va;
    for (int64_t it = 0; it < iters; ++it) {
        for (int i = 0; i < 12; ++i) acc[i] = acc[i] * a + 1e-3f;
    }
    ops = static_cast<double>(iters) * 12 * 2;
    float t = 0;
    for (float v : acc) t += v;
    return t;
}

// int8 dot and fp32 FMA peaks of `threads` threads, each running the widest loop this CPU has (whatever ISA a
// backend was told to use: the probe measures the machine's limit). measure() keeps the best pass seen, as
// BandwidthProbe does. Not thread-safe (one caller at a time).
class ComputeProbe {
  public:
    explicit ComputeProbe(unsigned threads) : threads_(std::max(1u, threads)) {
#if defined(__x86_64__)
        if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vnni")) {
            int8_ = peak_int8_vnni512;
            int8_isa_ = "avx512-vnni";
        } else if (__builtin_cpu_supports("avxvnni")) {
            int8_ = peak_int8_avxvnni;
            int8_isa_ = "avx-vnni";
        } else if (__builtin_cpu_supports("avx2")) {
            int8_ = peak_int8_avx2;
            int8_isa_ = "avx2";
        }
        if (__builtin_cpu_supports("avx512f")) {
            fp32_ = peak_fp32_512;
            fp32_isa_ = "avx512";
        } else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
            fp32_ = peak_fp32_256;
            fp32_isa_ = "avx2-fma";
        }
#endif
    }

    // Runs `passes` passes of each loop (~20 ms a pass); afterwards int8_ops() and fp32_flops() give the best
    // operations per second seen so far, all threads together.
    void measure(int passes) {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));  // as BandwidthProbe: let a pool go to sleep
        for (int rep = 0; rep < passes; ++rep) {
            best_int8_ = std::max(best_int8_, run(int8_));
            best_fp32_ = std::max(best_fp32_, run(fp32_));
        }
    }

    double int8_ops() const noexcept {
        return best_int8_;
    }  // int8 multiply-adds x 2 per second
    double fp32_flops() const noexcept {
        return best_fp32_;
    }  // fp32 FMAs x 2 per second
    const char* int8_isa() const noexcept {
        return int8_isa_;
    }
    const char* fp32_isa() const noexcept {
        return fp32_isa_;
    }

  private:
    using Loop = float (*)(int64_t, double&);

    double run(Loop loop) {
        using Clock = std::chrono::steady_clock;
        constexpr int64_t kIters = 400000;  // 4.8 M vector operations a thread: ~1-2 ms at peak, ~20 ms scalar
        std::atomic<unsigned> ready{0};
        std::atomic<bool> go{false};
        std::vector<double> ops(threads_, 0);
        std::vector<double> secs(threads_, 0);
        std::vector<float> results(threads_, 0);
        std::vector<std::thread> pool;
        for (unsigned t = 0; t < threads_; ++t) {
            pool.emplace_back([&, t] {
                ready.fetch_add(1);
                while (!go.load(std::memory_order_acquire)) std::this_thread::yield();
                const auto t0 = Clock::now();
                double n = 0;
                results[t] = loop(kIters, n);
                secs[t] = std::chrono::duration<double>(Clock::now() - t0).count();
                ops[t] = n;
            });
        }
        while (ready.load() < threads_) std::this_thread::yield();
        go.store(true, std::memory_order_release);
        for (auto& th : pool) th.join();
        for (float r : results) sink_ = sink_ + r;  // keeps every loop's result
        // All threads' operations over the slowest thread's time: the rate they sustain together.
        double total = 0;
        double slowest = 0;
        for (unsigned t = 0; t < threads_; ++t) {
            total += ops[t];
            slowest = std::max(slowest, secs[t]);
        }
        return slowest > 0 ? total / slowest : 0;
    }

    unsigned threads_;
    Loop int8_ = peak_int8_scalar;
    Loop fp32_ = peak_fp32_scalar;
    const char* int8_isa_ = "scalar";
    const char* fp32_isa_ = "scalar";
    double best_int8_ = 0;
    double best_fp32_ = 0;
    volatile float sink_ = 0;
};

}  // namespace basalt::bench
