// A request's plugin objects: its decoder instance (created from a loaded decoder component) and its chains.
#include <algorithm>

#include "engine/engine.hpp"
#include "host/host-services.hpp"
#include "host/runtime.hpp"
#include "support/error.hpp"
#include "support/params.hpp"

namespace basalt::engine {

basalt_decoder_info create_decoder(basalt_runtime& runtime, const std::string& name,
                                   const std::vector<std::pair<std::string, std::string>>& params,
                                   basalt_decoder_iface& table, void*& instance) {
    const Component* c = runtime.plugins.find(BASALT_COMPONENT_DECODER, name);
    if (c == nullptr) {
        std::string names;
        for (const auto& comp : runtime.plugins.components()) {
            if (comp.kind == BASALT_COMPONENT_DECODER) names += (names.empty() ? "" : ", ") + comp.name;
        }
        fail(BASALT_ERR_NOT_FOUND, "no decoder named '{}' is loaded (available: {})", name,
             names.empty() ? "none" : names);
    }
    table = read_table<basalt_decoder_iface>(*c);
    const ParamsView p(params);
    clear_plugin_error();
    instance = nullptr;
    const basalt_status st = table.create(host_services(), &p.params, &instance);
    if (st != BASALT_OK || instance == nullptr) {
        instance = nullptr;
        const std::string why = plugin_error_message().empty() ? "create failed" : plugin_error_message();
        if (why.rfind("decoder '", 0) == 0) fail(st != BASALT_OK ? st : BASALT_ERR_PLUGIN, "{}", why);
        fail(st != BASALT_OK ? st : BASALT_ERR_PLUGIN, "decoder '{}': {}", name, why);
    }
    basalt_decoder_info info{};
    info.struct_size = sizeof(info);
    clear_plugin_error();
    if (const basalt_status rs = table.requirements(instance, &info); rs != BASALT_OK) {
        const std::string why = plugin_error_message();
        table.destroy(instance);
        instance = nullptr;
        fail(rs, "decoder '{}': requirements: {}", name, why);
    }
    info.n_seq = std::max<uint32_t>(1, info.n_seq);
    info.n_models = std::max<uint32_t>(1, info.n_models);
    info.n_outputs = std::max<uint32_t>(1, info.n_outputs);
    return info;
}

void Request::release_plugin_objects() {
    chains.clear();
    if (dec_instance != nullptr && dec.destroy != nullptr) dec.destroy(dec_instance);
    dec_instance = nullptr;
}

Request::~Request() {
    release_plugin_objects();
}

}  // namespace basalt::engine
