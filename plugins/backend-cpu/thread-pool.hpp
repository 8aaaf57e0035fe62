// A persistent pool: threads are created once per backend instance and woken per parallel region (no thread
// creation per token). Workers spin briefly before sleeping so back-to-back ops of a decode step stay cheap.
#pragma once

#include <algorithm>
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

    // Where thread t's span of n items starts when split among `threads` (t = threads: n). Pure.
    static int64_t span_begin(int64_t n, int t, int threads) noexcept { return n * t / threads; }

    // Runs f(begin, end, thread) over the items [0, n) split into one contiguous span per thread, evenly (thread
    // t owns [span_begin(n, t), span_begin(n, t + 1))). Each thread takes its span from the front `own` items at a
    // time, by a compare-and-swap on a cache line no other thread touches while it has work, then `steal` items
    // at a time from the back of the others' spans. So each thread walks one run of adjacent items, claims cost
    // no cross-core traffic until the end, and the threads finish within a claim of each other. Alone, a thread
    // takes everything at once. Rethrows like run(). Caller thread only (the spans are kept in the pool).
    template <typename F>
    void parallel_spans(int64_t n, int64_t own, int64_t steal, F&& f) {
        if (n <= 0) return;
        if (n >= (int64_t{1} << 32)) {  // past the spans' 32-bit bounds: plain chunks
            const int64_t chunk = (n + int64_t{4} * n_threads_ - 1) / (int64_t{4} * n_threads_);
            parallel_for((n + chunk - 1) / chunk,
                         [&](int64_t c, int thread) { f(c * chunk, std::min(n, (c + 1) * chunk), thread); });
            return;
        }
        const int t_count = n_threads_;
        std::vector<Span>& spans = spans_;  // kept between calls: no allocation, and lines the workers have seen
        for (int t = 0; t < t_count; ++t) {
            spans[static_cast<size_t>(t)].reset(span_begin(n, t, t_count), span_begin(n, t + 1, t_count));
        }
        if (t_count == 1) own = n;
        parallel_for(t_count, [&](int64_t, int thread) {
            int64_t b = 0;
            int64_t e = 0;
            while (spans[static_cast<size_t>(thread)].take(true, own, &b, &e)) f(b, e, thread);
            for (int v = 1; v < t_count; ++v) {
                Span& victim = spans[static_cast<size_t>((thread + v) % t_count)];
                while (victim.take(false, steal, &b, &e)) f(b, e, thread);
            }
        });
    }

    // Asks worker `thread` (1..size()-1) to read up to two byte ranges into its caches while it waits for work
    // (between parallel regions; a region interrupts it, and it resumes after), replacing its earlier request.
    // Decode uses it to pull the next matmul's weights in while the caller runs small ops alone. The ranges
    // must stay mapped until cancel_warm() returns. Caller thread only.
    void warm(int thread, const void* p0, size_t n0, const void* p1, size_t n1);
    // Drops every worker's request and returns once none is reading. Caller thread only.
    void cancel_warm();

  private:
    // Items [front, back) of parallel_spans: taken from the front by the owner, from the back by the others.
    struct alignas(64) Span {
        std::atomic<uint64_t> fb{0};  // back << 32 | front

        void reset(int64_t front, int64_t back) noexcept {
            fb.store(static_cast<uint64_t>(back) << 32 | static_cast<uint64_t>(front), std::memory_order_relaxed);
        }
        // Takes up to n items from the front or the back into [*b, *e); false when the span is empty.
        bool take(bool front, int64_t n, int64_t* b, int64_t* e) noexcept {
            uint64_t v = fb.load(std::memory_order_acquire);
            for (;;) {
                const auto f = static_cast<int64_t>(v & 0xffffffffu);
                const auto k = static_cast<int64_t>(v >> 32);
                if (f >= k) return false;
                const int64_t lo = front ? f : std::max(f, k - n);
                const int64_t hi = front ? std::min(k, f + n) : k;
                const uint64_t next = front ? (v & ~uint64_t{0xffffffffu}) | static_cast<uint64_t>(hi)
                                            : static_cast<uint64_t>(lo) << 32 | static_cast<uint64_t>(f);
                if (fb.compare_exchange_weak(v, next, std::memory_order_acq_rel, std::memory_order_acquire)) {
                    *b = lo;
                    *e = hi;
                    return true;
                }
            }
        }
    };

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
    bool oversubscribed_;  // more threads than cores: waiting threads yield instead of spinning
    std::vector<std::thread> threads_;
    std::mutex mutex_;
    std::condition_variable wake_;
    // The hot atomics sit on cache lines of their own: the workers' spin on generation_ must not contend with
    // the task claims and completions.
    alignas(64) std::atomic<uint64_t> generation_{0};
    // Task claims: (generation << 44) | (n_tasks << 22) | next. A worker that wakes late cannot claim a task
    // of a newer run, and the caller waits for finished tasks, not for every worker to check in.
    alignas(64) std::atomic<uint64_t> claim_{0};
    // The task body shares the claims' line: a worker's first claim brings it along (written before claim_'s
    // release store).
    TaskFn fn_ = nullptr;
    void* ctx_ = nullptr;
    alignas(64) std::atomic<int64_t> done_{0};
    alignas(64) std::atomic<bool> failed_{false};
    std::atomic<int> sleeping_{0};
    bool stop_ = false;
    int64_t n_tasks_ = 0;
    std::exception_ptr error_;
    std::vector<Warm> warm_;   // per thread index (0 unused)
    std::vector<Span> spans_;  // parallel_spans' spans, one per thread (caller thread only)
    std::mutex error_mutex_;
};

}  // namespace basalt::cpu
