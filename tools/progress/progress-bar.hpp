// A terminal progress bar for the command-line tools (basalt, make-model): one line on stderr, redrawn at most ten
// times a second and only once the work has lasted a moment, cleared when the work ends. Drawn only when stderr is
// a terminal and the user did not ask for --no-progress; otherwise every call does nothing, so output captured by a
// pipe or a file never holds one. One bar draws at a time: a bar made while another is showing stays silent (an
// outer loop's bar keeps the line while the library reports the pieces inside it).
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>

namespace basalt::tools {

// Decides, once per process, whether bars are drawn: stderr is a terminal (not TERM=dumb) and `disabled` is false.
void init_progress(bool disabled);
// What init_progress decided (false before it is called).
bool progress_enabled();
// Erases the bar showing now, if any, so that a message printed next starts on a clean line (the bar is redrawn at
// its next update). Call it before writing an error to stderr.
void clear_progress_line();

class ProgressBar {
  public:
    enum class Unit { kCount, kBytes };
    // `label` says what is being done ("quantizing"); `unit_name` names counted units ("tensors"; kBytes shows MiB).
    ProgressBar(std::string label, uint64_t total, Unit unit = Unit::kCount, std::string unit_name = {});
    ~ProgressBar();
    ProgressBar(const ProgressBar&) = delete;
    ProgressBar& operator=(const ProgressBar&) = delete;

    // Records `done` of the total and redraws when it is time. Thread-safe.
    void update(uint64_t done);
    // Clears the line (when this bar drew it); later updates draw nothing. Thread-safe, idempotent.
    void finish();

  private:
    void draw(uint64_t done);

    std::mutex mutex_;
    std::string label_, unit_name_;
    uint64_t total_;
    Unit unit_;
    bool enabled_, finished_ = false, owns_line_ = false;
    std::chrono::steady_clock::time_point start_, last_draw_{};
};

}  // namespace basalt::tools
