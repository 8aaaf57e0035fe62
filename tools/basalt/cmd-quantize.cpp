// `basalt quantize IN OUT TYPE`: rewrite a model with its weight matrices in another type.
#include <iostream>

#include "cli.hpp"

namespace basalt::cli {
namespace {

int run_quantize(const po::variables_map& vm, const GlobalOptions& /*g*/) {
    int32_t type = 0;
    if (basalt_dtype_from_name(vm["type"].as<std::string>().c_str(), &type) != BASALT_OK) {
        print_error(basalt_last_error());
        return kExitUsage;
    }
    basalt_quantize_report r{};
    r.struct_size = sizeof(r);
    const std::string in = vm["input"].as<std::string>(), out = vm["output"].as<std::string>();
    if (basalt_model_quantize(in.c_str(), out.c_str(), type, &r) != BASALT_OK) {
        print_error(basalt_last_error());
        return kExitError;
    }
    std::cout << "wrote " << out << ": " << r.tensors_quantized << " tensors as " << basalt_dtype_name(type) << ", "
              << r.tensors_fallback << " fallback, " << r.tensors_kept << " kept; " << r.bytes_in << " -> "
              << r.bytes_out << " tensor bytes\n";
    return kExitOk;
}

const Registrar kQuantize{
    Command{"quantize", "rewrite a model's weight matrices in another type", "basalt quantize IN.gguf OUT.gguf TYPE",
            [](po::options_description& d, po::positional_options_description& pos) {
                d.add_options()("input", po::value<std::string>()->required(), "input GGUF")(
                    "output", po::value<std::string>()->required(), "output GGUF")(
                    "type", po::value<std::string>()->required(), "f32, f16, bf16, q8_0, q4_0, q4_k, q6_k, mxfp4");
                pos.add("input", 1).add("output", 1).add("type", 1);
            },
            run_quantize}};

}  // namespace
}  // namespace basalt::cli
