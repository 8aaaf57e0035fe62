#include "support/progress.hpp"

#include <atomic>
#include <mutex>

namespace basalt::progress {
namespace {

struct Sink {
    std::mutex mutex;
    basalt_progress_callback callback = nullptr;
    void* user_data = nullptr;
    std::atomic<bool> set{false};
};

Sink& sink() {
    static Sink s;
    return s;
}

}  // namespace

void set_callback(basalt_progress_callback callback, void* user_data) noexcept {
    Sink& s = sink();
    std::lock_guard lock(s.mutex);
    s.callback = callback;
    s.user_data = user_data;
    s.set.store(callback != nullptr);
}

bool active() noexcept {
    return sink().set.load(std::memory_order_relaxed);
}

void report(const char* what, uint64_t done, uint64_t total) noexcept {
    if (!active()) return;
    Sink& s = sink();
    basalt_progress_callback callback = nullptr;
    void* user_data = nullptr;
    {
        std::lock_guard lock(s.mutex);
        callback = s.callback;
        user_data = s.user_data;
    }
    if (callback == nullptr) return;
    try {
        callback(what, done, total, user_data);
    } catch (...) {
        // an embedder's callback must not unwind through the library
    }
}

}  // namespace basalt::progress
