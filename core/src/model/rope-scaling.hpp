// The RoPE scaling a model's file asks for (`<arch>.rope.scaling.*`, `rope_freqs.weight`, longrope's factor
// tensors), read once with llama.cpp v0.5.0's defaults and derivations, and what the graph builders pass to ROPE.
// A file that asks for rope math Basalt does not implement keeps the reason in `refusal` (check_runnable refuses
// it naming the key); reading never fails for that, so `basalt inspect` can still describe the file.
#pragma once

#include <cstdint>
#include <string>

#include "model/gguf.hpp"

namespace basalt {

struct ArchSpec;

enum class RopeScalingType { NONE, LINEAR, YARN, LONGROPE };

struct RopeScaling {
    RopeScalingType type = RopeScalingType::NONE;
    float factor = 1.0f;       // rope.scaling.factor (or the older rope.scale_linear); 1: none
    float freq_scale = 1.0f;   // 1 / factor for linear and yarn; 1 otherwise (ROPE's freq_scale)
    uint32_t n_ctx_orig = 0;   // rope.scaling.original_context_length, default the training context
    float ext_factor = 0.0f;   // YaRN's ramp mix: 1 for yarn, 0 otherwise
    float attn_factor = 1.0f;  // ROPE's cos/sin magnitude: rope.scaling.attn_factor times YaRN's correction
    float beta_fast = 32.0f;   // YaRN's correction dims (llama.cpp's defaults; the file's keys must agree)
    float beta_slow = 1.0f;
    std::string freqs;              // "rope_freqs.weight" when the file has per-pair frequency factors
    bool longrope_tensors = false;  // rope_factors_long/short.weight are in the file
    float freq_base_swa = 1e4f;     // sliding-window layers' base (rope.freq_base_swa) where the arch has one
    float attn_temp_scale = 0.0f;   // attention.temperature_scale (llama 4, mistral3): q * (1 + s ln(floor(pos /
                                    // n_ctx_orig) + 1)), which is 1 within the original context; 0: none
    std::string refusal;            // non-empty: the rope math the file asks for that Basalt does not implement

    // Whether ROPE needs more than base and freq_scale (factors, YaRN or a magnitude).
    bool needs_scaled_op() const noexcept {
        return !freqs.empty() || longrope_tensors || ext_factor != 0.0f || attn_factor != 1.0f;
    }
};

// Reads the rope scaling of architecture `arch` (its table row `spec`) for a model trained on n_ctx_train
// positions with n_rot rotated dims. Throws only for malformed values (Error(FORMAT) naming the key).
RopeScaling read_rope_scaling(const gguf::File& f, const std::string& arch, const ArchSpec& spec, uint32_t n_ctx_train);

// One line for `basalt inspect`: what sessions apply, e.g. "linear x8 (global layers)", "yarn x32 (orig ctx 4096,
// beta 32/1, attn 1.35)", "llama3 frequency factors (rope_freqs.weight)", "none".
std::string describe(const RopeScaling& r, const ArchSpec& spec);

}  // namespace basalt
