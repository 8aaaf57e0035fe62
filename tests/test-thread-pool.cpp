// The CPU backend's thread pool, tested directly (it is internal to the plugin): parallel_spans covers every item
// exactly once whatever the stealing does, and its fallback past 32-bit spans covers them too.
#include <catch2/catch.hpp>

#include <atomic>
#include <cstdint>
#include <stdexcept>
#include <vector>

#include "thread-pool.hpp"

using basalt::cpu::ThreadPool;

TEST_CASE("thread pool: parallel_spans runs every item exactly once", "[thread-pool]") {
    for (int threads : {1, 2, 3, 5}) {
        ThreadPool pool(threads);
        for (int64_t n : {int64_t{1}, int64_t{2}, int64_t{7}, int64_t{64}, int64_t{1000}, int64_t{4099}}) {
            for (int64_t own : {int64_t{1}, int64_t{4}, int64_t{32}}) {
                INFO(threads << " threads, " << n << " items, " << own << " per take");
                std::vector<std::atomic<int>> seen(static_cast<size_t>(n));
                std::atomic<int64_t> calls{0};
                pool.parallel_spans(n, own, 2, [&](int64_t b, int64_t e, int thread) {
                    CHECK(b < e);
                    CHECK(thread >= 0);
                    CHECK(thread < threads);
                    for (int64_t i = b; i < e; ++i) seen[static_cast<size_t>(i)].fetch_add(1);
                    calls.fetch_add(1);
                });
                int wrong = 0;
                for (auto& s : seen) wrong += s.load() != 1 ? 1 : 0;
                CHECK(wrong == 0);
                if (threads == 1) CHECK(calls.load() == 1);  // alone: the whole span in one take
            }
        }
    }
}

TEST_CASE("thread pool: parallel_spans past 2^32 items covers them in plain chunks", "[thread-pool]") {
    ThreadPool pool(2);
    const int64_t n = (int64_t{1} << 32) + 5;
    std::atomic<int64_t> covered{0};
    std::atomic<int64_t> last_end{0};
    pool.parallel_spans(n, 4, 2, [&](int64_t b, int64_t e, int) {
        covered.fetch_add(e - b);
        if (e == n) last_end.store(e);
    });
    CHECK(covered.load() == n);
    CHECK(last_end.load() == n);
}

TEST_CASE("thread pool: an exception in parallel_spans reaches the caller", "[thread-pool]") {
    ThreadPool pool(2);
    CHECK_THROWS_AS(pool.parallel_spans(100, 4, 2,
                                        [&](int64_t b, int64_t, int) {
                                            if (b == 0) throw std::runtime_error("item 0");
                                        }),
                    std::runtime_error);
}
