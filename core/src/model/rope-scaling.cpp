#include "model/rope-scaling.hpp"

#include <cmath>

#include "graph/arch-table.hpp"
#include "support/error.hpp"

namespace basalt {
namespace {

// llama.cpp's get_mscale: the YaRN magnitude of a context extension by `scale`.
float yarn_mscale(float scale, float mscale) {
    return scale <= 1.0f ? 1.0f : 0.1f * mscale * std::log(scale) + 1.0f;
}

float finite_key(const gguf::File& f, const std::string& key, float fallback) {
    const auto v = f.get_float(key);
    if (!v) return fallback;
    if (!std::isfinite(*v)) fail(BASALT_ERR_FORMAT, "{}: metadata '{}' = {} is not finite", f.source(), key, *v);
    return static_cast<float>(*v);
}

}  // namespace

RopeScaling read_rope_scaling(const gguf::File& f, const std::string& arch, const ArchSpec& spec,
                              uint32_t n_ctx_train) {
    RopeScaling r;
    if (!spec.rope) return r;
    const std::string A = arch + ".rope.";
    auto refuse = [&r](std::string why) {
        if (r.refusal.empty()) r.refusal = std::move(why);
    };
    // The type: llama.cpp reads "linear" when the key is absent (a factor without a type scales linearly).
    const std::string type = f.get_string(A + "scaling.type").value_or("linear");
    if (type == "none") {
        r.type = RopeScalingType::NONE;
    } else if (type == "linear") {
        r.type = RopeScalingType::LINEAR;
    } else if (type == "yarn") {
        r.type = RopeScalingType::YARN;
    } else if (type == "longrope") {
        r.type = RopeScalingType::LONGROPE;
    } else {
        refuse(
            fmt::format("'{}scaling.type' = '{}' is not a rope scaling Basalt implements (none, linear, yarn, "
                        "longrope)",
                        A, type));
    }
    float factor = finite_key(f, A + "scaling.factor", 0.0f);
    if (!f.find(A + "scaling.factor")) factor = finite_key(f, A + "scale_linear", 0.0f);
    if (factor < 0.0f)
        fail(BASALT_ERR_FORMAT, "{}: metadata '{}scaling.factor' = {} is negative", f.source(), A, factor);
    r.factor = factor == 0.0f ? 1.0f : factor;
    r.freq_scale = factor == 0.0f ? 1.0f : 1.0f / factor;
    if (r.type == RopeScalingType::NONE) r.freq_scale = 1.0f;  // llama.cpp: never scale when the type is none
    r.n_ctx_orig = n_ctx_train;
    if (const auto v = f.get_int(A + "scaling.original_context_length")) {
        if (*v <= 0 || *v > UINT32_MAX) {
            fail(BASALT_ERR_FORMAT, "{}: metadata '{}scaling.original_context_length' = {} is out of range", f.source(),
                 A, *v);
        }
        r.n_ctx_orig = static_cast<uint32_t>(*v);
    }
    if (spec.rope_yarn_keys) {
        r.beta_fast = finite_key(f, A + "scaling.yarn_beta_fast", r.beta_fast);
        r.beta_slow = finite_key(f, A + "scaling.yarn_beta_slow", r.beta_slow);
        r.attn_temp_scale = finite_key(f, arch + ".attention.temperature_scale", 0.0f);
        if (r.attn_temp_scale != 0.0f && r.n_ctx_orig == 0) {
            refuse(fmt::format("'{}.attention.temperature_scale' needs '{}scaling.original_context_length'", arch, A));
        }
    }
    // YaRN's ext factor and magnitude, derived as llama.cpp's context does (the magnitude it cancels in advance is
    // the one ROPE multiplies in: what remains is get_mscale(factor) / (1 + 0.1 ln factor) of single floats).
    if (r.type == RopeScalingType::YARN) {
        r.ext_factor = 1.0f;
        if (r.n_ctx_orig == 0) {
            refuse(fmt::format("yarn needs '{}scaling.original_context_length' or '{}.context_length'", A, arch));
        }
        const float ext_factor = 1.0f / r.freq_scale;
        const float log_mul = spec.rope_yarn_keys ? finite_key(f, A + "scaling.yarn_log_multiplier", 0.0f) : 0.0f;
        float attn = log_mul != 0.0f ? yarn_mscale(ext_factor, 1.0f) / yarn_mscale(ext_factor, log_mul)
                                     : yarn_mscale(ext_factor, 1.0f);
        attn *= 1.0f / (1.0f + 0.1f * std::log(ext_factor));
        r.attn_factor = attn;
    }
    r.attn_factor *= finite_key(f, A + "scaling.attn_factor", 1.0f);
    // Keys llama.cpp v0.5.0 writes but never reads: a value other than the one it uses changes the math it was
    // checked against, so it is refused rather than guessed at.
    const struct {
        const char* key;
        float used;
    } fixed[] = {{"scaling.yarn_ext_factor", r.ext_factor},
                 {"scaling.yarn_attn_factor", 1.0f},
                 {"scaling.yarn_beta_fast", r.beta_fast},
                 {"scaling.yarn_beta_slow", r.beta_slow},
                 {"scaling.yarn_log_multiplier", 0.0f}};
    for (const auto& k : fixed) {
        const std::string name = k.key;
        const bool read =
            spec.rope_yarn_keys && (name == "scaling.yarn_beta_fast" || name == "scaling.yarn_beta_slow" ||
                                    name == "scaling.yarn_log_multiplier");
        if (read || !f.find(A + k.key)) continue;
        const float v = finite_key(f, A + k.key, k.used);
        const bool same = std::string(k.key) == "scaling.yarn_ext_factor" ? (v == k.used || v < 0.0f) : v == k.used;
        if (!same) {
            refuse(fmt::format("'{}{}' = {} differs from the value llama.cpp applies ({}): not implemented", A, k.key,
                               v, k.used));
        }
    }
    if (const float alpha = finite_key(f, A + "scaling.alpha", 0.0f); alpha != 0.0f) {
        refuse(fmt::format("'{}scaling.alpha' = {} (NTK-aware dynamic rope) is not implemented", A, alpha));
    }
    // Frequency factors: Llama 3's (and the proportional form) in rope_freqs.weight; longrope's long/short pair.
    if (f.tensor("rope_freqs.weight") != nullptr) {
        if (spec.rope_freqs) {
            r.freqs = "rope_freqs.weight";
        } else {
            refuse(
                fmt::format("tensor 'rope_freqs.weight' (per-pair rope frequency factors) is not used by the {} "
                            "graph",
                            arch));
        }
    }
    const bool has_long = f.tensor("rope_factors_long.weight") != nullptr;
    const bool has_short = f.tensor("rope_factors_short.weight") != nullptr;
    if (has_long || has_short) {
        if (!spec.rope_longrope) {
            refuse(
                fmt::format("tensors 'rope_factors_long/short.weight' (longrope) are not used by the {} graph", arch));
        } else if (has_long != has_short) {
            refuse("longrope needs both 'rope_factors_long.weight' and 'rope_factors_short.weight'");
        } else {
            r.longrope_tensors = true;
        }
    }
    if (r.type == RopeScalingType::LONGROPE && !spec.rope_longrope) {
        refuse(fmt::format("'{}scaling.type' = 'longrope' is not implemented for {}", A, arch));
    }
    if (spec.rope_swa_base) r.freq_base_swa = finite_key(f, A + "freq_base_swa", 1e4f);
    return r;
}

std::string describe(const RopeScaling& r, const ArchSpec& spec) {
    if (!spec.rope) return "none (no rotary positions)";
    std::string s;
    const std::string where = spec.rope_swa_base ? " on global layers" : "";
    switch (r.type) {
        case RopeScalingType::NONE:
            s = "none";
            break;
        case RopeScalingType::LINEAR:
            s = r.freq_scale == 1.0f ? "none" : fmt::format("linear x{:g}{}", r.factor, where);
            break;
        case RopeScalingType::YARN:
            s = fmt::format("yarn x{:g}{} (original context {}, beta {:g}/{:g})", r.factor, where, r.n_ctx_orig,
                            r.beta_fast, r.beta_slow);
            break;
        case RopeScalingType::LONGROPE:
            s = "longrope";
            break;
    }
    if (!r.freqs.empty()) s = (s == "none" ? "" : s + ", ") + "frequency factors from rope_freqs.weight";
    if (r.longrope_tensors) {
        s = (s == "none" || s == "longrope" ? "longrope" : s + ", longrope") +
            fmt::format(" factors (long past {} positions, else short)", r.n_ctx_orig);
    }
    if (r.attn_factor != 1.0f) s += fmt::format(", cos/sin x{:g}", r.attn_factor);
    if (spec.rope_swa_base) s += fmt::format("; sliding-window layers unscaled, base {:g}", r.freq_base_swa);
    if (r.attn_temp_scale != 0.0f) {
        s += fmt::format("; attention temperature {:g} past {} positions", r.attn_temp_scale, r.n_ctx_orig);
    }
    return s;
}

}  // namespace basalt
