#include "graph/arch-table.hpp"

#include "graph/arch.hpp"
#include "support/error.hpp"

namespace basalt {
namespace {

// Adding an architecture: its builder (arch-<name>.cpp, declared in arch.hpp) and one row here. Rows of one name are
// variants told apart by their expert count; the order is the one the unsupported-architecture error lists.
constexpr ArchSpec kArchs[] = {
    {.name = "llama", .label = "llama", .experts = ArchExperts::NONE, .build = build_llama},
    {.name = "qwen2", .label = "qwen2", .build = build_qwen2},
    // Gemma 3 interleaves 5 sliding-window layers with 1 global layer.
    {.name = "gemma3", .label = "gemma3", .build = build_gemma3, .rope_freq_base = 1e6, .sliding_pattern = 6},
    // Learned absolute positions and a plain (ungated) MLP.
    {.name = "gpt2", .label = "gpt2", .build = build_gpt2, .rope = false, .learned_positions = true, .ffn_mats = 2},
    {.name = "llama", .label = "llama with experts", .experts = ArchExperts::REQUIRED, .build = build_moe},
    // Relative position buckets instead of rope.
    {.name = "t5",
     .label = "t5",
     .kind = ArchKind::ENCODER_DECODER,
     .build = build_t5,
     .rope = false,
     .rel_buckets = 32},
    // Llama's block with embedding, residual, attention and logit multipliers (arch-granite.cpp).
    {.name = "granite", .label = "granite", .experts = ArchExperts::NONE, .build = build_granite},
    // Post-norms only and q/k norms over the whole projection; rope on halves; OLMo 2's base 5e5.
    {.name = "olmo2", .label = "olmo2", .experts = ArchExperts::NONE, .build = build_olmo2, .rope_freq_base = 5e5},
    // Not a model: loads for its metadata and directions (the steering-vector plugin reads it).
    {.name = "controlvector", .label = nullptr, .kind = ArchKind::CONTROL_VECTOR},
};

// The facts of an architecture the table does not have.
constexpr ArchSpec kUnknown{.name = "", .label = nullptr};

constexpr bool same_facts(const ArchSpec& a, const ArchSpec& b) {
    return a.kind == b.kind && a.rope == b.rope && a.rope_freq_base == b.rope_freq_base &&
           a.sliding_pattern == b.sliding_pattern && a.learned_positions == b.learned_positions &&
           a.ffn_mats == b.ffn_mats && a.rel_buckets == b.rel_buckets;
}

// read_hparams takes an architecture's facts from its first row: every other row of the name must agree.
constexpr bool variants_agree() {
    for (const ArchSpec& a : kArchs) {
        for (const ArchSpec& b : kArchs) {
            if (std::string_view(a.name) == std::string_view(b.name) && !same_facts(a, b)) return false;
        }
    }
    return true;
}
static_assert(variants_agree(), "rows of one architecture differ in more than label, experts and build");

bool takes(const ArchSpec& row, uint32_t n_expert) {
    switch (row.experts) {
        case ArchExperts::ANY:
            return true;
        case ArchExperts::NONE:
            return n_expert == 0;
        case ArchExperts::REQUIRED:
            return n_expert > 0;
    }
    return false;
}

}  // namespace

std::span<const ArchSpec> arch_table() {
    return kArchs;
}

const ArchSpec& arch_spec(std::string_view name) {
    for (const ArchSpec& row : kArchs) {
        if (name == row.name) return row;
    }
    return kUnknown;
}

bool arch_runnable(std::string_view name) {
    for (const ArchSpec& row : kArchs) {
        if (name == row.name && row.build != nullptr) return true;
    }
    return false;
}

const ArchSpec& arch_builder(const ModelHparams& hp) {
    std::string supported;
    for (const ArchSpec& row : kArchs) {
        if (row.build == nullptr) continue;
        if (hp.arch == row.name && takes(row, hp.n_expert)) return row;
        supported += (supported.empty() ? "" : ", ") + std::string(row.label);
    }
    fail(BASALT_ERR_UNSUPPORTED, "architecture '{}' is not supported (supported: {})", hp.arch, supported);
}

}  // namespace basalt
