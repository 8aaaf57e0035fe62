// The library's progress reports (basalt_progress_set_callback: weight upload, long prefills, quantization) shown as
// the terminal progress bar of tools/progress.
#include <memory>
#include <mutex>
#include <string>

#include "cli.hpp"
#include "progress-bar.hpp"

namespace basalt::cli {
namespace {

struct Bridge {
    std::mutex mutex;
    std::string what;
    std::unique_ptr<tools::ProgressBar> bar;
};

Bridge& bridge() {
    static Bridge b;
    return b;
}

std::unique_ptr<tools::ProgressBar> bar_for(const std::string& what, uint64_t total) {
    using Unit = tools::ProgressBar::Unit;
    if (what == "upload") return std::make_unique<tools::ProgressBar>("uploading weights", total, Unit::kBytes);
    if (what == "prefill") return std::make_unique<tools::ProgressBar>("prefill", total, Unit::kCount, "tokens");
    if (what == "quantize") return std::make_unique<tools::ProgressBar>("quantizing", total, Unit::kBytes);
    return std::make_unique<tools::ProgressBar>(what, total);
}

void on_progress(const char* what, uint64_t done, uint64_t total, void* /*user_data*/) {
    Bridge& b = bridge();
    std::lock_guard lock(b.mutex);
    if (!b.bar || done == 0 || b.what != what) {
        b.bar.reset();  // a new piece of work: the old bar's line is cleared first
        b.what = what;
        b.bar = bar_for(b.what, total);
    }
    b.bar->update(done);
    if (done >= total) b.bar.reset();
}

}  // namespace

void show_library_progress(bool on) {
    basalt_progress_set_callback(on && tools::progress_enabled() ? on_progress : nullptr, nullptr);
    if (!on) {
        Bridge& b = bridge();
        std::lock_guard lock(b.mutex);
        b.bar.reset();
    }
}

}  // namespace basalt::cli
