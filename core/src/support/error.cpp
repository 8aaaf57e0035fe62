#include "support/error.hpp"

namespace basalt {
namespace {
thread_local std::string t_last_error;
thread_local std::string t_plugin_error;
thread_local bool t_plugin_error_set = false;
}  // namespace

std::string printable(std::string_view message) {
    std::string shown;
    shown.reserve(message.size());
    for (const char ch : message) {
        const auto c = static_cast<unsigned char>(ch);
        if ((c < 0x20 && c != '\n' && c != '\t') || c == 0x7f) {
            static const char kHex[] = "0123456789abcdef";
            shown += "\\x";
            shown += kHex[c >> 4];
            shown += kHex[c & 15];
        } else {
            shown += ch;
        }
    }
    return shown;
}

void set_last_error(const std::string& message) noexcept {
    try {
        t_last_error = printable(message);
    } catch (...) {
        t_last_error.clear();  // out of memory while reporting: keep an empty message rather than throw
    }
}

const char* last_error() noexcept {
    return t_last_error.c_str();
}

void set_plugin_error(basalt_status /*status*/, const char* message) noexcept {
    try {
        t_plugin_error = message != nullptr ? message : "";
        t_plugin_error_set = true;
    } catch (...) {
        t_plugin_error.clear();
    }
}

void clear_plugin_error() noexcept {
    t_plugin_error.clear();
    t_plugin_error_set = false;
}

std::string plugin_error_message() {
    return t_plugin_error_set ? t_plugin_error : std::string();
}

const char* status_name(basalt_status status) noexcept {
    switch (status) {
        case BASALT_OK:
            return "BASALT_OK";
        case BASALT_ERR_INVALID_ARGUMENT:
            return "BASALT_ERR_INVALID_ARGUMENT";
        case BASALT_ERR_OUT_OF_MEMORY:
            return "BASALT_ERR_OUT_OF_MEMORY";
        case BASALT_ERR_NOT_FOUND:
            return "BASALT_ERR_NOT_FOUND";
        case BASALT_ERR_IO:
            return "BASALT_ERR_IO";
        case BASALT_ERR_FORMAT:
            return "BASALT_ERR_FORMAT";
        case BASALT_ERR_UNSUPPORTED:
            return "BASALT_ERR_UNSUPPORTED";
        case BASALT_ERR_ABI_MISMATCH:
            return "BASALT_ERR_ABI_MISMATCH";
        case BASALT_ERR_PLUGIN:
            return "BASALT_ERR_PLUGIN";
        case BASALT_ERR_DUPLICATE:
            return "BASALT_ERR_DUPLICATE";
        case BASALT_ERR_CAPACITY:
            return "BASALT_ERR_CAPACITY";
        case BASALT_ERR_BACKEND:
            return "BASALT_ERR_BACKEND";
        case BASALT_ERR_CANCELLED:
            return "BASALT_ERR_CANCELLED";
        case BASALT_ERR_INTERNAL:
            return "BASALT_ERR_INTERNAL";
        default:
            return "BASALT_ERR_UNKNOWN";
    }
}

}  // namespace basalt
