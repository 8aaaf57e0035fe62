// The basalt_host table handed to every plugin: logging, errors and allocation routed into the core.
#pragma once

#include <basalt/plugin.h>

namespace basalt {

// Returns the process-wide host services table (static storage, thread-safe functions).
const basalt_host* host_services() noexcept;

}  // namespace basalt
