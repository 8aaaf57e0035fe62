// sdk::plan_intermediates: liveness-based placement, fused chains keeping their inputs alive, aliases.
#include <catch2/catch.hpp>

#include <vector>

#include "basalt/sdk/arena-plan.hpp"

namespace {

// A graph of single-output nodes over tensors 0..n_tensors-1; the tensors in `buffered` have a (fake) buffer.
struct TestGraph {
    struct Node {
        basalt_op op;
        int out;
        std::vector<int> in;
    };
    std::vector<basalt_tensor> t;
    std::vector<const basalt_tensor*> tp;
    std::vector<basalt_graph_node> n;
    std::vector<const basalt_graph_node*> np;
    basalt_graph g{};

    TestGraph(size_t n_tensors, const std::vector<int>& buffered, const std::vector<Node>& nodes)
        : t(n_tensors), n(nodes.size()) {
        for (auto& x : t) x.struct_size = sizeof(basalt_tensor);
        for (int b : buffered) t[static_cast<size_t>(b)].buffer = reinterpret_cast<basalt_buffer*>(&g);
        for (auto& x : t) tp.push_back(&x);
        for (size_t i = 0; i < nodes.size(); ++i) {
            n[i].struct_size = sizeof(basalt_graph_node);
            n[i].op = nodes[i].op;
            n[i].output = nodes[i].out;
            n[i].n_inputs = static_cast<int32_t>(nodes[i].in.size());
            for (size_t k = 0; k < nodes[i].in.size(); ++k) n[i].inputs[k] = nodes[i].in[k];
            np.push_back(&n[i]);
        }
        g.struct_size = sizeof(basalt_graph);
        g.n_tensors = t.size();
        g.tensors = tp.data();
        g.n_nodes = n.size();
        g.nodes = np.data();
    }
};

// x(buffer 0) -> a(2) = ADD(x, x) -> n(3) = RMS_NORM(a) -> m(4) = MUL(n, w(1)) -> y(buffer 5) = ADD(m, m).
TestGraph norm_mul_graph() {
    return TestGraph(6, {0, 1, 5},
                     {{BASALT_OP_ADD, 2, {0, 0}},
                      {BASALT_OP_RMS_NORM, 3, {2}},
                      {BASALT_OP_MUL, 4, {3, 1}},
                      {BASALT_OP_ADD, 5, {4, 4}}});
}

bool overlap(uint64_t a, uint64_t b, uint64_t size) {
    return a < b + size && b < a + size;
}

}  // namespace

TEST_CASE("arena plan: a released range is reused, a fused chain keeps its inputs alive", "[arena-plan]") {
    TestGraph m = norm_mul_graph();
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
    TestGraph m = norm_mul_graph();
    std::swap(m.np[0], m.np[1]);  // the norm now reads a before the ADD writes it
    const auto plan = basalt::sdk::plan_intermediates(&m.g, 16, [](size_t) { return uint64_t{64}; });
    CHECK(plan.bad_node == 0);
    CHECK(plan.bad_input == 0);
}

TEST_CASE("arena plan: an aliased output shares its input's memory, which lives until both are read", "[arena-plan]") {
    // x(buffer 0) -> a(1) = ADD(x, x) -> r(2) = COPY(a) (aliased) -> y(3) = ADD(r, r) -> z(buffer 4) = ADD(y, y)
    TestGraph m(
        5, {0, 4},
        {{BASALT_OP_ADD, 1, {0, 0}}, {BASALT_OP_COPY, 2, {1}}, {BASALT_OP_ADD, 3, {2, 2}}, {BASALT_OP_ADD, 4, {3, 3}}});
    const auto extent = [](size_t) { return uint64_t{512}; };
    const auto plan = basalt::sdk::plan_intermediates(
        &m.g, 16, extent, [](size_t) { return false; }, [](size_t i) { return i == 1 ? int64_t{1} : int64_t{-1}; });
    REQUIRE(plan.bad_node < 0);
    CHECK(plan.offset[2] == plan.offset[1]);
    // y is written while r (= a's memory) is read: they must not overlap.
    CHECK_FALSE(overlap(plan.offset[3], plan.offset[1], 512));
    CHECK(plan.peak == 2 * 512);
    // Without the alias, r gets its own range and a is free again by the time y is placed.
    const auto plain = basalt::sdk::plan_intermediates(&m.g, 16, extent);
    CHECK(plain.offset[2] != plain.offset[1]);
    CHECK(plain.offset[3] == plain.offset[1]);
}
