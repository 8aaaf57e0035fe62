#include "model/quantize-model.hpp"

#include <algorithm>
#include <vector>

#include "model/dequantize.hpp"
#include "model/dtype.hpp"
#include "model/gguf.hpp"
#include "model/quantize.hpp"
#include "support/error.hpp"
#include "support/log.hpp"
#include "support/progress.hpp"

namespace basalt {
namespace {

bool ends_with(const std::string& s, const std::string& suffix) {
    return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// llama_ftype value written to general.file_type for a --pure quantization to `type`.
int32_t file_type_of(basalt_dtype type) {
    switch (type) {
        case BASALT_DTYPE_F32:
            return 0;
        case BASALT_DTYPE_F16:
            return 1;
        case BASALT_DTYPE_Q4_0:
            return 2;
        case BASALT_DTYPE_Q8_0:
            return 7;
        case BASALT_DTYPE_Q4_K:
            return 15;  // Q4_K_M
        case BASALT_DTYPE_Q6_K:
            return 18;
        case BASALT_DTYPE_BF16:
            return 32;
        case BASALT_DTYPE_MXFP4:
            return 38;  // MXFP4_MOE (with --pure every weight matrix is MXFP4)
        default:
            return -1;
    }
}

}  // namespace

bool is_quantizable_weight(const std::string& name, uint32_t n_dims) {
    if (n_dims < 2 || n_dims > 3 || !ends_with(name, "weight")) return false;
    // llama-quantize keeps these F32: norms, MoE routers, learned positions, relative-position biases, BERT's token
    // types and the short convolutions of Gated DeltaNet / SSM layers.
    return !ends_with(name, "_norm.weight") && name.find("ffn_gate_inp.weight") == std::string::npos &&
           name != "position_embd.weight" && name.find("attn_rel_b.weight") == std::string::npos &&
           name != "token_types.weight" && name.find("ssm_conv1d.weight") == std::string::npos;
}

QuantizeReport quantize_model(const std::filesystem::path& in, const std::filesystem::path& out, basalt_dtype type) {
    if (!can_quantize(type) || file_type_of(type) < 0) {
        fail(BASALT_ERR_UNSUPPORTED, "cannot quantize to {} (supported: f32, f16, bf16, q8_0, q4_0, q4_k, q6_k, mxfp4)",
             dtype_name(type));
    }
    const auto src = gguf::open(in);
    const auto& f = src.file;
    QuantizeReport report;
    gguf::Writer w;
    w.set_alignment(f.alignment());
    for (const auto& kv : f.metadata()) {
        w.set(kv.key, kv.value);
        if (kv.key == "general.file_type") {
            w.set_u32("general.file_type", static_cast<uint32_t>(file_type_of(type)));
            if (dtype_traits(type)->quantized) w.set_u32("general.quantization_version", 2);
        }
    }
    std::vector<float> row_f32;
    std::vector<uint8_t> data;
    uint64_t total_in = 0;
    for (const auto& t : f.tensors()) total_in += t.n_bytes;
    total_in = std::max<uint64_t>(total_in, 1);
    progress::report("quantize", 0, total_in);
    for (const auto& t : f.tensors()) {
        if (report.bytes_in != 0) progress::report("quantize", std::min(report.bytes_in, total_in), total_in);
        report.bytes_in += t.n_bytes;
        const uint8_t* bytes = f.tensor_data(t);
        const std::vector<int64_t> ne(t.ne, t.ne + t.n_dims);
        basalt_dtype target = type;
        if (!is_quantizable_weight(t.name, t.n_dims) || t.type == type) {
            w.add_tensor(t.name, t.type, ne, bytes, t.n_bytes);
            report.kept += 1;
            report.bytes_out += t.n_bytes;
            continue;
        }
        if (t.ne[0] % dtype_traits(type)->block_size != 0) {
            target = t.ne[0] % 32 == 0 ? BASALT_DTYPE_Q8_0 : BASALT_DTYPE_F16;
            log::warn("{}: tensor '{}' rows of {} are not whole {} blocks; stored as {}", in.string(), t.name, t.ne[0],
                      dtype_name(type), dtype_name(target));
            report.fallback += 1;
        } else {
            report.quantized += 1;
        }
        if (!can_dequantize(t.type)) {
            fail(BASALT_ERR_UNSUPPORTED, "{}: tensor '{}' has type {}, which cannot be read back to requantize",
                 in.string(), t.name, dtype_name(t.type));
        }
        const int64_t n_rows = static_cast<int64_t>(t.n_elements()) / t.ne[0];
        const uint64_t in_row = *dtype_bytes(t.type, static_cast<uint64_t>(t.ne[0]));
        const uint64_t out_row = *dtype_bytes(target, static_cast<uint64_t>(t.ne[0]));
        data.assign(out_row * static_cast<uint64_t>(n_rows), 0);
        row_f32.resize(static_cast<size_t>(t.ne[0]));
        for (int64_t r = 0; r < n_rows; ++r) {
            dequantize_row(t.type, bytes + in_row * static_cast<uint64_t>(r), row_f32.data(), t.ne[0]);
            quantize_row(target, row_f32.data(), data.data() + out_row * static_cast<uint64_t>(r), t.ne[0]);
        }
        w.add_tensor(t.name, target, ne, data.data(), data.size());
        report.bytes_out += data.size();
    }
    progress::report("quantize", total_in, total_in);
    w.write(out);
    return report;
}

}  // namespace basalt
