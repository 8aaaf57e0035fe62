// A persistent pool: threads are created once per backend instance and woken per parallel region (no thread
// creation per token). Workers spin briefly before sleeping so back-to-back ops of a decode step stay cheap.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace basalt::cpu {

class ThreadPool {
  public:
    // Task body: (task index, thread index in [0, size())).
    using TaskFn = void (*)(void* ctx, int64_t task, int thread);

    explicit ThreadPool(int n_threads);
    ~ThreadPool();
    ThreadPool(const ThreadPool&) = delete;
    ThreadPool& operator=(const ThreadPool&) = delete;

    int size() const noexcept { return n_threads_; }

    // Runs fn(ctx, t, thread) for t in [0, n_tasks) on the caller and the workers; returns when all are done.
    // The first exception thrown by a task is rethrown here (remaining tasks are skipped).
    void run(int64_t n_tasks, TaskFn fn, void* ctx);

    // Convenience wrapper for lambdas: f(task, thread).
    template <typename F>
    void parallel_for(int64_t n_tasks, F&& f) {
        if (n_tasks <= 0) return;
        run(
            n_tasks, [](void* c, int64_t t, int th) { (*static_cast<F*>(c))(t, th); }, &f);
    }

    // Asks worker `thread` (1..size()-1) to read up to two byte ranges into its caches while it waits for work
    // (between parallel regions; a region interrupts it, and it resumes after), replacing its earlier request.
    // Decode uses it to pull the next matmul's weights in while the caller runs small ops alone. The ranges
    // must stay mapped until cancel_warm() returns. Caller thread only.
    void warm(int thread, const void* p0, size_t n0, const void* p1, size_t n1);
    // Drops every worker's request and returns once none is reading. Caller thread only.
    void cancel_warm();

  private:
    // A worker's warm-up request: a seqlock (seq odd while the caller writes it).
    // Three cache lines: the request (written by the caller), the worker's published state, its private state.
    struct alignas(64) Warm {
        std::atomic<uint64_t> seq{0};
        std::atomic<const uint8_t*> p[2] = {nullptr, nullptr};
        std::atomic<size_t> n[2] = {0, 0};
        alignas(64) std::atomic<bool> reading{false};
        alignas(64) uint64_t taken = 0;  // seq of the request being read (a region interrupts it; it resumes)
        size_t progress = 0;             // bytes of it read so far
        uint64_t done = 0;               // seq of the last request read to its end
        uint64_t sink = 0;               // keeps the loads
    };
    bool warm_pending(int index) const noexcept;
    void warm_up(int index);

    void worker(int index);
    void work(int thread, uint64_t gen);

    int n_threads_;
    std::vector<std::thread> threads_;
    std::mutex mutex_;
    std::condition_variable wake_;
    // The hot atomics sit on cache lines of their own: the workers' spin on generation_ must not contend with
    // the task claims and completions.
    alignas(64) std::atomic<uint64_t> generation_{0};
    // Task claims: (generation << 44) | (n_tasks << 22) | next. A worker that wakes late cannot claim a task
    // of a newer run, and the caller waits for finished tasks, not for every worker to check in.
    alignas(64) std::atomic<uint64_t> claim_{0};
    alignas(64) std::atomic<int64_t> done_{0};
    alignas(64) std::atomic<bool> failed_{false};
    std::atomic<int> sleeping_{0};
    bool stop_ = false;
    int64_t n_tasks_ = 0;
    TaskFn fn_ = nullptr;
    void* ctx_ = nullptr;
    std::exception_ptr error_;
    std::vector<Warm> warm_;  // per thread index (0 unused)
    std::mutex error_mutex_;
};

}  // namespace basalt::cpu
