// The object behind the opaque basalt_runtime handle.
#pragma once

#include <basalt/basalt.h>

#include "host/plugin-host.hpp"

struct basalt_runtime {
    basalt::PluginHost plugins;
};
