// `basalt version`: library version, ABI version and build configuration.
#include <iostream>

#include "cli.hpp"

namespace basalt::cli {
namespace {

int run_version(const po::variables_map& vm, const GlobalOptions& /*g*/) {
    uint32_t major = 0, minor = 0;
    basalt_abi_version(&major, &minor);
    if (vm.count("json") != 0U && vm["json"].as<bool>()) {
        Json j(std::cout);
        j.begin_object();
        j.key("version").value(basalt_version_string());
        j.key("abi").value(std::to_string(major) + "." + std::to_string(minor));
        j.key("plugin_dir").value(basalt_default_plugin_dir());
        j.end_object();
        std::cout << '\n';
    } else {
        std::cout << "basalt " << basalt_version_string() << " (ABI " << major << "." << minor << ")\n"
                  << "plugin folder: " << basalt_default_plugin_dir() << '\n';
    }
    return kExitOk;
}

const Registrar kVersion{Command{"version", "print the library and ABI versions", "basalt version [--json]",
                                 [](po::options_description& d, po::positional_options_description&) {
                                     d.add_options()("json", po::bool_switch(), "print JSON");
                                 },
                                 run_version}};

}  // namespace
}  // namespace basalt::cli
