#include "support/log.hpp"

#include <cstdio>

#include <atomic>
#include <cstdlib>
#include <mutex>

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

namespace basalt::log {
namespace {

basalt_log_level initial_level() noexcept {
    basalt_log_level lvl = BASALT_LOG_WARN;
    if (const char* env = std::getenv("BASALT_LOG"); env != nullptr && *env != '\0') {
        if (!parse_level(env, &lvl)) {
            lvl = BASALT_LOG_WARN;
            // Not through write(): the level is being initialised. Once per process, on stderr.
            std::fprintf(stderr,
                         "basalt: warning: BASALT_LOG='%s' is not a log level (trace, debug, info, warn, "
                         "error, off); using warn\n",
                         env);
        }
    }
    return lvl;
}

std::atomic<basalt_log_level>& level_ref() noexcept {
    static std::atomic<basalt_log_level> lvl{initial_level()};
    return lvl;
}

// $BASALT_LOG is read when the library loads, so a bad value is reported even by a program that never logs.
const bool kLevelRead = (level_ref(), true);

struct Sink {
    std::mutex mutex;
    basalt_log_callback callback = nullptr;
    void* user_data = nullptr;
    std::shared_ptr<spdlog::logger> logger;
};

Sink& sink() {
    static Sink s;
    return s;
}

spdlog::level::level_enum to_spdlog(basalt_log_level level) noexcept {
    switch (level) {
        case BASALT_LOG_TRACE:
            return spdlog::level::trace;
        case BASALT_LOG_DEBUG:
            return spdlog::level::debug;
        case BASALT_LOG_INFO:
            return spdlog::level::info;
        case BASALT_LOG_WARN:
            return spdlog::level::warn;
        case BASALT_LOG_ERROR:
            return spdlog::level::err;
        default:
            return spdlog::level::off;
    }
}

}  // namespace

bool enabled(basalt_log_level level) noexcept {
    return level >= level_ref().load() && level < BASALT_LOG_OFF;
}

void set_level(basalt_log_level lvl) noexcept {
    if (lvl < BASALT_LOG_TRACE) lvl = BASALT_LOG_TRACE;
    if (lvl > BASALT_LOG_OFF) lvl = BASALT_LOG_OFF;
    level_ref().store(lvl);
}

basalt_log_level level() noexcept {
    return level_ref().load();
}

void set_callback(basalt_log_callback callback, void* user_data) noexcept {
    Sink& s = sink();
    std::lock_guard lock(s.mutex);
    s.callback = callback;
    s.user_data = user_data;
}

bool parse_level(std::string_view name, basalt_log_level* out) noexcept {
    static constexpr std::pair<std::string_view, basalt_log_level> kNames[] = {
        {"trace", BASALT_LOG_TRACE},  {"debug", BASALT_LOG_DEBUG}, {"info", BASALT_LOG_INFO}, {"warn", BASALT_LOG_WARN},
        {"warning", BASALT_LOG_WARN}, {"error", BASALT_LOG_ERROR}, {"off", BASALT_LOG_OFF}};
    for (const auto& [n, l] : kNames) {
        if (n == name) {
            *out = l;
            return true;
        }
    }
    return false;
}

void write(basalt_log_level level, std::string_view component, std::string_view message) noexcept {
    if (!enabled(level)) return;
    try {
        Sink& s = sink();
        std::lock_guard lock(s.mutex);
        if (s.callback != nullptr) {
            const std::string comp(component);
            const std::string msg(message);
            s.callback(level, comp.empty() ? nullptr : comp.c_str(), msg.c_str(), s.user_data);
            return;
        }
        if (!s.logger) {
            s.logger =
                std::make_shared<spdlog::logger>("basalt", std::make_shared<spdlog::sinks::stderr_color_sink_mt>());
            s.logger->set_pattern("[%H:%M:%S.%e] [%^%l%$] %v");
            s.logger->set_level(spdlog::level::trace);  // filtering happens in enabled()
        }
        if (component.empty()) {
            s.logger->log(to_spdlog(level), "{}", message);
        } else {
            s.logger->log(to_spdlog(level), "[{}] {}", component, message);
        }
    } catch (...) {
        // a failing log sink must not take the caller down
    }
}

}  // namespace basalt::log
