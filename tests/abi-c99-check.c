/* Compiled as strict C99: proves the ABI headers are pure C, and reports the C compiler's view of the
 * layouts so test-abi-layout.cpp can check that C and C++ agree byte for byte. */
#include <basalt/basalt.h>
#include <basalt/plugin.h>
#include <basalt/plugin_backend.h>
#include <basalt/plugin_decoder.h>
#include <basalt/plugin_kv_cache.h>
#include <basalt/plugin_sampler.h>
#include <basalt/plugin_steering.h>

size_t basalt_test_c_layout(int which);

size_t basalt_test_c_layout(int which) {
    switch (which) {
        case 0:
            return sizeof(basalt_host);
        case 1:
            return sizeof(basalt_component_desc);
        case 2:
            return sizeof(basalt_plugin_desc);
        case 3:
            return sizeof(basalt_sampler_iface);
        case 4:
            return sizeof(basalt_candidates);
        case 5:
            return sizeof(basalt_params);
        case 6:
            return sizeof(basalt_backend_iface);
        case 7:
            return sizeof(basalt_graph_node);
        case 8:
            return sizeof(basalt_tensor);
        case 9:
            return sizeof(basalt_kv_cache_iface);
        case 10:
            return sizeof(basalt_decoder_iface);
        case 11:
            return sizeof(basalt_decoder_host);
        case 12:
            return sizeof(basalt_steering_iface);
        case 13:
            return sizeof(basalt_component_info);
        case 14:
            return offsetof(basalt_plugin_desc, components);
        case 15:
            return offsetof(basalt_sampler_iface, clone);
        case 16:
            return sizeof(basalt_batch);
        case 17:
            return sizeof(basalt_kv_reservation);
        default:
            return 0;
    }
}
