#include "progress-bar.hpp"

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace basalt::tools {
namespace {

using Clock = std::chrono::steady_clock;

std::atomic<bool> g_enabled{false};
// The bar that holds the terminal line now (nullptr: none).
std::atomic<const ProgressBar*> g_line_owner{nullptr};

constexpr auto kRedraw = std::chrono::milliseconds(100);

// How long work runs before its bar appears: short work shows none. BASALT_PROGRESS_DELAY_MS overrides (tests).
Clock::duration start_delay() {
    static const Clock::duration delay = [] {
        const char* env = std::getenv("BASALT_PROGRESS_DELAY_MS");
        if (env != nullptr && *env >= '0' && *env <= '9')
            return Clock::duration(std::chrono::milliseconds(std::atoll(env)));
        return Clock::duration(std::chrono::milliseconds(250));
    }();
    return delay;
}

int terminal_width() {
    winsize ws{};
    if (::ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col >= 20) return ws.ws_col;
    return 80;
}

std::string amount(uint64_t n, ProgressBar::Unit unit) {
    char buf[32];
    if (unit == ProgressBar::Unit::kBytes) {
        std::snprintf(buf, sizeof(buf), "%.1f", static_cast<double>(n) / (1024.0 * 1024.0));
    } else {
        std::snprintf(buf, sizeof(buf), "%llu", static_cast<unsigned long long>(n));
    }
    return buf;
}

}  // namespace

void init_progress(bool disabled) {
    const char* term = std::getenv("TERM");
    const bool dumb = term != nullptr && std::strcmp(term, "dumb") == 0;
    g_enabled = !disabled && !dumb && ::isatty(STDERR_FILENO) == 1;
}

bool progress_enabled() {
    return g_enabled;
}

void clear_progress_line() {
    if (g_line_owner.load() == nullptr) return;
    std::fputs("\r\x1b[K", stderr);
    std::fflush(stderr);
}

ProgressBar::ProgressBar(std::string label, uint64_t total, Unit unit, std::string unit_name)
    : label_(std::move(label)),
      unit_name_(unit == Unit::kBytes ? "MiB" : std::move(unit_name)),
      total_(std::max<uint64_t>(total, 1)),
      unit_(unit),
      enabled_(g_enabled),
      start_(Clock::now()) {}

ProgressBar::~ProgressBar() {
    finish();
}

void ProgressBar::update(uint64_t done) {
    if (!enabled_) return;
    std::lock_guard lock(mutex_);
    if (finished_) return;
    const auto now = Clock::now();
    if (now - start_ < start_delay() || now - last_draw_ < kRedraw) return;
    if (!owns_line_) {
        const ProgressBar* none = nullptr;
        if (!g_line_owner.compare_exchange_strong(none, this)) return;  // another bar is showing
        owns_line_ = true;
    }
    last_draw_ = now;
    draw(std::min(done, total_));
}

void ProgressBar::draw(uint64_t done) {
    const double frac = static_cast<double>(done) / static_cast<double>(total_);
    const double elapsed = std::chrono::duration<double>(Clock::now() - start_).count();
    std::string tail = " " + std::to_string(static_cast<int>(frac * 100.0)) + "% " + amount(done, unit_) + "/" +
                       amount(total_, unit_) + (unit_name_.empty() ? "" : " " + unit_name_);
    if (frac > 0.02 && frac < 1.0) {
        tail += ", " + std::to_string(static_cast<long long>(elapsed * (1.0 - frac) / frac + 0.5)) + " s left";
    }
    const int width = terminal_width() - 1;
    const int bar = std::clamp(width - static_cast<int>(label_.size() + tail.size()) - 3, 0, 40);
    std::string line = label_;
    if (bar > 0) {
        const int filled = static_cast<int>(frac * bar);
        line += " [" + std::string(static_cast<size_t>(filled), '#') +
                std::string(static_cast<size_t>(bar - filled), '.') + "]";
    }
    line += tail;
    if (static_cast<int>(line.size()) > width) line.resize(static_cast<size_t>(std::max(width, 0)));
    // \r and erase-to-end-of-line redraw in place; nothing else on the line is touched.
    std::fprintf(stderr, "\r%s\x1b[K", line.c_str());
    std::fflush(stderr);
}

void ProgressBar::finish() {
    if (!enabled_) return;
    std::lock_guard lock(mutex_);
    if (finished_) return;
    finished_ = true;
    if (!owns_line_) return;
    std::fputs("\r\x1b[K", stderr);
    std::fflush(stderr);
    g_line_owner = nullptr;
    owns_line_ = false;
}

}  // namespace basalt::tools
