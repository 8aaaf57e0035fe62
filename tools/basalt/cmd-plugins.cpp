// `basalt plugins`: every loaded component with kind, name, version, ABI and file.
#include <iomanip>
#include <iostream>
#include <string>
#include <vector>

#include "cli.hpp"
#include "engine-setup.hpp"

namespace basalt::cli {
namespace {

std::string version_of(const basalt_component_info& c) {
    return std::to_string(c.version_major) + "." + std::to_string(c.version_minor) + "." +
           std::to_string(c.version_patch);
}

int run_plugins(const po::variables_map& vm, const GlobalOptions& g) {
    const cpp::Runtime rt(runtime_options(g));
    std::vector<basalt_component_info> infos;
    const size_t n = basalt_runtime_component_count(rt.get());
    for (size_t i = 0; i < n; ++i) {
        basalt_component_info info{};
        info.struct_size = sizeof(info);
        if (basalt_runtime_component_info(rt.get(), i, &info) != BASALT_OK) {
            print_error(basalt_last_error());
            return kExitError;
        }
        infos.push_back(info);
    }
    uint32_t major = 0, minor = 0;
    basalt_abi_version(&major, &minor);
    if (vm["json"].as<bool>()) {
        Json j(std::cout);
        j.begin_object();
        j.key("abi").value(std::to_string(major) + "." + std::to_string(minor));
        j.key("plugin_dir").value(basalt_default_plugin_dir());
        j.key("components").begin_array();
        for (const auto& c : infos) {
            j.begin_object();
            j.key("kind").value(basalt_component_kind_name(c.kind));
            j.key("name").value(c.name);
            j.key("version").value(version_of(c));
            j.key("description").value(c.description);
            j.key("plugin").value(c.plugin_name);
            j.key("abi").value(std::to_string(c.plugin_abi_major) + "." + std::to_string(c.plugin_abi_minor));
            j.key("file").value(c.file);
            j.end_object();
        }
        j.end_array();
        j.end_object();
        std::cout << '\n';
        return kExitOk;
    }
    if (infos.empty()) {
        std::cout << "no plugins loaded (plugin folder: " << basalt_default_plugin_dir() << ")\n";
        return kExitOk;
    }
    std::cout << std::left << std::setw(10) << "KIND" << std::setw(20) << "NAME" << std::setw(10) << "VERSION"
              << std::setw(6) << "ABI"
              << "FILE\n";
    for (const auto& c : infos) {
        std::cout << std::setw(10) << basalt_component_kind_name(c.kind) << std::setw(20) << c.name << std::setw(10)
                  << version_of(c) << std::setw(6)
                  << (std::to_string(c.plugin_abi_major) + "." + std::to_string(c.plugin_abi_minor)) << c.file << '\n';
    }
    return kExitOk;
}

const Registrar kPlugins{Command{"plugins", "list every loaded component (kind, name, version, ABI, file)",
                                 "basalt plugins [--json]",
                                 [](po::options_description& d, po::positional_options_description&) {
                                     d.add_options()("json", po::bool_switch(), "print JSON");
                                 },
                                 run_plugins}};

}  // namespace
}  // namespace basalt::cli
