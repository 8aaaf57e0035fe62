// Basalt SDK: header-only C++ helpers for plugin authors. Compiles into the plugin; nothing here crosses
// the ABI (only the C tables in abi/ do). Provides the host pointer, exception-to-status wrappers,
// logging, parameter parsing with precise errors, and the init helper behind basalt_plugin_init.
#pragma once

#include <basalt/plugin.h>

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <initializer_list>
#include <new>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

// Declares the single export of a plugin library (use once, in one source file).
#define BASALT_PLUGIN_INIT                                                                                           \
    BASALT_EXTERN_C BASALT_EXPORT basalt_status basalt_plugin_init(uint32_t host_abi_major, uint32_t host_abi_minor, \
                                                                   const basalt_host* host,                          \
                                                                   const basalt_plugin_desc** out_desc)

namespace basalt::sdk {

// The host table this plugin was initialised with (one per plugin library). Not for use before init.
inline const basalt_host*& host() noexcept {
    static const basalt_host* h = nullptr;
    return h;
}

// An error with a status; thrown inside a plugin and turned into a status by guard().
class error : public std::runtime_error {
  public:
    error(basalt_status status, const std::string& message) : std::runtime_error(message), status_(status) {}
    basalt_status status() const noexcept { return status_; }

  private:
    basalt_status status_;
};

// A host service (a decoder host's sample, emit ...) failed and recorded its own message: guard() returns the
// status without reporting anything over that message.
class host_error : public std::exception {
  public:
    explicit host_error(basalt_status status) : status_(status) {}
    basalt_status status() const noexcept { return status_; }
    const char* what() const noexcept override { return "a host service failed"; }

  private:
    basalt_status status_;
};

// Throws host_error when a host service returned a failure (its message stays the host's).
inline void check_host(basalt_status status) {
    if (status != BASALT_OK) throw host_error(status);
}

// Reports `message` through the host (if any) and returns status.
inline basalt_status report(basalt_status status, const char* message) noexcept {
    const basalt_host* h = host();
    if (h != nullptr && BASALT_HAS_FIELD(h, basalt_host, set_error) && h->set_error != nullptr) {
        h->set_error(h->ctx, status, message);
    }
    return status;
}

// Runs fn (returning void or basalt_status) and converts any exception into a status + host message.
template <typename Fn>
basalt_status guard(Fn&& fn) noexcept {
    try {
        if constexpr (std::is_void_v<decltype(fn())>) {
            fn();
            return BASALT_OK;
        } else {
            return fn();
        }
    } catch (const error& e) {
        return report(e.status(), e.what());
    } catch (const host_error& e) {
        return e.status();
    } catch (const std::bad_alloc&) {
        return report(BASALT_ERR_OUT_OF_MEMORY, "out of memory");
    } catch (const std::exception& e) {
        return report(BASALT_ERR_INTERNAL, e.what());
    } catch (...) {
        return report(BASALT_ERR_INTERNAL, "unknown exception");
    }
}

// Logs through the host; never throws.
inline void log(basalt_log_level level, const char* component, const std::string& message) noexcept {
    const basalt_host* h = host();
    if (h != nullptr && BASALT_HAS_FIELD(h, basalt_host, log) && h->log != nullptr) {
        h->log(h->ctx, level, component, message.c_str());
    }
}

// Read-only view of a basalt_params list with typed getters whose errors name the component, key and value.
class params {
  public:
    params(const basalt_params* p, std::string component) : p_(p), component_(std::move(component)) {}

    size_t size() const noexcept { return p_ == nullptr ? 0 : p_->count; }
    std::string_view key(size_t i) const { return p_->keys[i]; }
    std::string_view value(size_t i) const { return p_->values[i]; }

    // Returns the last value given for key, if any.
    std::optional<std::string_view> find(std::string_view k) const {
        std::optional<std::string_view> v;
        for (size_t i = 0; i < size(); ++i) {
            if (key(i) == k) v = value(i);
        }
        return v;
    }

    // Throws when a key outside `known` is present.
    void expect_only(std::initializer_list<std::string_view> known) const {
        for (size_t i = 0; i < size(); ++i) {
            bool ok = false;
            for (auto k : known) ok = ok || k == key(i);
            if (!ok) {
                std::string list;
                for (auto k : known) list += (list.empty() ? "" : ", ") + std::string(k);
                throw error(BASALT_ERR_INVALID_ARGUMENT, component_ + ": unknown parameter '" + std::string(key(i)) +
                                                             "' (accepted: " + (list.empty() ? "none" : list) + ")");
            }
        }
    }

    // Parses a finite float, or returns fallback when absent.
    float get_float(std::string_view k, float fallback) const {
        auto v = find(k);
        if (!v) return fallback;
        const std::string s(*v);
        char* end = nullptr;
        errno = 0;
        const float f = std::strtof(s.c_str(), &end);
        if (s.empty() || end != s.c_str() + s.size() || errno == ERANGE || !std::isfinite(f))
            bad(k, *v, "a finite number");
        return f;
    }

    // Parses a probability in [0, 1], or returns fallback when absent.
    float get_probability(std::string_view k, float fallback) const {
        const float v = get_float(k, fallback);
        if (v < 0.f || v > 1.f) bad(k, *find(k), "a probability in [0, 1]");
        return v;
    }

    // Parses an integer, or returns fallback when absent.
    long long get_int(std::string_view k, long long fallback) const {
        auto v = find(k);
        if (!v) return fallback;
        long long out = 0;
        auto [ptr, ec] = std::from_chars(v->data(), v->data() + v->size(), out);
        if (v->empty() || ec != std::errc() || ptr != v->data() + v->size()) bad(k, *v, "an integer");
        return out;
    }

    // Parses a switch (1/0, true/false, on/off, yes/no), or returns fallback when absent.
    bool get_bool(std::string_view k, bool fallback) const {
        auto v = find(k);
        if (!v) return fallback;
        if (*v == "1" || *v == "true" || *v == "on" || *v == "yes") return true;
        if (*v == "0" || *v == "false" || *v == "off" || *v == "no") return false;
        bad(k, *v, "a switch (1/0, true/false, on/off, yes/no)");
    }

    [[noreturn]] void bad(std::string_view k, std::string_view v, const char* expected) const {
        throw error(BASALT_ERR_INVALID_ARGUMENT,
                    component_ + ": parameter '" + std::string(k) + "' = '" + std::string(v) + "' is not " + expected);
    }

  private:
    const basalt_params* p_;
    std::string component_;
};

// Implements basalt_plugin_init for a plugin with a static descriptor: checks the host's major, stores the
// host table, and hands out the descriptor.
inline basalt_status init_plugin(uint32_t host_abi_major, uint32_t host_abi_minor, const basalt_host* h,
                                 const basalt_plugin_desc* desc, const basalt_plugin_desc** out_desc) noexcept {
    (void)host_abi_minor;
    if (out_desc == nullptr || h == nullptr) return BASALT_ERR_INVALID_ARGUMENT;
    host() = h;
    if (host_abi_major != BASALT_ABI_VERSION_MAJOR) {
        const std::string msg = std::string("plugin '") + desc->name + "' needs Basalt ABI " +
                                std::to_string(BASALT_ABI_VERSION_MAJOR) + ".x, host is " +
                                std::to_string(host_abi_major) + "." + std::to_string(host_abi_minor);
        return report(BASALT_ERR_ABI_MISMATCH, msg.c_str());
    }
    *out_desc = desc;
    return BASALT_OK;
}

}  // namespace basalt::sdk
