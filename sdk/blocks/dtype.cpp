#include <basalt/blocks/dtype.hpp>

#include <cctype>

namespace basalt::blocks {
namespace {

// Block layouts from the GGUF specification (ggml's type_traits). Ids 4, 5, 31-33 and 36-38 are retired.
constexpr DtypeTraits kTypes[] = {
    {0, "f32", 1, 4, false},
    {1, "f16", 1, 2, false},
    {2, "q4_0", 32, 18, true},
    {3, "q4_1", 32, 20, true},
    {6, "q5_0", 32, 22, true},
    {7, "q5_1", 32, 24, true},
    {8, "q8_0", 32, 34, true},
    {9, "q8_1", 32, 36, true},
    {10, "q2_k", 256, 84, true},
    {11, "q3_k", 256, 110, true},
    {12, "q4_k", 256, 144, true},
    {13, "q5_k", 256, 176, true},
    {14, "q6_k", 256, 210, true},
    {15, "q8_k", 256, 292, true},
    {16, "iq2_xxs", 256, 66, true},
    {17, "iq2_xs", 256, 74, true},
    {18, "iq3_xxs", 256, 98, true},
    {19, "iq1_s", 256, 50, true},
    {20, "iq4_nl", 32, 18, true},
    {21, "iq3_s", 256, 110, true},
    {22, "iq2_s", 256, 82, true},
    {23, "iq4_xs", 256, 136, true},
    {24, "i8", 1, 1, false},
    {25, "i16", 1, 2, false},
    {26, "i32", 1, 4, false},
    {27, "i64", 1, 8, false},
    {28, "f64", 1, 8, false},
    {29, "iq1_m", 256, 56, true},
    {30, "bf16", 1, 2, false},
    {34, "tq1_0", 256, 54, true},
    {35, "tq2_0", 256, 66, true},
    {39, "mxfp4", 32, 17, true},
    // Basalt's KV-cache-only KIVI types (ids past GGUF's): 32 values per f16 scale + f16 minimum + b-bit codes.
    {64, "kivi_t8", 32, 36, true},
    {65, "kivi_t4", 32, 20, true},
    {66, "kivi_t2", 32, 12, true},
    {67, "kivi_c8", 32, 36, true},
    {68, "kivi_c4", 32, 20, true},
    {69, "kivi_c2", 32, 12, true},
};

bool iequal(std::string_view a, std::string_view b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i) {
        if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i]))) {
            return false;
        }
    }
    return true;
}

}  // namespace

const DtypeTraits* dtype_traits(int32_t id) noexcept {
    for (const auto& t : kTypes) {
        if (t.id == id) return &t;
    }
    return nullptr;
}

const DtypeTraits* dtype_from_name(std::string_view name) noexcept {
    for (const auto& t : kTypes) {
        if (iequal(t.name, name)) return &t;
    }
    return nullptr;
}

const char* dtype_name(int32_t id) noexcept {
    const DtypeTraits* t = dtype_traits(id);
    return t != nullptr ? t->name : "unknown";
}

std::optional<uint64_t> dtype_bytes(int32_t id, uint64_t n_elements) noexcept {
    const DtypeTraits* t = dtype_traits(id);
    if (t == nullptr) return std::nullopt;
    const auto bs = static_cast<uint64_t>(t->block_size);
    if (n_elements % bs != 0) return std::nullopt;
    const uint64_t blocks = n_elements / bs;
    if (blocks != 0 && t->type_size > UINT64_MAX / blocks) return std::nullopt;
    return blocks * t->type_size;
}

}  // namespace basalt::blocks
