// Logging inside libbasalt: spdlog on stderr by default, or the embedder's callback.
#pragma once

#include <basalt/basalt.h>

#include <string>
#include <string_view>

#include <fmt/format.h>

namespace basalt::log {

// Returns true when a message at `level` would be emitted. Thread-safe.
bool enabled(basalt_log_level level) noexcept;
// Emits one message; `component` may be empty. Thread-safe, never throws.
void write(basalt_log_level level, std::string_view component, std::string_view message) noexcept;
// Sets / gets the process-wide level. Thread-safe.
void set_level(basalt_log_level level) noexcept;
basalt_log_level level() noexcept;
// Installs an embedder callback (nullptr restores stderr). Thread-safe.
void set_callback(basalt_log_callback callback, void* user_data) noexcept;
// Parses a level name; returns false when unknown.
bool parse_level(std::string_view name, basalt_log_level* out) noexcept;

// Formats and emits when enabled.
template <typename... Args>
void logf(basalt_log_level level, fmt::format_string<Args...> format, Args&&... args) noexcept {
    if (!enabled(level)) return;
    try {
        write(level, {}, fmt::format(format, std::forward<Args>(args)...));
    } catch (...) {
        // logging must never throw into the caller
    }
}

template <typename... Args>
void debug(fmt::format_string<Args...> f, Args&&... a) noexcept {
    logf(BASALT_LOG_DEBUG, f, std::forward<Args>(a)...);
}
template <typename... Args>
void info(fmt::format_string<Args...> f, Args&&... a) noexcept {
    logf(BASALT_LOG_INFO, f, std::forward<Args>(a)...);
}
template <typename... Args>
void warn(fmt::format_string<Args...> f, Args&&... a) noexcept {
    logf(BASALT_LOG_WARN, f, std::forward<Args>(a)...);
}

}  // namespace basalt::log
