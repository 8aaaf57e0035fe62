// Progress of long work inside libbasalt (weight uploads, prefills of several forward passes, quantization),
// reported to the embedder's process-wide callback (basalt_progress_set_callback); nothing when none is set.
#pragma once

#include <basalt/basalt.h>

#include <cstdint>

namespace basalt::progress {

// Installs the callback (nullptr: none). Thread-safe.
void set_callback(basalt_progress_callback callback, void* user_data) noexcept;
// True when a callback is installed (work may skip preparing reports otherwise). Thread-safe.
bool active() noexcept;
// Reports `done` of `total` units of `what` (a static name) to the callback, if any. Thread-safe, never throws.
void report(const char* what, uint64_t done, uint64_t total) noexcept;

}  // namespace basalt::progress
