#include "thread-pool.hpp"

#include <algorithm>
#include <thread>

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

ThreadPool::ThreadPool(int n_threads)
    : n_threads_(n_threads < 1 ? 1 : n_threads),
      // More threads than cores: a spinning thread holds a core another one needs to make progress.
      oversubscribed_(std::thread::hardware_concurrency() != 0 &&
                      static_cast<unsigned>(n_threads_) > std::thread::hardware_concurrency()),
      warm_(static_cast<size_t>(n_threads_)),
      spans_(static_cast<size_t>(n_threads_)) {
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

void ThreadPool::warm(int thread, const void* p0, size_t n0, const void* p1, size_t n1) {
    if (thread < 1 || thread >= n_threads_) return;
    Warm& w = warm_[static_cast<size_t>(thread)];
    const uint64_t s = w.seq.load(std::memory_order_relaxed);
    w.seq.store(s + 1, std::memory_order_relaxed);  // odd: being written
    std::atomic_thread_fence(std::memory_order_release);
    w.p[0].store(static_cast<const uint8_t*>(p0), std::memory_order_relaxed);
    w.n[0].store(p0 != nullptr ? n0 : 0, std::memory_order_relaxed);
    w.p[1].store(static_cast<const uint8_t*>(p1), std::memory_order_relaxed);
    w.n[1].store(p1 != nullptr ? n1 : 0, std::memory_order_relaxed);
    w.seq.store(s + 2, std::memory_order_seq_cst);
}

void ThreadPool::cancel_warm() {
    for (int t = 1; t < n_threads_; ++t) warm(t, nullptr, 0, nullptr, 0);
    // Pairs with warm_up's store of `reading` then load of seq (both seq_cst): either the worker sees the new
    // seq and touches nothing, or we see it reading and wait.
    for (int t = 1; t < n_threads_; ++t) {
        while (warm_[static_cast<size_t>(t)].reading.load(std::memory_order_seq_cst)) cpu_relax();
    }
}

bool ThreadPool::warm_pending(int index) const noexcept {
    const Warm& w = warm_[static_cast<size_t>(index)];
    return w.seq.load(std::memory_order_relaxed) != w.done;
}

void ThreadPool::warm_up(int index) {
    Warm& w = warm_[static_cast<size_t>(index)];
    const uint64_t s = w.seq.load(std::memory_order_acquire);
    if ((s & 1) != 0 || s == w.done) return;
    if (s != w.taken) {
        w.progress = 0;
        w.taken = s;
    }
    w.reading.store(true, std::memory_order_seq_cst);
    const uint8_t* p[2] = {w.p[0].load(std::memory_order_relaxed), w.p[1].load(std::memory_order_relaxed)};
    const size_t n[2] = {w.n[0].load(std::memory_order_relaxed), w.n[1].load(std::memory_order_relaxed)};
    std::atomic_thread_fence(std::memory_order_acquire);
    // Seqlock check: the ranges read above belong to request s, and no cancel has begun.
    if (w.seq.load(std::memory_order_seq_cst) != s) {
        w.reading.store(false, std::memory_order_release);
        return;
    }
    const uint64_t gen = generation_.load(std::memory_order_relaxed);
    uint64_t sink = 0;
    bool complete = false;
    for (;;) {
        const size_t at = w.progress;
        const int r = at < n[0] ? 0 : 1;
        const size_t off = r == 0 ? at : at - n[0];
        if (r == 1 && off >= n[1]) {
            complete = true;
            break;
        }
        const size_t end = std::min(n[r], off + 1024);
        for (size_t o = off; o < end; o += 64) sink += *reinterpret_cast<const volatile uint8_t*>(p[r] + o);
        w.progress += end - off;
        if (generation_.load(std::memory_order_relaxed) != gen || w.seq.load(std::memory_order_relaxed) != s) break;
    }
    w.sink += sink;
    if (complete) w.done = s;
    w.reading.store(false, std::memory_order_release);
}

void ThreadPool::worker(int index) {
    uint64_t seen = 0;
    for (;;) {
        uint64_t g = generation_.load(std::memory_order_acquire);
        // First a tight spin (no pause: a paused spinner notices a new op late, and in a VM a pause loop can
        // cost the vCPU its slice) that also takes warm-up requests, then a relaxed one, then sleep.
        // Oversubscribed, it only yields a few times before sleeping.
        const int tight = oversubscribed_ ? 0 : kTightSpin;
        const int relaxed = oversubscribed_ ? 16 : kSpin;
        for (int spin = 0; g == seen && spin < tight; ++spin) {
            if (warm_pending(index)) warm_up(index);
            g = generation_.load(std::memory_order_acquire);
        }
        for (int spin = 0; g == seen && spin < relaxed; ++spin) {
            if (oversubscribed_) {
                std::this_thread::yield();
            } else {
                cpu_relax();
            }
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
    // Written only when set: a line no one writes stays in every worker's cache, and a worker reads failed_ before
    // each task (the two vCPUs here do not share an L3, so each line a worker must fetch afresh costs ~0.3 us).
    if (error_) error_ = nullptr;
    if (failed_.load(std::memory_order_relaxed)) failed_.store(false, std::memory_order_relaxed);
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
        if (spin < kSpin && !oversubscribed_) {
            cpu_relax();
        } else {
            std::this_thread::yield();  // a worker holding a task was descheduled: give it the core
        }
    }
    if (error_) std::rethrow_exception(error_);
}

}  // namespace basalt::cpu
