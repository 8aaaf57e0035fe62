#include "host/host-services.hpp"

#include <cstdlib>
#include <string_view>

#include "support/error.hpp"
#include "support/log.hpp"

namespace basalt {
namespace {

void host_log(void* /*ctx*/, basalt_log_level level, const char* component, const char* message) {
    log::write(level, component != nullptr ? std::string_view(component) : std::string_view(),
               message != nullptr ? std::string_view(message) : std::string_view());
}

void host_set_error(void* /*ctx*/, basalt_status status, const char* message) {
    set_plugin_error(status, message);
}

void* host_alloc(void* /*ctx*/, size_t size, size_t alignment) {
    if (alignment < sizeof(void*)) alignment = sizeof(void*);
    if ((alignment & (alignment - 1)) != 0) return nullptr;  // not a power of two
    void* p = nullptr;
    if (posix_memalign(&p, alignment, size == 0 ? 1 : size) != 0) return nullptr;
    return p;
}

void host_free(void* /*ctx*/, void* ptr) {
    std::free(ptr);
}

const basalt_host kHost = {
    sizeof(basalt_host),
    BASALT_ABI_VERSION_MAJOR,
    BASALT_ABI_VERSION_MINOR,
    0,
    nullptr,
    host_log,
    host_set_error,
    host_alloc,
    host_free,
};

}  // namespace

const basalt_host* host_services() noexcept {
    return &kHost;
}

}  // namespace basalt
