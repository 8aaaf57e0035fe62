// GGUF element types: block layouts and byte sizes.
#include <catch2/catch.hpp>

#include "model/dtype.hpp"

using basalt::dtype_bytes;
using basalt::dtype_traits;

TEST_CASE("block layouts match the GGUF specification", "[dtype]") {
    struct Expect {
        int32_t id;
        const char* name;
        int64_t block;
        size_t bytes;
    };
    const Expect expect[] = {{0, "f32", 1, 4},       {1, "f16", 1, 2},       {30, "bf16", 1, 2},
                             {2, "q4_0", 32, 18},    {3, "q4_1", 32, 20},    {6, "q5_0", 32, 22},
                             {7, "q5_1", 32, 24},    {8, "q8_0", 32, 34},    {10, "q2_k", 256, 84},
                             {11, "q3_k", 256, 110}, {12, "q4_k", 256, 144}, {13, "q5_k", 256, 176},
                             {14, "q6_k", 256, 210}, {15, "q8_k", 256, 292}};
    for (const auto& e : expect) {
        const auto* t = dtype_traits(e.id);
        REQUIRE(t != nullptr);
        CHECK(std::string(t->name) == e.name);
        CHECK(t->block_size == e.block);
        CHECK(t->type_size == e.bytes);
        CHECK(basalt::dtype_from_name(e.name) == t);
    }
    CHECK(dtype_traits(4) == nullptr);  // retired Q4_2
    CHECK(dtype_traits(1000) == nullptr);
    CHECK(std::string(basalt::dtype_name(-1)) == "unknown");
    CHECK(basalt::dtype_from_name("Q8_0") == dtype_traits(8));
}

TEST_CASE("byte sizes are checked for whole blocks and overflow", "[dtype]") {
    CHECK(dtype_bytes(8, 64) == 68u);
    CHECK(dtype_bytes(12, 512) == 288u);
    CHECK_FALSE(dtype_bytes(8, 33).has_value());
    CHECK_FALSE(dtype_bytes(0, UINT64_MAX).has_value());
    CHECK_FALSE(dtype_bytes(99, 1).has_value());
    CHECK(dtype_bytes(0, 0) == 0u);
}
