// Error reporting inside libbasalt: an exception type carrying a status, the per-thread last-error
// message, and the guard that turns exceptions into statuses at every C API entry point.
#pragma once

#include <basalt/common.h>

#include <new>
#include <stdexcept>
#include <string>
#include <string_view>

#include <fmt/format.h>

namespace basalt {

// The message with control bytes (NUL included, line breaks and tabs excepted) written as \xNN: a C string ends
// at the first NUL, and bytes from a corrupt file must not garble a terminal.
std::string printable(std::string_view message);

// An error with a status code; thrown inside the core, caught at the C API boundary. Its message is printable().
class Error : public std::runtime_error {
  public:
    Error(basalt_status status, const std::string& message) : std::runtime_error(printable(message)), status_(status) {}
    basalt_status status() const noexcept { return status_; }

  private:
    basalt_status status_;
};

// Throws basalt::Error(status, formatted message).
template <typename... Args>
[[noreturn]] void fail(basalt_status status, fmt::format_string<Args...> format, Args&&... args) {
    throw Error(status, fmt::format(format, std::forward<Args>(args)...));
}

// Sets the calling thread's last error message.
void set_last_error(const std::string& message) noexcept;
// Returns the calling thread's last error message.
const char* last_error() noexcept;

// Re-throws the failure of a C API call made from inside libbasalt (status and the thread's message kept).
inline void rethrow_if_failed(basalt_status status) {
    if (status != BASALT_OK) throw Error(status, last_error());
}

// Stores the message a plugin reported through the host table (per thread) for the host to wrap.
void set_plugin_error(basalt_status status, const char* message) noexcept;
// Clears the per-thread plugin message; call before invoking a plugin entry point.
void clear_plugin_error() noexcept;
// Returns the message the plugin last reported on this thread, or "" if none.
std::string plugin_error_message();

// Runs fn, converting exceptions into a status and the thread's last error. Never throws.
template <typename Fn>
basalt_status guard(Fn&& fn) noexcept {
    try {
        fn();
        return BASALT_OK;
    } catch (const Error& e) {
        set_last_error(e.what());
        return e.status();
    } catch (const std::bad_alloc&) {
        set_last_error("out of memory");
        return BASALT_ERR_OUT_OF_MEMORY;
    } catch (const std::exception& e) {
        set_last_error(std::string("internal error: ") + e.what());
        return BASALT_ERR_INTERNAL;
    } catch (...) {
        set_last_error("internal error: unknown exception");
        return BASALT_ERR_INTERNAL;
    }
}

// Returns the static name of a status ("BASALT_ERR_NOT_FOUND").
const char* status_name(basalt_status status) noexcept;

}  // namespace basalt
