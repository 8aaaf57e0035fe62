// sdk::plan_intermediates: liveness-based placement, and fused chains keeping their inputs alive.
#include <catch2/catch.hpp>

#include <array>
#include <vector>

#include "basalt/sdk/arena-plan.hpp"

namespace {

// A chain x(buffer) -> a = ADD(x, x) -> n = RMS_NORM(a) -> m = MUL(n, w) -> y = ADD(m, m) (y, x, w in buffers).
struct NormMulGraph {
    std::array<basalt_tensor, 6> t{};  // x w a n m y
    std::array<const basalt_tensor*, 6> tp{};
    std::array<basalt_graph_node, 4> n{};
    std::array<const basalt_graph_node*, 4> np{};
    basalt_graph g{};
    basalt_buffer* fake = reinterpret_cast<basalt_buffer*>(&g);  // any non-null pointer: "has a buffer"

    NormMulGraph() {
        for (size_t i = 0; i < t.size(); ++i) {
            t[i].struct_size = sizeof(basalt_tensor);
            tp[i] = &t[i];
        }
        t[0].buffer = fake;
        t[1].buffer = fake;
        t[5].buffer = fake;
        const int ops[4] = {BASALT_OP_ADD, BASALT_OP_RMS_NORM, BASALT_OP_MUL, BASALT_OP_ADD};
        const int io[4][3] = {{2, 0, 0}, {3, 2, 2}, {4, 3, 1}, {5, 4, 4}};  // output, in0, in1
        for (size_t i = 0; i < n.size(); ++i) {
            n[i].struct_size = sizeof(basalt_graph_node);
            n[i].op = ops[i];
            n[i].output = io[i][0];
            n[i].n_inputs = ops[i] == BASALT_OP_RMS_NORM ? 1 : 2;
            n[i].inputs[0] = io[i][1];
            n[i].inputs[1] = io[i][2];
            np[i] = &n[i];
        }
        g.struct_size = sizeof(basalt_graph);
        g.n_tensors = t.size();
        g.tensors = tp.data();
        g.n_nodes = n.size();
        g.nodes = np.data();
    }
};

bool overlap(uint64_t a, uint64_t b, uint64_t size) {
    return a < b + size && b < a + size;
}

}  // namespace

TEST_CASE("arena plan: a released range is reused, a fused chain keeps its inputs alive", "[arena-plan]") {
    NormMulGraph m;
    const auto extent = [](size_t) { return uint64_t{1000}; };
    const auto separate = basalt::sdk::plan_intermediates(&m.g, 16, extent);
    REQUIRE(separate.bad_node < 0);
    // One node per dispatch: a dies at the norm, so the MUL's output takes its place (safe: a separate dispatch).
    CHECK(separate.offset[4] == separate.offset[2]);
    CHECK_FALSE(overlap(separate.offset[3], separate.offset[2], 1008));
    CHECK(separate.peak == 2 * 1008);

    // RMS_NORM and MUL as one dispatch: the MUL's output must not land on the norm's input.
    const auto fused = basalt::sdk::plan_intermediates(&m.g, 16, extent, [](size_t i) { return i == 1; });
    REQUIRE(fused.bad_node < 0);
    CHECK_FALSE(overlap(fused.offset[4], fused.offset[2], 1008));
    CHECK_FALSE(overlap(fused.offset[4], fused.offset[3], 1008));
    CHECK(fused.peak == 3 * 1008);
}

TEST_CASE("arena plan: reading an intermediate before it is written is reported", "[arena-plan]") {
    NormMulGraph m;
    std::swap(m.np[0], m.np[1]);  // the norm now reads a before the ADD writes it
    const auto plan = basalt::sdk::plan_intermediates(&m.g, 16, [](size_t) { return uint64_t{64}; });
    CHECK(plan.bad_node == 0);
    CHECK(plan.bad_input == 0);
}

TEST_CASE("arena plan: an aliased output shares its input's memory, which lives until both are read", "[arena-plan]") {
    // x(buffer) -> a = ADD(x, x) -> r = COPY(a) (aliased: r takes a's memory) -> y = ADD(r, r) -> z(buffer) = ADD(y, y)
    std::array<basalt_tensor, 5> t{};  // x a r y z
    std::array<const basalt_tensor*, 5> tp{};
    basalt_graph g{};
    for (size_t i = 0; i < t.size(); ++i) {
        t[i].struct_size = sizeof(basalt_tensor);
        tp[i] = &t[i];
    }
    t[0].buffer = reinterpret_cast<basalt_buffer*>(&g);
    t[4].buffer = t[0].buffer;
    std::array<basalt_graph_node, 4> n{};
    std::array<const basalt_graph_node*, 4> np{};
    const int ops[4] = {BASALT_OP_ADD, BASALT_OP_COPY, BASALT_OP_ADD, BASALT_OP_ADD};
    const int io[4][3] = {{1, 0, 0}, {2, 1, 1}, {3, 2, 2}, {4, 3, 3}};
    for (size_t i = 0; i < n.size(); ++i) {
        n[i].struct_size = sizeof(basalt_graph_node);
        n[i].op = ops[i];
        n[i].output = io[i][0];
        n[i].n_inputs = ops[i] == BASALT_OP_COPY ? 1 : 2;
        n[i].inputs[0] = io[i][1];
        n[i].inputs[1] = io[i][2];
        np[i] = &n[i];
    }
    g.struct_size = sizeof(basalt_graph);
    g.n_tensors = t.size();
    g.tensors = tp.data();
    g.n_nodes = n.size();
    g.nodes = np.data();
    const auto extent = [](size_t) { return uint64_t{512}; };
    const auto plan = basalt::sdk::plan_intermediates(
        &g, 16, extent, [](size_t) { return false; }, [](size_t i) { return i == 1 ? int64_t{1} : int64_t{-1}; });
    REQUIRE(plan.bad_node < 0);
    CHECK(plan.offset[2] == plan.offset[1]);
    // y is written while r (= a's memory) is read: they must not overlap.
    CHECK_FALSE(overlap(plan.offset[3], plan.offset[1], 512));
    CHECK(plan.peak == 2 * 512);
    // Without the alias, r gets its own range and a is free again by the time y is placed.
    const auto plain = basalt::sdk::plan_intermediates(&g, 16, extent);
    CHECK(plain.offset[2] != plain.offset[1]);
    CHECK(plain.offset[3] == plain.offset[1]);
}
