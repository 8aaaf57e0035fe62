#include "thread-pool.hpp"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace basalt::cpu {
namespace {

inline void cpu_relax() {
#if defined(__x86_64__)
    _mm_pause();
#endif
}

// Spin iterations before a worker goes to sleep (~tens of microseconds): covers the gap between two ops.
constexpr int kSpin = 20000;
// Loads of the generation counter without a pause first (a few tens of microseconds).
constexpr int kTightSpin = 200000;
constexpr int64_t kMaxTasks = int64_t{1} << 22;
constexpr uint64_t kField = (uint64_t{1} << 22) - 1;

}  // namespace

ThreadPool::ThreadPool(int n_threads) : n_threads_(n_threads < 1 ? 1 : n_threads) {
    threads_.reserve(static_cast<size_t>(n_threads_ - 1));
    for (int i = 1; i < n_threads_; ++i) threads_.emplace_back([this, i] { worker(i); });
}

ThreadPool::~ThreadPool() {
    {
        std::lock_guard<std::mutex> lock(mutex_);
        stop_ = true;
        generation_.fetch_add(1, std::memory_order_release);
    }
    wake_.notify_all();
    for (auto& t : threads_) t.join();
}

void ThreadPool::work(int thread, uint64_t gen) {
    uint64_t c = claim_.load(std::memory_order_acquire);
    for (;;) {
        if ((c >> 44) != (gen & ((uint64_t{1} << 20) - 1))) return;  // a newer run (or none) is current
        const uint64_t n = (c >> 22) & kField;
        const uint64_t next = c & kField;
        if (next >= n) return;
        if (!claim_.compare_exchange_weak(c, c + 1, std::memory_order_acq_rel, std::memory_order_acquire)) continue;
        if (!failed_.load(std::memory_order_relaxed)) {
            try {
                fn_(ctx_, static_cast<int64_t>(next), thread);
            } catch (...) {
                std::lock_guard<std::mutex> lock(error_mutex_);
                if (!error_) error_ = std::current_exception();
                failed_.store(true, std::memory_order_relaxed);
            }
        }
        done_.fetch_add(1, std::memory_order_acq_rel);
        c = claim_.load(std::memory_order_acquire);
    }
}

void ThreadPool::worker(int index) {
    uint64_t seen = 0;
    for (;;) {
        uint64_t g = generation_.load(std::memory_order_acquire);
        // First a tight spin (no pause: a paused spinner notices a new op late, and in a VM a pause loop can
        // cost the vCPU its slice), then a relaxed one, then sleep.
        for (int spin = 0; g == seen && spin < kTightSpin; ++spin) g = generation_.load(std::memory_order_acquire);
        for (int spin = 0; g == seen && spin < kSpin; ++spin) {
            cpu_relax();
            g = generation_.load(std::memory_order_acquire);
        }
        if (g == seen) {
            std::unique_lock<std::mutex> lock(mutex_);
            sleeping_.fetch_add(1, std::memory_order_relaxed);
            wake_.wait(lock, [&] { return generation_.load(std::memory_order_acquire) != seen; });
            sleeping_.fetch_sub(1, std::memory_order_relaxed);
            g = generation_.load(std::memory_order_acquire);
        }
        seen = g;
        if (stop_) return;
        work(index, g);
    }
}

void ThreadPool::run(int64_t n_tasks, TaskFn fn, void* ctx) {
    if (n_tasks <= 0) return;
    if (n_threads_ == 1 || n_tasks == 1 || n_tasks >= kMaxTasks) {
        for (int64_t t = 0; t < n_tasks; ++t) fn(ctx, t, 0);
        return;
    }
    fn_ = fn;
    ctx_ = ctx;
    error_ = nullptr;
    failed_.store(false, std::memory_order_relaxed);
    done_.store(0, std::memory_order_relaxed);
    uint64_t gen = 0;
    {
        // Publishing under the mutex pairs with the sleeper's predicate check, so no wake-up is lost.
        std::lock_guard<std::mutex> lock(mutex_);
        gen = generation_.load(std::memory_order_relaxed) + 1;
        claim_.store(((gen & ((uint64_t{1} << 20) - 1)) << 44) | (static_cast<uint64_t>(n_tasks) << 22),
                     std::memory_order_release);
        generation_.store(gen, std::memory_order_release);
    }
    if (sleeping_.load(std::memory_order_relaxed) > 0) wake_.notify_all();
    work(0, gen);
    for (int spin = 0; done_.load(std::memory_order_acquire) != n_tasks; ++spin) {
        if (spin < kSpin) {
            cpu_relax();
        } else {
            std::this_thread::yield();  // a worker holding a task was descheduled: give it the core
        }
    }
    if (error_) std::rethrow_exception(error_);
}

}  // namespace basalt::cpu
