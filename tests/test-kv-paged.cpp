// kv-paged (component kv_cache 'paged') loaded through the real plugin host and driven through its interface
// table: slot assignment, block boundaries, validation, all-or-nothing capacity errors, visible lists, fork with
// copy on write, drop, truncation, prefix caching with LRU reuse, params/config errors, and a randomized model-based
// test that executes the copies and writes like a host would and checks every sequence still sees its own data.
#include <basalt/basalt.h>
#include <basalt/plugin_kv_cache.h>

#include <algorithm>
#include <map>
#include <numeric>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <catch2/catch.hpp>

#include "host/host-services.hpp"
#include "host/plugin-host.hpp"
#include "support/error.hpp"

using Catch::Matchers::Contains;

namespace {

const basalt_kv_cache_iface& kv() {
    static basalt::PluginHost host;
    static const basalt_kv_cache_iface* iface = [] {
        host.load(BASALT_TEST_KV_PAGED_PLUGIN);
        const basalt::Component* c = host.find(BASALT_COMPONENT_KV_CACHE, "paged");
        REQUIRE(c != nullptr);
        REQUIRE(c->iface_size >= sizeof(basalt_kv_cache_iface));
        return static_cast<const basalt_kv_cache_iface*>(c->iface);
    }();
    return *iface;
}

std::string err() {
    return basalt::plugin_error_message();
}

struct Config {
    uint32_t n_layers = 2;
    uint32_t n_slots = 64;
    uint32_t n_seq_max = 4;
    uint32_t head_dim = 64;
    uint32_t n_batch = 0;
    std::vector<int32_t> windows;
    basalt_kv_cache_config get() const {
        basalt_kv_cache_config c{};
        c.struct_size = sizeof(c);
        c.n_layers = n_layers;
        c.n_kv_heads = 2;
        c.head_dim_k = head_dim;
        c.head_dim_v = head_dim;
        c.n_slots = n_slots;
        c.n_seq_max = n_seq_max;
        c.layer_window = windows.empty() ? nullptr : windows.data();
        c.n_batch = n_batch;
        return c;
    }
};

struct Params {
    std::vector<const char*> keys, values;
    Params(std::initializer_list<std::pair<const char*, const char*>> kv_pairs = {}) {
        for (auto& [k, v] : kv_pairs) {
            keys.push_back(k);
            values.push_back(v);
        }
    }
    basalt_params get() const {
        basalt_params p{};
        p.struct_size = sizeof(p);
        p.count = keys.size();
        p.keys = keys.data();
        p.values = values.data();
        return p;
    }
};

basalt_status try_create(const Config& cfg, const Params& params, void** out) {
    const basalt_kv_cache_config c = cfg.get();
    const basalt_params p = params.get();
    basalt::clear_plugin_error();
    return kv().create(basalt::host_services(), &c, &p, out);
}

// A batch of new tokens: (seq, position, token) triples in batch order.
struct Batch {
    std::vector<int32_t> tokens, positions, seqs;
    Batch& add(int32_t seq, int32_t pos, int32_t token) {
        seqs.push_back(seq);
        positions.push_back(pos);
        tokens.push_back(token);
        return *this;
    }
    // n tokens of seq at positions from..from+n-1, token ids base+position.
    Batch& run(int32_t seq, int32_t from, int32_t n, int32_t base = 1000) {
        for (int32_t i = 0; i < n; ++i) add(seq, from + i, base + from + i);
        return *this;
    }
};

struct Reserved {
    basalt_status status = BASALT_OK;
    std::vector<int32_t> slots;
    std::vector<basalt_kv_copy> copies;
    size_t n_copies = 0;
    std::vector<int32_t> window_slots;
    std::vector<basalt_kv_copy> window_copies;
    size_t n_window_copies = 0;
};

using SlotPos = std::vector<std::pair<int32_t, int32_t>>;

struct Cache {
    void* c = nullptr;
    explicit Cache(const Config& cfg = {}, const Params& params = {}) {
        REQUIRE(try_create(cfg, params, &c) == BASALT_OK);
    }
    Cache(uint32_t n_slots, uint32_t n_seq_max, uint32_t block_size) {
        Config cfg;
        cfg.n_slots = n_slots;
        cfg.n_seq_max = n_seq_max;
        const std::string bs = std::to_string(block_size);
        REQUIRE(try_create(cfg, Params{{"block_size", bs.c_str()}}, &c) == BASALT_OK);
    }
    ~Cache() { kv().destroy(c); }
    Cache(const Cache&) = delete;
    Cache& operator=(const Cache&) = delete;

    Reserved reserve(const Batch& b, size_t copies_capacity = 8, bool with_tokens = true) {
        Reserved out;
        out.slots.assign(b.seqs.size(), -7);
        out.copies.assign(copies_capacity, basalt_kv_copy{-7, -7, -7});
        basalt_kv_reservation r{};
        r.struct_size = sizeof(r);
        r.n_tokens = b.seqs.size();
        r.tokens = with_tokens ? b.tokens.data() : nullptr;
        r.positions = b.positions.data();
        r.seq_ids = b.seqs.data();
        r.out_slots = out.slots.data();
        r.out_copies = out.copies.data();
        r.copies_capacity = copies_capacity;
        r.out_n_copies = 12345;
        out.window_slots.assign(b.seqs.size(), -7);
        out.window_copies.assign(window_copies_capacity, basalt_kv_copy{-7, -7, -7});
        r.out_window_slots = out.window_slots.data();
        r.out_window_copies = out.window_copies.data();
        r.window_copies_capacity = window_copies_capacity;
        r.out_n_window_copies = 12345;
        basalt::clear_plugin_error();
        out.status = kv().reserve(c, &r);
        out.n_copies = r.out_n_copies;
        out.n_window_copies = r.out_n_window_copies;
        if (out.status == BASALT_OK) {
            out.copies.resize(r.out_n_copies);
            out.window_copies.resize(r.out_n_window_copies);
        }
        return out;
    }
    size_t window_copies_capacity = 8;
    SlotPos visible(int32_t seq, uint32_t layer = 0) {
        size_t count = 99;
        basalt_status st = kv().visible(c, seq, layer, nullptr, nullptr, 0, &count);
        if (count == 0) {
            REQUIRE(st == BASALT_OK);
            return {};
        }
        REQUIRE(st == BASALT_ERR_CAPACITY);
        std::vector<int32_t> slots(count), pos(count);
        size_t n = 0;
        REQUIRE(kv().visible(c, seq, layer, slots.data(), pos.data(), count, &n) == BASALT_OK);
        REQUIRE(n == count);
        SlotPos out;
        for (size_t i = 0; i < n; ++i) out.emplace_back(slots[i], pos[i]);
        return out;
    }
    std::vector<int32_t> slots(int32_t seq) {
        std::vector<int32_t> out;
        for (auto& sp : visible(seq)) out.push_back(sp.first);
        return out;
    }
    size_t free() const { return kv().free_slots(c); }
    basalt_status fork(int32_t src, int32_t dst) {
        basalt::clear_plugin_error();
        return kv().seq_fork(c, src, dst);
    }
    basalt_status drop(int32_t seq) {
        basalt::clear_plugin_error();
        return kv().seq_drop(c, seq);
    }
    basalt_status truncate(int32_t seq, uint32_t n_keep) {
        basalt::clear_plugin_error();
        return kv().seq_truncate(c, seq, n_keep);
    }
    basalt_status attach(int32_t seq, const std::vector<int32_t>& tokens, size_t* matched) {
        basalt::clear_plugin_error();
        return kv().prefix_attach(c, seq, tokens.data(), tokens.size(), matched);
    }
    size_t attach_ok(int32_t seq, const std::vector<int32_t>& tokens) {
        size_t m = 999;
        REQUIRE(attach(seq, tokens, &m) == BASALT_OK);
        return m;
    }
};

std::vector<int32_t> iota(int32_t from, int32_t n) {
    std::vector<int32_t> v(static_cast<size_t>(n));
    std::iota(v.begin(), v.end(), from);
    return v;
}

std::vector<int32_t> token_run(int32_t from, int32_t n, int32_t base = 1000) {
    return iota(base + from, n);
}

SlotPos positions_in_order(const std::vector<int32_t>& slots) {
    SlotPos out;
    for (size_t i = 0; i < slots.size(); ++i) out.emplace_back(slots[i], static_cast<int32_t>(i));
    return out;
}

}  // namespace

TEST_CASE("kv-paged loads as kv_cache 'paged' and reports its layout", "[kv-paged]") {
    const basalt_kv_cache_iface& t = kv();
    CHECK(t.prefix_attach != nullptr);
    CHECK(t.free_slots != nullptr);
    CHECK(t.seq_truncate != nullptr);

    Cache dflt;
    basalt_kv_cache_layout l{};
    l.struct_size = sizeof(l);
    REQUIRE(kv().layout(dflt.c, &l) == BASALT_OK);
    CHECK(l.k_type == BASALT_DTYPE_F16);
    CHECK(l.v_type == BASALT_DTYPE_F16);
    CHECK(l.block_size == 16);
    CHECK(dflt.free() == 64);

    Cache custom(Config{}, Params{{"block_size", "8"}, {"k_type", "q8_0"}, {"v_type", "f32"}});
    REQUIRE(kv().layout(custom.c, &l) == BASALT_OK);
    CHECK(l.k_type == BASALT_DTYPE_Q8_0);
    CHECK(l.v_type == BASALT_DTYPE_F32);
    CHECK(l.block_size == 8);

    // an older, smaller layout struct: nothing past its struct_size is written
    basalt_kv_cache_layout small{};
    small.struct_size = offsetof(basalt_kv_cache_layout, v_type);
    small.v_type = -1;
    small.block_size = 777;
    REQUIRE(kv().layout(custom.c, &small) == BASALT_OK);
    CHECK(small.k_type == BASALT_DTYPE_Q8_0);
    CHECK(small.v_type == -1);
    CHECK(small.block_size == 777);

    // n_slots that is not a multiple of an explicit block_size: the trailing partial block is not used
    Config odd;
    odd.n_slots = 30;
    Cache rounded(odd, Params{{"block_size", "8"}});
    CHECK(rounded.free() == 24);

    // without block_size the manager picks the largest divisor of n_slots up to 16: every slot stays usable
    for (auto [n_slots, expected] : {std::pair{30u, 15u}, {10u, 10u}, {101u, 1u}, {4096u, 16u}, {100u, 10u}}) {
        Config cfg;
        cfg.n_slots = n_slots;
        Cache picked(cfg);
        REQUIRE(kv().layout(picked.c, &l) == BASALT_OK);
        CHECK(l.block_size == expected);
        CHECK(picked.free() == n_slots);
    }
}

TEST_CASE("kv-paged assigns slots to a ragged batch of several sequences", "[kv-paged]") {
    Cache c(32, 4, 4);  // 8 blocks of 4
    REQUIRE(c.free() == 32);
    Batch b;
    b.add(0, 0, 10).add(1, 0, 20).add(1, 1, 21).add(0, 1, 11).add(2, 0, 30).add(1, 2, 22).add(1, 3, 23);
    b.add(0, 2, 12).add(1, 4, 24);
    Reserved r = c.reserve(b);
    REQUIRE(r.status == BASALT_OK);
    CHECK(r.n_copies == 0);
    // blocks are taken in order of each sequence's first appearance, ascending ids
    CHECK(r.slots == std::vector<int32_t>{0, 4, 5, 1, 12, 6, 7, 2, 8});
    CHECK(c.free() == 32 - 4 * 4);  // seq 0: 1 block, seq 1: 2 blocks, seq 2: 1 block
    CHECK(c.visible(0) == SlotPos{{0, 0}, {1, 1}, {2, 2}});
    CHECK(c.visible(1) == SlotPos{{4, 0}, {5, 1}, {6, 2}, {7, 3}, {8, 4}});
    CHECK(c.visible(2) == SlotPos{{12, 0}});
    CHECK(c.visible(3).empty());

    // the next decode step continues each sequence in its partial block
    Reserved d = c.reserve(Batch().add(2, 1, 31).add(0, 3, 13).add(1, 5, 25));
    REQUIRE(d.status == BASALT_OK);
    CHECK(d.slots == std::vector<int32_t>{13, 3, 9});
    CHECK(c.free() == 16);

    // an empty batch is fine and changes nothing
    Reserved e = c.reserve(Batch());
    CHECK(e.status == BASALT_OK);
    CHECK(e.n_copies == 0);
    CHECK(c.free() == 16);
}

TEST_CASE("kv-paged takes a new block exactly at each block boundary", "[kv-paged]") {
    Cache c(40, 2, 4);  // 10 blocks
    std::vector<int32_t> seen;
    for (int32_t pos = 0; pos < 13; ++pos) {
        Reserved r = c.reserve(Batch().add(0, pos, 500 + pos));
        REQUIRE(r.status == BASALT_OK);
        seen.push_back(r.slots[0]);
        const size_t blocks_used = static_cast<size_t>(pos / 4 + 1);
        CHECK(c.free() == 40 - blocks_used * 4);
        if (pos % 4 != 0) CHECK(r.slots[0] == seen[static_cast<size_t>(pos - 1)] + 1);  // same block, next slot
        CHECK(r.slots[0] % 4 == pos % 4);
    }
    CHECK(c.visible(0) == positions_in_order(seen));
    // a prefill that ends exactly on a boundary takes exactly the blocks it fills
    Reserved p = c.reserve(Batch().run(1, 0, 8));
    REQUIRE(p.status == BASALT_OK);
    CHECK(c.free() == 40 - 4 * 4 - 8);
    CHECK(p.slots[4] % 4 == 0);
}

TEST_CASE("kv-paged validates sequence ids and positions and changes nothing on error", "[kv-paged]") {
    Cache c(32, 3, 4);
    REQUIRE(c.reserve(Batch().run(0, 0, 3).run(1, 0, 5)).status == BASALT_OK);
    const SlotPos v0 = c.visible(0), v1 = c.visible(1);
    const size_t free_before = c.free();
    auto unchanged = [&](const Reserved& r) {
        CHECK(c.visible(0) == v0);
        CHECK(c.visible(1) == v1);
        CHECK(c.visible(2).empty());
        CHECK(c.free() == free_before);
        CHECK(std::all_of(r.slots.begin(), r.slots.end(), [](int32_t s) { return s == -7; }));
        CHECK(r.n_copies == 12345);
    };

    Reserved gap = c.reserve(Batch().add(2, 0, 1).add(0, 4, 1));  // seq 0 holds 3 tokens: next is 3
    CHECK(gap.status == BASALT_ERR_INVALID_ARGUMENT);
    CHECK_THAT(err(), Contains("sequence 0") && Contains("position 4, expected 3"));
    unchanged(gap);

    Reserved again = c.reserve(Batch().add(1, 5, 1).add(1, 5, 2));  // the same position twice
    CHECK(again.status == BASALT_ERR_INVALID_ARGUMENT);
    CHECK_THAT(err(), Contains("sequence 1") && Contains("position 5, expected 6"));
    unchanged(again);

    Reserved back = c.reserve(Batch().add(0, 2, 1));  // rewriting a held position
    CHECK(back.status == BASALT_ERR_INVALID_ARGUMENT);
    CHECK_THAT(err(), Contains("position 2, expected 3"));
    unchanged(back);

    Reserved bad_seq = c.reserve(Batch().add(0, 3, 1).add(3, 0, 1));
    CHECK(bad_seq.status == BASALT_ERR_INVALID_ARGUMENT);
    CHECK_THAT(err(), Contains("sequence id 3") && Contains("n_seq_max 3"));
    unchanged(bad_seq);

    Reserved neg = c.reserve(Batch().add(-1, 0, 1));
    CHECK(neg.status == BASALT_ERR_INVALID_ARGUMENT);
    CHECK_THAT(err(), Contains("sequence id -1"));
    unchanged(neg);

    basalt_kv_reservation null_pos{};
    null_pos.struct_size = sizeof(null_pos);
    null_pos.n_tokens = 1;
    basalt::clear_plugin_error();
    CHECK(kv().reserve(c.c, &null_pos) == BASALT_ERR_INVALID_ARGUMENT);
    CHECK_THAT(err(), Contains("positions is NULL"));
    basalt_kv_reservation tiny{};
    tiny.struct_size = 8;
    CHECK(kv().reserve(c.c, &tiny) == BASALT_ERR_INVALID_ARGUMENT);
    CHECK_THAT(err(), Contains("struct_size 8"));
    unchanged(Reserved{BASALT_OK, {}, {}, 12345, {}, {}, 0});

    // after all these failures the cache still works
    REQUIRE(c.reserve(Batch().add(0, 3, 1).add(2, 0, 1)).status == BASALT_OK);
}

TEST_CASE("kv-paged capacity errors are all or nothing", "[kv-paged]") {
    Cache c(16, 4, 4);                                                          // 4 blocks
    REQUIRE(c.reserve(Batch().run(0, 0, 6).run(1, 0, 2)).status == BASALT_OK);  // 3 blocks
    REQUIRE(c.free() == 4);
    const SlotPos v0 = c.visible(0), v1 = c.visible(1);

    // seq 0 fits in its partial block (2 tokens) and seq 2 fits one block, but seq 1 needs a second block too
    Reserved r = c.reserve(Batch().run(0, 6, 2).run(2, 0, 4).run(1, 2, 3));
    CHECK(r.status == BASALT_ERR_CAPACITY);
    CHECK_THAT(err(), Contains("needs 8 free slots (2 blocks of 4)") && Contains("only 4 slots are free"));
    CHECK(c.free() == 4);
    CHECK(c.visible(0) == v0);
    CHECK(c.visible(1) == v1);
    CHECK(c.visible(2).empty());
    CHECK(r.slots == std::vector<int32_t>(r.slots.size(), -7));

    // the part that fits goes through
    REQUIRE(c.reserve(Batch().run(0, 6, 2).run(2, 0, 4)).status == BASALT_OK);
    CHECK(c.free() == 0);
    CHECK(c.reserve(Batch().add(1, 2, 0)).status == BASALT_OK);  // still room in seq 1's block
    Reserved full = c.reserve(Batch().add(0, 8, 0));
    CHECK(full.status == BASALT_ERR_CAPACITY);
    CHECK_THAT(err(), Contains("only 0 slots are free"));
    CHECK(c.visible(0).size() == 8);
}

TEST_CASE("kv-paged visible lists are in position order and report the size needed", "[kv-paged]") {
    Config cfg;
    cfg.n_slots = 64;
    cfg.n_layers = 3;
    cfg.windows = {0, 4, 0};
    Cache c(cfg, Params{{"block_size", "4"}});
    // interleave two sequences so their blocks alternate in the pool
    for (int32_t step = 0; step < 3; ++step) {
        REQUIRE(c.reserve(Batch().run(0, step * 4, 4).run(1, step * 4, 4)).status == BASALT_OK);
    }
    REQUIRE(c.reserve(Batch().run(0, 12, 2)).status == BASALT_OK);
    const SlotPos v = c.visible(0);
    REQUIRE(v.size() == 14);
    for (size_t i = 0; i < v.size(); ++i) CHECK(v[i].second == static_cast<int32_t>(i));
    CHECK(v[4].first == 8);       // the second block of seq 0 is block 2 (block 1 went to seq 1)
    CHECK(c.visible(0, 1) == v);  // every layer sees the same list; windows are the attention op's business
    CHECK(c.visible(0, 2) == v);

    std::vector<int32_t> slots(20, -3), pos(20, -3);
    size_t count = 0;
    basalt::clear_plugin_error();
    CHECK(kv().visible(c.c, 0, 0, slots.data(), pos.data(), 13, &count) == BASALT_ERR_CAPACITY);
    CHECK(count == 14);
    CHECK_THAT(err(), Contains("sequence 0 has 14 visible slots, but capacity is 13"));
    CHECK(std::all_of(slots.begin(), slots.end(), [](int32_t s) { return s == -3; }));
    CHECK(std::all_of(pos.begin(), pos.end(), [](int32_t s) { return s == -3; }));
    CHECK(kv().visible(c.c, 0, 0, slots.data(), pos.data(), 20, &count) == BASALT_OK);
    CHECK(count == 14);
    CHECK(slots[14] == -3);

    count = 7;
    CHECK(kv().visible(c.c, 0, 3, slots.data(), pos.data(), 20, &count) == BASALT_ERR_INVALID_ARGUMENT);
    CHECK_THAT(err(), Contains("layer 3 is out of range (the cache has 3 layers)"));
    CHECK(count == 7);
    CHECK(kv().visible(c.c, 4, 0, slots.data(), pos.data(), 20, &count) == BASALT_ERR_INVALID_ARGUMENT);
    CHECK_THAT(err(), Contains("sequence id 4 is out of range"));
    CHECK(count == 7);
}

TEST_CASE("kv-paged fork shares blocks and copies a shared partial block on the first write", "[kv-paged]") {
    Cache c(40, 4, 4);                                             // 10 blocks
    REQUIRE(c.reserve(Batch().run(0, 0, 6)).status == BASALT_OK);  // blocks 0 (full) and 1 (2 of 4)
    REQUIRE(c.free() == 32);
    REQUIRE(c.fork(0, 1) == BASALT_OK);
    CHECK(c.free() == 32);  // nothing copied yet
    CHECK(c.visible(1) == c.visible(0));

    SECTION("the first writer copies, the second writes in place") {
        Reserved r1 = c.reserve(Batch().add(1, 6, 7));
        REQUIRE(r1.status == BASALT_OK);
        REQUIRE(r1.n_copies == 1);
        CHECK(r1.copies[0].src_slot == 4);
        CHECK(r1.copies[0].dst_slot == 8);
        CHECK(r1.copies[0].n_slots == 2);
        CHECK(r1.slots[0] == 10);
        CHECK(c.free() == 28);
        CHECK(c.slots(1) == std::vector<int32_t>{0, 1, 2, 3, 8, 9, 10});
        CHECK(c.slots(0) == std::vector<int32_t>{0, 1, 2, 3, 4, 5});

        Reserved r0 = c.reserve(Batch().add(0, 6, 9));
        REQUIRE(r0.status == BASALT_OK);
        CHECK(r0.n_copies == 0);
        CHECK(r0.slots[0] == 6);
        CHECK(c.free() == 28);
        // later writes of either sequence copy nothing
        Reserved more = c.reserve(Batch().run(0, 7, 3).run(1, 7, 3));
        REQUIRE(more.status == BASALT_OK);
        CHECK(more.n_copies == 0);
    }
    SECTION("both writing in one batch: exactly one copy, for the first of them") {
        Reserved r = c.reserve(Batch().add(0, 6, 1).add(1, 6, 2));
        REQUIRE(r.status == BASALT_OK);
        REQUIRE(r.n_copies == 1);
        CHECK(r.copies[0].src_slot == 4);
        CHECK(r.copies[0].n_slots == 2);
        CHECK(r.slots[0] == r.copies[0].dst_slot + 2);  // seq 0 came first: it moved
        CHECK(r.slots[1] == 6);                         // seq 1 kept the original block
    }
    SECTION("three sharers: two copies, then none") {
        REQUIRE(c.fork(0, 2) == BASALT_OK);
        Reserved r = c.reserve(Batch().add(2, 6, 1).add(0, 6, 1).add(1, 6, 1), 2);
        REQUIRE(r.status == BASALT_OK);
        CHECK(r.n_copies == 2);
        CHECK(r.slots[2] == 6);
        CHECK(c.free() == 24);
    }
    SECTION("too few copy entries: CAPACITY with the number needed, no change") {
        Reserved r = c.reserve(Batch().add(1, 6, 7), 0);
        CHECK(r.status == BASALT_ERR_CAPACITY);
        CHECK(r.n_copies == 1);
        CHECK_THAT(err(), Contains("needs 1 copy-on-write copies, but copies_capacity is 0"));
        CHECK(c.free() == 32);
        CHECK(c.visible(1) == c.visible(0));
        Reserved ok = c.reserve(Batch().add(1, 6, 7), 1);
        CHECK(ok.status == BASALT_OK);
        CHECK(ok.n_copies == 1);
    }
    SECTION("forking at a block boundary needs no copy") {
        REQUIRE(c.reserve(Batch().run(0, 6, 2)).status == BASALT_OK);
        REQUIRE(c.fork(0, 2) == BASALT_OK);
        Reserved r = c.reserve(Batch().add(2, 8, 1).add(0, 8, 1));
        REQUIRE(r.status == BASALT_OK);
        CHECK(r.n_copies == 0);
    }
    SECTION("fork errors") {
        CHECK(c.fork(0, 0) == BASALT_ERR_INVALID_ARGUMENT);
        CHECK_THAT(err(), Contains("both sequence 0"));
        CHECK(c.fork(0, 1) == BASALT_ERR_INVALID_ARGUMENT);
        CHECK_THAT(err(), Contains("destination sequence 1 is not empty (holds 6 tokens)"));
        CHECK(c.fork(0, 9) == BASALT_ERR_INVALID_ARGUMENT);
        CHECK_THAT(err(), Contains("sequence id 9 is out of range"));
        CHECK(c.fork(-2, 3) == BASALT_ERR_INVALID_ARGUMENT);
        CHECK(c.visible(3).empty());
        CHECK(c.free() == 32);
    }
}

TEST_CASE("kv-paged drop releases blocks once their last user is gone", "[kv-paged]") {
    Cache c(64, 4, 4);
    const size_t start = c.free();
    REQUIRE(c.reserve(Batch().run(0, 0, 10).run(1, 0, 3)).status == BASALT_OK);
    REQUIRE(c.fork(0, 2) == BASALT_OK);
    REQUIRE(c.reserve(Batch().run(2, 10, 5).run(0, 10, 1)).status == BASALT_OK);
    REQUIRE(c.fork(2, 3) == BASALT_OK);
    const size_t used = start - c.free();
    CHECK(used == 4 * (3 + 1 + 2));  // seq 0: 3 blocks, seq 1: 1, seq 2: its copy + 1 more (seq 3 shares seq 2's)

    REQUIRE(c.drop(0) == BASALT_OK);
    CHECK(c.free() == start - used + 4);  // only seq 0's private last block comes back
    CHECK(c.visible(0).empty());
    REQUIRE(c.drop(2) == BASALT_OK);
    CHECK(c.free() == start - used + 4);  // seq 3 still holds everything seq 2 had
    REQUIRE(c.drop(3) == BASALT_OK);
    REQUIRE(c.drop(1) == BASALT_OK);
    CHECK(c.free() == start);
    CHECK(c.drop(1) == BASALT_OK);  // dropping an empty sequence is a no-op
    CHECK(c.drop(4) == BASALT_ERR_INVALID_ARGUMENT);
    CHECK_THAT(err(), Contains("seq_drop: sequence id 4 is out of range"));
    // a dropped sequence starts again at position 0
    CHECK(c.reserve(Batch().add(0, 1, 0)).status == BASALT_ERR_INVALID_ARGUMENT);
    CHECK(c.reserve(Batch().add(0, 0, 0)).status == BASALT_OK);
}

TEST_CASE("kv-paged prefix_attach reuses full blocks, live or cached, and verifies token ids", "[kv-paged]") {
    Cache c(40, 4, 4);  // 10 blocks
    const std::vector<int32_t> prompt = token_run(0, 10);
    REQUIRE(c.reserve(Batch().run(0, 0, 10)).status == BASALT_OK);
    const std::vector<int32_t> s0 = c.slots(0);

    SECTION("a live sequence's full blocks are shared") {
        CHECK(c.attach_ok(1, prompt) == 8);
        CHECK(c.slots(1) == std::vector<int32_t>(s0.begin(), s0.begin() + 8));
        CHECK(c.free() == 28);  // nothing new taken
        Reserved r = c.reserve(Batch().run(1, 8, 3, 2000));
        REQUIRE(r.status == BASALT_OK);
        CHECK(r.n_copies == 0);
        CHECK(c.free() == 24);
        CHECK(c.slots(0) == s0);
        // a prefix shorter than a block matches nothing; an exact multiple matches it all
        CHECK(c.attach_ok(2, token_run(0, 3)) == 0);
        CHECK(c.visible(2).empty());
        CHECK(c.attach_ok(3, token_run(0, 4)) == 4);
    }
    SECTION("after a drop the blocks stay cached and count as free") {
        REQUIRE(c.drop(0) == BASALT_OK);
        CHECK(c.free() == 40);
        std::vector<int32_t> longer = prompt;
        longer.push_back(77);
        longer.push_back(78);
        CHECK(c.attach_ok(1, longer) == 8);
        CHECK(c.slots(1) == std::vector<int32_t>(s0.begin(), s0.begin() + 8));
        CHECK(c.free() == 32);
        REQUIRE(c.drop(1) == BASALT_OK);
        CHECK(c.free() == 40);
    }
    SECTION("token ids are compared, not only hashes") {
        std::vector<int32_t> other = prompt;
        other[5] = -99;  // second block differs
        CHECK(c.attach_ok(1, other) == 4);
        other[0] = -98;  // first block differs
        CHECK(c.attach_ok(2, other) == 0);
    }
    SECTION("errors") {
        size_t m = 55;
        CHECK(c.attach(0, prompt, &m) == BASALT_ERR_INVALID_ARGUMENT);
        CHECK_THAT(err(), Contains("sequence 0 is not empty (holds 10 tokens)"));
        CHECK(m == 55);
        CHECK(c.attach(7, prompt, &m) == BASALT_ERR_INVALID_ARGUMENT);
        basalt::clear_plugin_error();
        CHECK(kv().prefix_attach(c.c, 1, nullptr, 4, &m) == BASALT_ERR_INVALID_ARGUMENT);
        CHECK(kv().prefix_attach(c.c, 1, prompt.data(), prompt.size(), nullptr) == BASALT_ERR_INVALID_ARGUMENT);
        CHECK(c.visible(1).empty());
        CHECK(c.free() == 28);
    }
    SECTION("a batch without token ids is never matched") {
        REQUIRE(c.reserve(Batch().run(1, 0, 8, 5000), 8, false).status == BASALT_OK);
        REQUIRE(c.drop(1) == BASALT_OK);
        CHECK(c.attach_ok(2, token_run(0, 8, 5000)) == 0);
    }
    SECTION("twin prefixes written independently still chain") {
        // seq 1 writes the same first 8 tokens without attaching, then diverges in its third block
        std::vector<int32_t> twin = token_run(0, 8);
        for (int32_t t : {1, 2, 3, 4}) twin.push_back(t);
        Batch b;
        for (size_t i = 0; i < twin.size(); ++i) b.add(1, static_cast<int32_t>(i), twin[i]);
        REQUIRE(c.reserve(b).status == BASALT_OK);
        REQUIRE(c.drop(0) == BASALT_OK);
        REQUIRE(c.drop(1) == BASALT_OK);
        CHECK(c.attach_ok(2, twin) == 12);
        const std::vector<int32_t> s2 = c.slots(2);
        CHECK(std::vector<int32_t>(s2.begin(), s2.begin() + 8) == std::vector<int32_t>(s0.begin(), s0.begin() + 8));
    }
}

TEST_CASE("kv-paged truncate inside a block keeps the block and writes on in place", "[kv-paged]") {
    Cache c(40, 4, 4);                                              // 10 blocks
    REQUIRE(c.reserve(Batch().run(0, 0, 10)).status == BASALT_OK);  // blocks 0, 1 full, block 2 holds 2
    const std::vector<int32_t> s0 = c.slots(0);
    REQUIRE(c.free() == 28);
    REQUIRE(c.truncate(0, 6) == BASALT_OK);
    CHECK(c.free() == 32);  // block 2 came back, block 1 stays (2 of its 4 kept)
    CHECK(c.visible(0) == positions_in_order(std::vector<int32_t>(s0.begin(), s0.begin() + 6)));
    // the sequence continues at position 6, in place: nothing else holds the block
    CHECK(c.reserve(Batch().add(0, 7, 1)).status == BASALT_ERR_INVALID_ARGUMENT);
    CHECK_THAT(err(), Contains("has position 7, expected 6"));
    Reserved r = c.reserve(Batch().run(0, 6, 5, 3000));
    REQUIRE(r.status == BASALT_OK);
    CHECK(r.n_copies == 0);
    CHECK(r.slots[0] == s0[6]);
    CHECK(r.slots[1] == s0[7]);
    CHECK(c.visible(0).size() == 11);
    CHECK(c.free() == 28);
    // truncating within the last partial block releases nothing
    REQUIRE(c.truncate(0, 9) == BASALT_OK);
    CHECK(c.free() == 28);
    CHECK(c.visible(0).size() == 9);
    // to 0: everything is released and the sequence starts again at position 0
    REQUIRE(c.truncate(0, 0) == BASALT_OK);
    CHECK(c.free() == 40);
    CHECK(c.visible(0).empty());
    CHECK(c.reserve(Batch().run(0, 0, 3)).status == BASALT_OK);
}

TEST_CASE("kv-paged truncate at a block boundary takes a new block on the next write", "[kv-paged]") {
    Cache c(40, 4, 4);
    REQUIRE(c.reserve(Batch().run(0, 0, 10)).status == BASALT_OK);
    const std::vector<int32_t> s0 = c.slots(0);
    REQUIRE(c.truncate(0, 8) == BASALT_OK);
    CHECK(c.free() == 32);
    CHECK(c.slots(0) == std::vector<int32_t>(s0.begin(), s0.begin() + 8));
    Reserved r = c.reserve(Batch().run(0, 8, 1));
    REQUIRE(r.status == BASALT_OK);
    CHECK(r.n_copies == 0);
    CHECK(r.slots[0] % 4 == 0);  // the first slot of a fresh block
    CHECK(c.free() == 28);
    REQUIRE(c.truncate(0, 4) == BASALT_OK);
    CHECK(c.free() == 36);
    CHECK(c.slots(0) == std::vector<int32_t>(s0.begin(), s0.begin() + 4));
}

TEST_CASE("kv-paged truncate of a forked sequence copies the shared block on its next write", "[kv-paged]") {
    Cache c(40, 4, 4);
    REQUIRE(c.reserve(Batch().run(0, 0, 8)).status == BASALT_OK);  // blocks 0 and 1, both full
    const std::vector<int32_t> s0 = c.slots(0);
    REQUIRE(c.fork(0, 1) == BASALT_OK);

    SECTION("the fork is cut back and diverges; the original is untouched") {
        REQUIRE(c.truncate(1, 5) == BASALT_OK);
        CHECK(c.free() == 32);  // block 1 still held by both
        Reserved r = c.reserve(Batch().run(1, 5, 4, 7000));
        REQUIRE(r.status == BASALT_OK);
        REQUIRE(r.n_copies == 1);
        CHECK(r.copies[0].src_slot == s0[4]);
        CHECK(r.copies[0].n_slots == 1);
        CHECK(r.slots[0] == r.copies[0].dst_slot + 1);
        CHECK(c.slots(0) == s0);
        const std::vector<int32_t> s1 = c.slots(1);
        CHECK(std::vector<int32_t>(s1.begin(), s1.begin() + 4) == std::vector<int32_t>(s0.begin(), s0.begin() + 4));
        CHECK(s1[4] == r.copies[0].dst_slot);
        CHECK(c.free() == 24);
        // the original continues in a block of its own (its last block is full)
        Reserved r0 = c.reserve(Batch().run(0, 8, 1));
        REQUIRE(r0.status == BASALT_OK);
        CHECK(r0.n_copies == 0);
    }
    SECTION("the original is cut back: it copies, the fork keeps the block") {
        REQUIRE(c.truncate(0, 6) == BASALT_OK);
        Reserved r = c.reserve(Batch().run(0, 6, 1, 7000));
        REQUIRE(r.status == BASALT_OK);
        REQUIRE(r.n_copies == 1);
        CHECK(r.copies[0].src_slot == s0[4]);
        CHECK(r.copies[0].n_slots == 2);
        CHECK(c.slots(1) == s0);
    }
    SECTION("both cut into the shared block and written in one batch: one copy, the second writes in place") {
        REQUIRE(c.truncate(0, 6) == BASALT_OK);
        REQUIRE(c.truncate(1, 5) == BASALT_OK);
        Reserved r = c.reserve(Batch().add(0, 6, 1).add(1, 5, 2));
        REQUIRE(r.status == BASALT_OK);
        REQUIRE(r.n_copies == 1);
        CHECK(r.copies[0].n_slots == 2);
        CHECK(r.slots[1] == s0[5]);  // seq 1 writes into the original block, now its own
    }
    SECTION("the other sharer is dropped first: the write goes in place") {
        REQUIRE(c.truncate(1, 5) == BASALT_OK);
        REQUIRE(c.drop(0) == BASALT_OK);
        Reserved r = c.reserve(Batch().add(1, 5, 1));
        REQUIRE(r.status == BASALT_OK);
        CHECK(r.n_copies == 0);
        CHECK(r.slots[0] == s0[5]);
    }
}

TEST_CASE("kv-paged truncate keeps the prefix index true to what blocks hold", "[kv-paged]") {
    Cache c(48, 4, 4);  // 12 blocks
    const std::vector<int32_t> orig = token_run(0, 12);
    REQUIRE(c.reserve(Batch().run(0, 0, 12)).status == BASALT_OK);  // 3 full blocks, all registered
    const std::vector<int32_t> s0 = c.slots(0);
    REQUIRE(c.truncate(0, 6) == BASALT_OK);  // block 1 partly kept, block 2 released (cached)
    CHECK(c.free() == 48 - 8);

    SECTION("until the cut block is written it still holds its tokens and may be shared") {
        CHECK(c.attach_ok(1, orig) == 12);
        CHECK(c.slots(1) == s0);
        // seq 0 now shares block 1 with seq 1, so its write copies it away
        Reserved r = c.reserve(Batch().run(0, 6, 2, 5000));
        REQUIRE(r.status == BASALT_OK);
        CHECK(r.n_copies == 1);
        CHECK(c.slots(1) == s0);
        CHECK(c.attach_ok(2, orig) == 12);  // still intact
    }
    SECTION("written in place, the cut block no longer matches its old tokens; refilled, it matches the new ones") {
        Reserved r = c.reserve(Batch().run(0, 6, 1, 5000));  // position 6 gets token 5006 instead of 1006
        REQUIRE(r.status == BASALT_OK);
        CHECK(r.n_copies == 0);
        CHECK(r.slots[0] == s0[6]);
        CHECK(c.attach_ok(1, orig) == 4);  // block 1 holds 1004 1005 5006 1007 now: only block 0 matches
        REQUIRE(c.drop(1) == BASALT_OK);
        std::vector<int32_t> now(orig.begin(), orig.begin() + 6);
        now.push_back(5006);
        now.push_back(5007);
        CHECK(c.attach_ok(1, now) == 4);  // not full yet: not registered
        REQUIRE(c.drop(1) == BASALT_OK);
        REQUIRE(c.reserve(Batch().run(0, 7, 1, 5000)).status == BASALT_OK);  // full again
        CHECK(c.attach_ok(1, now) == 8);
        CHECK(c.slots(1) == std::vector<int32_t>(s0.begin(), s0.begin() + 8));
        REQUIRE(c.drop(1) == BASALT_OK);
        // the released block 2 was linked to block 1's old contents: no chain reaches it any more
        std::vector<int32_t> longer = now;
        longer.insert(longer.end(), orig.begin() + 8, orig.end());
        CHECK(c.attach_ok(2, longer) == 8);
        CHECK(c.attach_ok(3, orig) == 4);
    }
    SECTION("the same tokens written again make the same prefix") {
        REQUIRE(c.reserve(Batch().run(0, 6, 2)).status == BASALT_OK);  // 1006, 1007 as before
        // block 1 is registered again; block 2 was linked to it before the overwrite and stays unreachable
        // (conservative: it would hold the right K/V here, but the index cannot know the rewrite was the same)
        CHECK(c.attach_ok(1, orig) == 8);
        CHECK(c.slots(1) == std::vector<int32_t>(s0.begin(), s0.begin() + 8));
    }
    SECTION("errors name the length and the request, and change nothing") {
        CHECK(c.truncate(0, 7) == BASALT_ERR_INVALID_ARGUMENT);
        CHECK_THAT(err(), Contains("seq_truncate: sequence 0 holds 6 tokens, so it cannot keep 7"));
        CHECK(c.truncate(4, 0) == BASALT_ERR_INVALID_ARGUMENT);
        CHECK_THAT(err(), Contains("seq_truncate: sequence id 4 is out of range"));
        CHECK(c.truncate(-1, 0) == BASALT_ERR_INVALID_ARGUMENT);
        CHECK(c.truncate(0, 6) == BASALT_OK);  // no-op
        CHECK(c.free() == 48 - 8);
        CHECK(c.truncate(3, 0) == BASALT_OK);  // an empty sequence kept at 0: no-op
        CHECK(c.slots(0) == std::vector<int32_t>(s0.begin(), s0.begin() + 6));
    }
}

TEST_CASE("kv-paged truncate into a twin block: what follows its rewrite never chains to the twin", "[kv-paged]") {
    Cache c(48, 4, 4);
    const std::vector<int32_t> orig = token_run(0, 8);
    REQUIRE(c.reserve(Batch().run(0, 0, 8)).status == BASALT_OK);  // registered blocks
    REQUIRE(c.reserve(Batch().run(1, 0, 8)).status == BASALT_OK);  // the same tokens again: twins of seq 0's
    REQUIRE(c.truncate(1, 6) == BASALT_OK);
    REQUIRE(c.reserve(Batch().run(1, 6, 2, 9000), 8, false).status == BASALT_OK);  // rewritten, ids unknown
    std::vector<int32_t> tail = token_run(8, 4, 3000);
    REQUIRE(c.reserve(Batch().run(1, 8, 4, 3000)).status == BASALT_OK);  // a full block after the unknown ids
    // Seq 1's third block was computed after two unknown tokens, not after orig[6..8): a prefix of orig and its
    // tokens must not reach it through seq 0's blocks.
    std::vector<int32_t> query = orig;
    query.insert(query.end(), tail.begin(), tail.end());
    CHECK(c.attach_ok(2, query) == 8);
    const std::vector<int32_t> s0 = c.slots(0);
    CHECK(c.slots(2) == s0);
}

namespace {

// 3 layers, the first two with a window of 4, batches of at most 2 tokens per sequence: rings of 6 rows.
Config ring_config() {
    Config cfg;
    cfg.n_layers = 3;
    cfg.n_slots = 64;
    cfg.n_seq_max = 4;
    cfg.n_batch = 2;
    cfg.windows = {4, 4, 0};
    return cfg;
}

uint32_t window_slots_of(const Cache& c) {
    basalt_kv_cache_layout l{};
    l.struct_size = sizeof(l);
    REQUIRE(kv().layout(c.c, &l) == BASALT_OK);
    return l.n_window_slots;
}

SlotPos ring_pairs(int32_t seq, int32_t from, int32_t to, int32_t ring = 6) {
    SlotPos out;
    for (int32_t p = from; p < to; ++p) out.emplace_back(seq * ring + p % ring, p);
    return out;
}

}  // namespace

TEST_CASE("kv-paged keeps sliding-window layers in rings of window + n_batch rows per sequence", "[kv-paged]") {
    Cache c(ring_config(), Params{{"block_size", "4"}});
    CHECK(window_slots_of(c) == 4 * 6);
    CHECK(c.free() == 64);  // the blocks (full-attention layers) are as without rings

    Reserved r = c.reserve(Batch().run(0, 0, 2).run(1, 0, 2));
    REQUIRE(r.status == BASALT_OK);
    CHECK(r.window_slots == std::vector<int32_t>{0, 1, 6, 7});
    CHECK(r.n_window_copies == 0);
    for (int32_t p = 2; p < 10; p += 2) REQUIRE(c.reserve(Batch().run(0, p, 2)).status == BASALT_OK);
    // seq 0 holds 10 tokens: the ring keeps positions 4..9 (row p % 6), the full layer sees all 10 in blocks
    CHECK(c.visible(0, 0) == ring_pairs(0, 4, 10));
    CHECK(c.visible(0, 1) == ring_pairs(0, 4, 10));
    const SlotPos full = c.visible(0, 2);
    REQUIRE(full.size() == 10);
    for (size_t p = 0; p < full.size(); ++p) CHECK(full[p].second == static_cast<int32_t>(p));
    CHECK(full[4].first == 8);  // block 2 (seq 1 took block 1): block slots, not ring rows
    CHECK(c.visible(1, 0) == ring_pairs(1, 0, 2));
    Reserved next = c.reserve(Batch().run(0, 10, 2));
    REQUIRE(next.status == BASALT_OK);
    CHECK(next.window_slots == std::vector<int32_t>{4, 5});  // overwrites positions 4 and 5, outside every window

    SECTION("a sequence may bring at most n_batch tokens to one reserve") {
        Reserved big = c.reserve(Batch().run(1, 2, 3));
        CHECK(big.status == BASALT_ERR_INVALID_ARGUMENT);
        CHECK_THAT(err(), Contains("sequence 1 has more than 2 tokens in this batch") &&
                              Contains("window ring (6 rows: window 4 + n_batch 2)"));
        CHECK(c.visible(1, 0) == ring_pairs(1, 0, 2));
        CHECK(c.reserve(Batch().run(1, 2, 2).run(2, 0, 2)).status == BASALT_OK);
    }
    SECTION("a reservation without the window fields, or without out_window_slots, is refused") {
        Batch b = Batch().run(1, 2, 1);
        std::vector<int32_t> slots(1);
        basalt_kv_reservation old{};
        old.struct_size = static_cast<uint32_t>(offsetof(basalt_kv_reservation, out_window_slots));
        old.n_tokens = 1;
        old.tokens = b.tokens.data();
        old.positions = b.positions.data();
        old.seq_ids = b.seqs.data();
        old.out_slots = slots.data();
        basalt::clear_plugin_error();
        CHECK(kv().reserve(c.c, &old) == BASALT_ERR_INVALID_ARGUMENT);
        CHECK_THAT(err(), Contains("lacks the window fields") && Contains("rings of 6 rows per sequence"));
        old.struct_size = sizeof(old);
        basalt::clear_plugin_error();
        CHECK(kv().reserve(c.c, &old) == BASALT_ERR_INVALID_ARGUMENT);
        CHECK_THAT(err(), Contains("out_window_slots is NULL for 1 tokens"));
        CHECK(c.visible(1, 0) == ring_pairs(1, 0, 2));
    }
    SECTION("a ring holds no shared prefix: prefix_attach matches nothing") {
        CHECK(c.attach_ok(2, token_run(0, 12)) == 0);
        CHECK(c.visible(2, 2).empty());
    }
}

TEST_CASE("kv-paged rings: only when smaller than the blocks, only with n_batch, written up to struct_size",
          "[kv-paged]") {
    Config cfg = ring_config();
    cfg.n_batch = 0;  // an ABI 1.0 host: no n_batch, so no rings
    CHECK(window_slots_of(Cache(cfg)) == 0);
    cfg = ring_config();
    cfg.n_seq_max = 11;  // 11 rings of 6 rows would not be smaller than 64 slots
    CHECK(window_slots_of(Cache(cfg)) == 0);
    cfg.n_seq_max = 10;
    CHECK(window_slots_of(Cache(cfg)) == 60);
    cfg = ring_config();
    cfg.windows.clear();
    CHECK(window_slots_of(Cache(cfg)) == 0);
    // a 1.0 config struct (no n_batch field): no rings, whatever the memory past it holds
    cfg = ring_config();
    basalt_kv_cache_config small = cfg.get();
    small.struct_size = static_cast<uint32_t>(offsetof(basalt_kv_cache_config, n_batch));
    void* raw = nullptr;
    const basalt_params p = Params{}.get();
    basalt::clear_plugin_error();
    REQUIRE(kv().create(basalt::host_services(), &small, &p, &raw) == BASALT_OK);
    basalt_kv_cache_layout l{};
    l.struct_size = sizeof(l);
    l.n_window_slots = 99;
    REQUIRE(kv().layout(raw, &l) == BASALT_OK);
    CHECK(l.n_window_slots == 0);
    // a 1.0 layout struct is written only up to its size
    Cache ringed(ring_config());
    basalt_kv_cache_layout old{};
    old.struct_size = static_cast<uint32_t>(offsetof(basalt_kv_cache_layout, n_window_slots));
    old.n_window_slots = 777;
    REQUIRE(kv().layout(ringed.c, &old) == BASALT_OK);
    CHECK(old.n_window_slots == 777);
    kv().destroy(raw);
}

TEST_CASE("kv-paged rings: a fork copies the source's ring before the next batch's writes", "[kv-paged]") {
    Cache c(ring_config(), Params{{"block_size", "4"}});
    for (int32_t p = 0; p < 5; p += 2) REQUIRE(c.reserve(Batch().run(0, p, std::min(2, 5 - p))).status == BASALT_OK);
    REQUIRE(c.fork(0, 1) == BASALT_OK);
    CHECK(c.visible(1, 0) == ring_pairs(1, 0, 5));  // rows of its own ring, filled by the copy below
    CHECK(c.visible(1, 2) == c.visible(0, 2));      // the blocks are shared

    SECTION("too few window copy entries: CAPACITY with the number needed, nothing changes") {
        c.window_copies_capacity = 0;
        Reserved r = c.reserve(Batch().run(2, 0, 1));
        CHECK(r.status == BASALT_ERR_CAPACITY);
        CHECK(r.n_window_copies == 1);
        CHECK_THAT(err(), Contains("1 window copies (forked sequences' rings) are due"));
        CHECK(c.visible(2, 0).empty());
        c.window_copies_capacity = 8;
    }
    // the next reservation, of whatever sequence, carries the copy; later ones do not
    Reserved r = c.reserve(Batch().run(2, 0, 1));
    REQUIRE(r.status == BASALT_OK);
    REQUIRE(r.n_window_copies == 1);
    CHECK(r.window_copies[0].src_slot == 0);
    CHECK(r.window_copies[0].dst_slot == 6);
    CHECK(r.window_copies[0].n_slots == 6);
    Reserved r1 = c.reserve(Batch().run(1, 5, 1).run(0, 5, 1));
    REQUIRE(r1.status == BASALT_OK);
    CHECK(r1.n_window_copies == 0);
    CHECK(r1.window_slots == std::vector<int32_t>{6 + 5, 5});
    // chained forks are copied in order: 1 -> 3 reads what 0 -> 1 ... wrote
    REQUIRE(c.drop(1) == BASALT_OK);
    REQUIRE(c.fork(0, 1) == BASALT_OK);
    REQUIRE(c.fork(1, 3) == BASALT_OK);
    Reserved r2 = c.reserve(Batch().run(0, 6, 1));
    REQUIRE(r2.status == BASALT_OK);
    REQUIRE(r2.n_window_copies == 2);
    CHECK(r2.window_copies[0].dst_slot == 6);
    CHECK(r2.window_copies[1].src_slot == 6);
    CHECK(r2.window_copies[1].dst_slot == 18);
}

TEST_CASE("kv-paged rings: truncation may not cut back past what the ring still holds", "[kv-paged]") {
    Cache c(ring_config(), Params{{"block_size", "4"}});
    for (int32_t p = 0; p < 10; p += 2) REQUIRE(c.reserve(Batch().run(0, p, 2)).status == BASALT_OK);
    REQUIRE(c.visible(0, 0) == ring_pairs(0, 4, 10));
    // keeping n tokens, the next query (position n) needs positions n-3 .. n-1 (window 4): n >= 7
    CHECK(c.truncate(0, 6) == BASALT_ERR_UNSUPPORTED);
    CHECK_THAT(err(), Contains("ring of 6 rows that now holds positions 4..9") &&
                          Contains("keeping 6 tokens needs positions from 3") && Contains("keep at least 7 tokens"));
    CHECK(c.visible(0, 2).size() == 10);  // nothing changed
    REQUIRE(c.truncate(0, 7) == BASALT_OK);
    CHECK(c.visible(0, 0) == ring_pairs(0, 4, 7));
    CHECK(c.visible(0, 2).size() == 7);
    Reserved r = c.reserve(Batch().run(0, 7, 2, 5000));
    REQUIRE(r.status == BASALT_OK);
    CHECK(r.window_slots == std::vector<int32_t>{1, 2});
    CHECK(c.visible(0, 0) == ring_pairs(0, 4, 9));  // 7 and 8 overwrote positions 1 and 2, long gone
    // cutting back within the last batch always fits; to nothing, too
    REQUIRE(c.truncate(0, 8) == BASALT_OK);
    REQUIRE(c.truncate(0, 0) == BASALT_OK);
    CHECK(c.visible(0, 0).empty());
    REQUIRE(c.reserve(Batch().run(0, 0, 2)).status == BASALT_OK);
    CHECK(c.visible(0, 0) == ring_pairs(0, 0, 2));
}

TEST_CASE("kv-paged evicts cached blocks least recently released first, chain tails first", "[kv-paged]") {
    Cache c(16, 4, 4);  // 4 blocks
    const std::vector<int32_t> a = token_run(0, 8, 100), b = token_run(0, 4, 200);
    Batch ba, bb;
    for (int32_t i = 0; i < 8; ++i) ba.add(0, i, a[static_cast<size_t>(i)]);
    for (int32_t i = 0; i < 4; ++i) bb.add(1, i, b[static_cast<size_t>(i)]);
    REQUIRE(c.reserve(ba).status == BASALT_OK);
    REQUIRE(c.reserve(bb).status == BASALT_OK);
    REQUIRE(c.drop(0) == BASALT_OK);  // cached: a's second block (oldest), then a's first
    REQUIRE(c.drop(1) == BASALT_OK);  // then b's block
    REQUIRE(c.free() == 16);

    SECTION("a clean block first, then the oldest cached") {
        REQUIRE(c.reserve(Batch().run(2, 0, 8, 900)).status == BASALT_OK);  // 2 blocks: clean + a's tail
        CHECK(c.attach_ok(3, a) == 4);
        REQUIRE(c.drop(3) == BASALT_OK);
        REQUIRE(c.drop(2) == BASALT_OK);
        CHECK(c.attach_ok(0, b) == 4);
    }
    SECTION("attaching refreshes nothing but protects the blocks while held") {
        CHECK(c.attach_ok(3, a) == 8);  // a's blocks are in use again
        CHECK(c.free() == 8);
        Reserved r = c.reserve(Batch().run(2, 0, 12, 900));
        CHECK(r.status == BASALT_ERR_CAPACITY);
        CHECK(c.attach_ok(1, b) == 4);  // the failed reservation evicted nothing
        REQUIRE(c.drop(1) == BASALT_OK);
        REQUIRE(c.reserve(Batch().run(2, 0, 8, 900)).status == BASALT_OK);  // takes clean + b
        CHECK(c.attach_ok(1, b) == 0);
        CHECK(c.slots(3).size() == 8);
    }
    SECTION("everything needed: all cached blocks are evicted") {
        REQUIRE(c.reserve(Batch().run(2, 0, 16, 900)).status == BASALT_OK);
        CHECK(c.free() == 0);
        REQUIRE(c.drop(2) == BASALT_OK);
        CHECK(c.attach_ok(0, a) == 0);
        CHECK(c.attach_ok(1, b) == 0);
    }
}

TEST_CASE("kv-paged re-indexes a prefix whose indexed chain lost its parent to eviction", "[kv-paged]") {
    Cache c(16, 4, 4);  // 4 blocks
    const std::vector<int32_t> p = token_run(0, 4, 100);
    std::vector<int32_t> px = p;
    for (int32_t t : token_run(0, 4, 200)) px.push_back(t);
    auto write = [&](int32_t seq, const std::vector<int32_t>& tokens) {
        Batch b;
        for (size_t i = 0; i < tokens.size(); ++i) b.add(seq, static_cast<int32_t>(i), tokens[i]);
        REQUIRE(c.reserve(b).status == BASALT_OK);
    };
    write(0, p);   // block 0 indexes p
    write(1, px);  // block 1 duplicates p, block 2 indexes x after block 0
    REQUIRE(c.drop(0) == BASALT_OK);
    write(2, token_run(0, 8, 300));  // takes the clean block 3 and evicts block 0: x's chain is orphaned
    CHECK(c.attach_ok(3, px) == 0);
    REQUIRE(c.drop(2) == BASALT_OK);
    write(3, px);  // re-indexes p, and x in place of the orphaned block 2
    const std::vector<int32_t> s3 = c.slots(3);
    REQUIRE(c.drop(3) == BASALT_OK);
    CHECK(c.attach_ok(0, px) == 8);
    CHECK(c.slots(0) == s3);
    CHECK(c.slots(1).size() == 8);  // seq 1 kept its blocks throughout
}

TEST_CASE("kv-paged rejects bad params and configs, naming key and value", "[kv-paged]") {
    void* out = reinterpret_cast<void*>(0x1);
    auto rejects = [&](const Config& cfg, const Params& p, const char* text) {
        CHECK(try_create(cfg, p, &out) == BASALT_ERR_INVALID_ARGUMENT);
        CHECK_THAT(err(), Contains(text));
        CHECK(out == reinterpret_cast<void*>(0x1));
    };
    const Config ok;
    rejects(ok, Params{{"blocksize", "8"}}, "unknown parameter 'blocksize'");
    rejects(ok, Params{{"block_size", "0"}}, "'block_size' = '0'");
    rejects(ok, Params{{"block_size", "-4"}}, "'block_size' = '-4'");
    rejects(ok, Params{{"block_size", "65537"}}, "'block_size' = '65537'");
    rejects(ok, Params{{"block_size", "4x"}}, "'block_size' = '4x' is not an integer");
    rejects(ok, Params{{"k_type", "q2_k"}}, "'k_type' = 'q2_k' is not one of f32, f16, q8_0, q4_0, kivi_t8");
    rejects(ok, Params{{"k_type", "kivi_c2"}},
            "k_type 'kivi_c2' quantizes each channel over 32 tokens: it needs a residual window");
    rejects(ok, Params{{"residual", "48"}}, "'residual' = '48'");
    rejects(ok, Params{{"residual", "32"}, {"block_size", "48"}}, "block_size 48 is not a multiple of residual 32");
    rejects(ok, Params{{"v_type", ""}}, "'v_type' = ''");
    CHECK_THAT(err(), Contains("kv_cache 'paged'"));

    Config c = ok;
    c.n_slots = 0;
    rejects(c, {}, "n_slots is 0");
    c = ok;
    c.n_seq_max = 0;
    rejects(c, {}, "n_seq_max is 0");
    c = ok;
    c.n_layers = 0;
    rejects(c, {}, "n_layers is 0");
    c = ok;
    c.windows = {0, -5};
    rejects(c, {}, "layer_window[1] is -5");
    c = ok;
    c.n_slots = 10;
    rejects(c, Params{{"block_size", "16"}}, "n_slots 10 is smaller than block_size 16");
    c = ok;
    c.head_dim = 48;
    rejects(c, Params{{"v_type", "q8_0"}}, "v_type 'q8_0' needs head_dim_v to be a multiple of 32, but it is 48");
    rejects(c, Params{{"v_type", "kivi_t2"}}, "v_type 'kivi_t2' needs head_dim_v to be a multiple of 32");
    c.head_dim = 0;
    rejects(c, {}, "head dimensions must be positive");

    basalt_kv_cache_config small = ok.get();
    small.struct_size = 8;
    basalt::clear_plugin_error();
    CHECK(kv().create(basalt::host_services(), &small, nullptr, &out) == BASALT_ERR_INVALID_ARGUMENT);
    CHECK_THAT(err(), Contains("config struct_size 8 is too small"));
    CHECK(kv().create(basalt::host_services(), nullptr, nullptr, &out) == BASALT_ERR_INVALID_ARGUMENT);
    CHECK(out == reinterpret_cast<void*>(0x1));

    // a residual window is reported in the layout and sets the block size (a unit never straddles blocks)
    {
        Cache res(ok, Params{{"k_type", "kivi_c2"}, {"v_type", "kivi_t4"}, {"residual", "32"}});
        basalt_kv_cache_layout rl{};
        rl.struct_size = sizeof(rl);
        REQUIRE(kv().layout(res.c, &rl) == BASALT_OK);
        CHECK(rl.k_type == BASALT_DTYPE_KIVI_C2);
        CHECK(rl.v_type == BASALT_DTYPE_KIVI_T4);
        CHECK(rl.residual == 32);
        CHECK(rl.block_size == 32);
    }

    // windows are accepted (they apply in the attention op) and the last value of a repeated key wins
    c = ok;
    c.windows = {0, 4096};
    Cache win(c, Params{{"block_size", "4"}, {"block_size", "8"}});
    basalt_kv_cache_layout l{};
    l.struct_size = sizeof(l);
    REQUIRE(kv().layout(win.c, &l) == BASALT_OK);
    CHECK(l.block_size == 8);
    kv().destroy(nullptr);
}

namespace {

// Reference model for the randomized test: per sequence the token ids and the "write ids" it must see. The test
// plays host: it keeps a fake K/V store (token id, write id and the writer's whole prefix per slot: real K/V
// depend on every earlier token), executes the copies before the writes, and after every operation checks that
// each sequence sees exactly its own history through visible().
struct ModelTest {
    struct Cell {
        int32_t token = -1;
        uint64_t write = 0;
        uint64_t context = 0;  // hash of the writer's tokens at positions 0..p (unknown ids count as -1)
        bool operator==(const Cell&) const = default;
    };
    struct Seq {
        std::vector<int32_t> tokens;
        std::vector<uint64_t> writes;
        std::vector<uint64_t> contexts;
    };
    static uint64_t extend(uint64_t context, int32_t token) {
        return (context ^ static_cast<uint64_t>(static_cast<uint32_t>(token) + 2u)) * 0x100000001b3ULL + 0x9e37ULL;
    }

    uint32_t bs, n_blocks, n_seq;
    uint32_t window, n_batch;  // window > 0: layer 1 slides over `window` positions, in rings when they fit
    Cache cache;
    uint32_t ring;  // rows per sequence of the window storage (0: none)
    std::vector<Cell> store;
    std::vector<Cell> wstore;                  // the window layer's rows
    std::vector<basalt_kv_copy> ring_pending;  // forks' ring copies the next successful reserve must return
    std::vector<Seq> seqs;
    std::vector<std::vector<int32_t>> history;  // token lists of dropped sequences, for prefix_attach
    std::mt19937 rng;
    uint64_t next_write = 1;
    size_t attached_tokens = 0, copies_seen = 0, capacity_errors = 0, evictions_forced = 0, truncated_tokens = 0;
    size_t ring_copies_seen = 0, truncations_refused = 0, shared_cut_writes = 0;

    static Config config(uint32_t n_slots, uint32_t sequences, uint32_t window, uint32_t n_batch) {
        Config cfg;
        cfg.n_slots = n_slots;
        cfg.n_seq_max = sequences;
        if (window > 0) {
            cfg.windows = {0, static_cast<int32_t>(window)};
            cfg.n_batch = n_batch;
        }
        return cfg;
    }

    ModelTest(uint32_t block_size, uint32_t blocks, uint32_t extra, uint32_t sequences, uint32_t seed,
              uint32_t window_ = 0, uint32_t n_batch_ = 0)
        : bs(block_size),
          n_blocks(blocks),
          n_seq(sequences),
          window(window_),
          n_batch(n_batch_),
          cache(config(blocks * block_size + extra, sequences, window_, n_batch_),
                Params{{"block_size", std::to_string(block_size).c_str()}}),
          ring(window_slots_of(cache) / sequences),
          store(blocks * block_size + extra),
          wstore(static_cast<size_t>(ring) * sequences),
          seqs(sequences),
          rng(seed) {}

    uint32_t rand(uint32_t n) { return std::uniform_int_distribution<uint32_t>(0, n - 1)(rng); }
    int32_t token() { return static_cast<int32_t>(rand(2)); }  // tiny vocabulary: prefixes repeat often

    // Blocks held by live sequences -> number of sequences holding each.
    std::map<int32_t, int> holders() {
        std::map<int32_t, int> h;
        for (uint32_t s = 0; s < n_seq; ++s) {
            std::set<int32_t> mine;
            for (auto& [slot, pos] : cache.visible(static_cast<int32_t>(s)))
                mine.insert(slot / static_cast<int32_t>(bs));
            for (int32_t b : mine) ++h[b];
        }
        return h;
    }

    void check() {
        std::map<int32_t, std::pair<uint32_t, int32_t>> owner;  // slot -> (seq, position) of a first holder
        for (uint32_t s = 0; s < n_seq; ++s) {
            const SlotPos v = cache.visible(static_cast<int32_t>(s));
            const Seq& m = seqs[s];
            REQUIRE(v.size() == m.tokens.size());
            for (size_t p = 0; p < v.size(); ++p) {
                const auto [slot, pos] = v[p];
                REQUIRE(pos == static_cast<int32_t>(p));
                REQUIRE(slot >= 0);
                REQUIRE(static_cast<uint32_t>(slot) < n_blocks * bs);
                REQUIRE(store[static_cast<size_t>(slot)] == (Cell{m.tokens[p], m.writes[p], m.contexts[p]}));
                auto [it, fresh] = owner.emplace(slot, std::make_pair(s, pos));
                if (!fresh) {
                    REQUIRE(it->second.first != s);     // never twice in one sequence
                    REQUIRE(it->second.second == pos);  // shared slots hold the same position
                }
            }
        }
        REQUIRE(cache.free() == (n_blocks - holders().size()) * bs);
        if (ring == 0) return;
        // The window layer sees what the host will hold once the pending fork copies have run.
        std::vector<Cell> w = wstore;
        for (const basalt_kv_copy& cp : ring_pending) {
            for (int32_t j = 0; j < cp.n_slots; ++j)
                w[static_cast<size_t>(cp.dst_slot + j)] = w[static_cast<size_t>(cp.src_slot + j)];
        }
        for (uint32_t s = 0; s < n_seq; ++s) check_ring(s, seqs[s].tokens.size(), w);
    }

    // The window layer's list of s: contiguous positions up to its end, reaching back at least to what a query at
    // position `from` needs, every row holding this sequence's K/V and lying in its own ring.
    void check_ring(uint32_t s, size_t from, const std::vector<Cell>& w) {
        const SlotPos v = cache.visible(static_cast<int32_t>(s), 1);
        const Seq& m = seqs[s];
        const size_t lo = m.tokens.size() - v.size();
        REQUIRE(v.size() <= m.tokens.size());
        REQUIRE(v.size() <= ring);
        REQUIRE(lo <= (from + 1 > window ? from + 1 - window : 0));
        for (size_t i = 0; i < v.size(); ++i) {
            const auto [slot, pos] = v[i];
            REQUIRE(pos == static_cast<int32_t>(lo + i));
            REQUIRE(slot >= static_cast<int32_t>(s * ring));
            REQUIRE(slot < static_cast<int32_t>((s + 1) * ring));
            const size_t p = lo + i;
            REQUIRE(w[static_cast<size_t>(slot)] == (Cell{m.tokens[p], m.writes[p], m.contexts[p]}));
        }
    }

    void do_reserve() {
        // a ragged batch: a few sequences, a few tokens each, randomly interleaved
        std::vector<int32_t> order;
        const uint32_t k = 1 + rand(std::min(n_seq, 3u));
        std::vector<uint32_t> ids(n_seq);
        std::iota(ids.begin(), ids.end(), 0u);
        std::shuffle(ids.begin(), ids.end(), rng);
        for (uint32_t i = 0; i < k; ++i) {
            uint32_t n = 1 + rand(bs * 2 + 1);
            if (ring != 0) n = std::min(n, n_batch);  // the rings hold one batch of at most n_batch per sequence
            for (uint32_t j = 0; j < n; ++j) order.push_back(static_cast<int32_t>(ids[i]));
        }
        std::shuffle(order.begin(), order.end(), rng);
        Batch b;
        std::map<int32_t, int32_t> next;
        for (int32_t s : order) {
            int32_t& pos =
                next.try_emplace(s, static_cast<int32_t>(seqs[static_cast<size_t>(s)].tokens.size())).first->second;
            b.add(s, pos++, token());
        }
        const bool with_tokens = rand(20) != 0;
        const bool corrupt = rand(12) == 0;
        if (corrupt) {
            const size_t i = rand(static_cast<uint32_t>(order.size()));
            if (rand(2) == 0) {
                b.positions[i] += 1 + static_cast<int32_t>(rand(3));
            } else {
                b.seqs[i] = static_cast<int32_t>(n_seq);
            }
        }

        // expected blocks and copies, simulating the order in which sequences first appear
        auto held = holders();
        const size_t free_before = cache.free();
        size_t need = 0, copies = 0;
        std::vector<int32_t> firsts;
        for (int32_t s : order) {
            if (std::find(firsts.begin(), firsts.end(), s) == firsts.end()) firsts.push_back(s);
        }
        for (int32_t s : firsts) {
            const size_t len = seqs[static_cast<size_t>(s)].tokens.size();
            const size_t added = static_cast<size_t>(std::count(order.begin(), order.end(), s));
            need += (len + added + bs - 1) / bs - (len + bs - 1) / bs;
            if (len % bs != 0) {
                const int32_t last = cache.visible(s).back().first / static_cast<int32_t>(bs);
                if (held[last] > 1) {
                    --held[last];
                    ++need;
                    ++copies;
                }
            }
        }
        const size_t capacity = rand(4) == 0 ? rand(2) : 8;
        cache.window_copies_capacity = rand(4) == 0 ? rand(2) : 8;
        std::vector<size_t> lengths_before(n_seq);
        for (uint32_t s = 0; s < n_seq; ++s) lengths_before[s] = seqs[s].tokens.size();

        // slots every sequence sees before the batch: newly written slots must be private to their writer
        std::vector<std::set<int32_t>> before(n_seq);
        for (uint32_t s = 0; s < n_seq; ++s) {
            for (auto& sp : cache.visible(static_cast<int32_t>(s))) before[s].insert(sp.first);
        }

        Reserved r = cache.reserve(b, capacity, with_tokens);
        if (corrupt) {
            REQUIRE(r.status == BASALT_ERR_INVALID_ARGUMENT);
            REQUIRE(cache.free() == free_before);
            return;
        }
        if (need * bs > free_before) {
            REQUIRE(r.status == BASALT_ERR_CAPACITY);
            REQUIRE(cache.free() == free_before);
            ++capacity_errors;
            return;
        }
        if (copies > capacity) {
            REQUIRE(r.status == BASALT_ERR_CAPACITY);
            REQUIRE(r.n_copies == copies);
            REQUIRE(cache.free() == free_before);
            ++capacity_errors;
            return;
        }
        if (ring_pending.size() > cache.window_copies_capacity) {
            REQUIRE(r.status == BASALT_ERR_CAPACITY);
            REQUIRE(r.n_window_copies == ring_pending.size());
            REQUIRE(cache.free() == free_before);
            ++capacity_errors;
            return;
        }
        REQUIRE(r.status == BASALT_OK);
        if (ring != 0) {
            // window copies first (in fork order), exactly the forks' rings
            REQUIRE(r.window_copies.size() == ring_pending.size());
            for (size_t i = 0; i < ring_pending.size(); ++i) {
                const basalt_kv_copy& cp = r.window_copies[i];
                REQUIRE(cp.src_slot == ring_pending[i].src_slot);
                REQUIRE(cp.dst_slot == ring_pending[i].dst_slot);
                REQUIRE(cp.n_slots == ring_pending[i].n_slots);
                for (int32_t j = 0; j < cp.n_slots; ++j)
                    wstore[static_cast<size_t>(cp.dst_slot + j)] = wstore[static_cast<size_t>(cp.src_slot + j)];
            }
            ring_copies_seen += ring_pending.size();
            ring_pending.clear();
        }
        REQUIRE(r.n_copies == copies);
        REQUIRE(cache.free() == free_before - need * bs);
        copies_seen += copies;
        // play host: copies first, then the writes
        for (const basalt_kv_copy& cp : r.copies) {
            REQUIRE(cp.src_slot % static_cast<int32_t>(bs) == 0);
            REQUIRE(cp.dst_slot % static_cast<int32_t>(bs) == 0);
            REQUIRE(cp.n_slots > 0);
            REQUIRE(cp.n_slots < static_cast<int32_t>(bs));
            for (int32_t j = 0; j < cp.n_slots; ++j) {
                store[static_cast<size_t>(cp.dst_slot + j)] = store[static_cast<size_t>(cp.src_slot + j)];
            }
        }
        std::set<int32_t> written;
        for (size_t i = 0; i < order.size(); ++i) {
            const int32_t s = b.seqs[i], slot = r.slots[i];
            REQUIRE(written.insert(slot).second);
            for (uint32_t o = 0; o < n_seq; ++o) {
                if (before[o].count(slot) == 0) continue;
                // Only a block another sequence of this batch copied away from (both were cut back into it to
                // different lengths): the copies run before the writes, and that sequence sees its copy now.
                const int32_t block = slot / static_cast<int32_t>(bs);
                REQUIRE(std::any_of(r.copies.begin(), r.copies.end(), [&](const basalt_kv_copy& cp) {
                    return cp.src_slot / static_cast<int32_t>(bs) == block;
                }));
                REQUIRE(std::find(order.begin(), order.end(), static_cast<int32_t>(o)) != order.end());
                for (auto& sp : cache.visible(static_cast<int32_t>(o))) REQUIRE(sp.first != slot);
                ++shared_cut_writes;
            }
            const int32_t tok = with_tokens ? b.tokens[i] : -1;
            Seq& w = seqs[static_cast<size_t>(s)];
            const uint64_t context = extend(w.contexts.empty() ? 0 : w.contexts.back(), tok);
            w.contexts.push_back(context);
            store[static_cast<size_t>(slot)] = Cell{tok, next_write, context};
            if (ring != 0) wstore[static_cast<size_t>(r.window_slots[i])] = Cell{tok, next_write, context};
            seqs[static_cast<size_t>(s)].tokens.push_back(tok);
            seqs[static_cast<size_t>(s)].writes.push_back(next_write++);
        }
        // every query of the batch finds its window: the first one (at the old length) needs the most
        for (uint32_t s = 0; ring != 0 && s < n_seq; ++s) check_ring(s, lengths_before[s], wstore);
    }

    void do_fork() {
        const auto src = static_cast<int32_t>(rand(n_seq)), dst = static_cast<int32_t>(rand(n_seq));
        const size_t free_before = cache.free();
        const basalt_status st = cache.fork(src, dst);
        if (src == dst || !seqs[static_cast<size_t>(dst)].tokens.empty()) {
            REQUIRE(st == BASALT_ERR_INVALID_ARGUMENT);
        } else {
            REQUIRE(st == BASALT_OK);
            seqs[static_cast<size_t>(dst)] = seqs[static_cast<size_t>(src)];
            const auto r = static_cast<int32_t>(ring);
            if (ring != 0) ring_pending.push_back(basalt_kv_copy{src * r, dst * r, r});
        }
        REQUIRE(cache.free() == free_before);
    }

    void do_drop() {
        const auto s = static_cast<int32_t>(rand(n_seq));
        REQUIRE(cache.drop(s) == BASALT_OK);
        Seq& m = seqs[static_cast<size_t>(s)];
        if (!m.tokens.empty()) history.push_back(m.tokens);
        if (history.size() > 8) history.erase(history.begin());
        m = Seq{};
    }

    void do_truncate() {
        const auto s = static_cast<int32_t>(rand(n_seq));
        Seq& m = seqs[static_cast<size_t>(s)];
        const size_t len = m.tokens.size();
        const size_t free_before = cache.free();
        if (rand(8) == 0) {  // past the end: refused, nothing changes
            REQUIRE(cache.truncate(s, static_cast<uint32_t>(len + 1 + rand(3))) == BASALT_ERR_INVALID_ARGUMENT);
            REQUIRE(cache.free() == free_before);
            return;
        }
        uint32_t n_keep = rand(static_cast<uint32_t>(len) + 1);
        if (ring != 0 && rand(2) == 0) {  // mostly shallow cuts (rejected draft tokens), which the rings allow
            n_keep = static_cast<uint32_t>(len) - rand(std::min<uint32_t>(static_cast<uint32_t>(len), n_batch + 2) + 1);
        }
        const basalt_status st = cache.truncate(s, n_keep);
        if (st == BASALT_ERR_UNSUPPORTED) {
            // only a cut past what the ring still holds may be refused
            REQUIRE(ring != 0);
            const size_t lo = len - cache.visible(s, 1).size();
            REQUIRE(n_keep > 0);
            REQUIRE(lo > (n_keep + 1 > window ? n_keep + 1 - window : 0));
            REQUIRE(cache.free() == free_before);
            ++truncations_refused;
            return;
        }
        REQUIRE(st == BASALT_OK);
        REQUIRE(cache.free() >= free_before);
        if (n_keep < len) history.push_back(m.tokens);  // later queries ask for the tail cut off here
        if (history.size() > 8) history.erase(history.begin());
        m.tokens.resize(n_keep);
        m.writes.resize(n_keep);
        m.contexts.resize(n_keep);
        truncated_tokens += len - n_keep;
    }

    void do_attach() {
        const auto s = static_cast<int32_t>(rand(n_seq));
        Seq& m = seqs[static_cast<size_t>(s)];
        std::vector<int32_t> query;
        const uint32_t pick = rand(3);
        if (pick == 0 && !history.empty()) {
            query = history[rand(static_cast<uint32_t>(history.size()))];
        } else if (pick == 1) {
            query = seqs[rand(n_seq)].tokens;
        }
        const uint32_t extra = rand(bs + 2);
        for (uint32_t i = 0; i < extra; ++i) query.push_back(token());
        if (!query.empty() && rand(4) == 0) query.resize(rand(static_cast<uint32_t>(query.size())));

        size_t matched = 999;
        const size_t free_before = cache.free();
        const basalt_status st = cache.attach(s, query, &matched);
        if (!m.tokens.empty()) {
            REQUIRE(st == BASALT_ERR_INVALID_ARGUMENT);
            REQUIRE(matched == 999);
            return;
        }
        REQUIRE(st == BASALT_OK);
        if (ring != 0) REQUIRE(matched == 0);  // rings hold no shared prefix
        REQUIRE(matched % bs == 0);
        REQUIRE(matched <= query.size());
        REQUIRE(cache.free() <= free_before);
        const SlotPos v = cache.visible(s);
        REQUIRE(v.size() == matched);
        uint64_t context = 0;
        for (size_t p = 0; p < matched; ++p) {
            const Cell& cell = store[static_cast<size_t>(v[p].first)];
            context = extend(context, query[p]);
            REQUIRE(cell.token == query[p]);
            REQUIRE(cell.context == context);  // the attached K/V were computed after exactly these tokens
            m.tokens.push_back(cell.token);
            m.writes.push_back(cell.write);
            m.contexts.push_back(cell.context);
        }
        attached_tokens += matched;
    }

    void run(int steps) {
        check();
        for (int i = 0; i < steps; ++i) {
            const uint32_t op = rand(11);
            if (op < 5) {
                do_reserve();
            } else if (op < 7) {
                do_fork();
            } else if (op < 8) {
                do_drop();
            } else if (op < 9) {
                do_truncate();
            } else {
                do_attach();
            }
            check();
        }
        for (uint32_t s = 0; s < n_seq; ++s) REQUIRE(cache.drop(static_cast<int32_t>(s)) == BASALT_OK);
        REQUIRE(cache.free() == n_blocks * bs);
    }
};

}  // namespace

TEST_CASE("kv-paged randomized reserve/fork/drop/truncate/prefix ops match a reference model", "[kv-paged]") {
    struct Shape {
        uint32_t bs, blocks, extra, seqs;
    };
    const Shape shape = GENERATE(Shape{4, 12, 3, 5}, Shape{1, 24, 0, 4}, Shape{3, 9, 2, 6}, Shape{16, 6, 15, 3});
    const uint32_t seed = GENERATE(1u, 2u, 3u);
    CAPTURE(shape.bs, shape.blocks, shape.extra, shape.seqs, seed);
    ModelTest t(shape.bs, shape.blocks, shape.extra, shape.seqs, seed);
    t.run(1500);
    // the run exercised what it is meant to
    if (shape.bs > 1) CHECK(t.copies_seen > 0);  // with 1-token blocks no block is ever partial
    CHECK(t.attached_tokens > 0);
    CHECK(t.capacity_errors > 0);
    CHECK(t.truncated_tokens > 0);
}

TEST_CASE("kv-paged randomized ops with sliding-window rings match a reference model", "[kv-paged]") {
    struct Shape {
        uint32_t bs, blocks, extra, seqs, window, n_batch;
    };
    const Shape shape = GENERATE(Shape{4, 16, 3, 3, 5, 3}, Shape{1, 40, 0, 4, 3, 2}, Shape{3, 20, 2, 2, 7, 6});
    const uint32_t seed = GENERATE(1u, 2u, 3u);
    CAPTURE(shape.bs, shape.blocks, shape.window, shape.n_batch, seed);
    ModelTest t(shape.bs, shape.blocks, shape.extra, shape.seqs, seed, shape.window, shape.n_batch);
    REQUIRE(t.ring == shape.window + shape.n_batch);
    t.run(1500);
    CHECK(t.ring_copies_seen > 0);
    CHECK(t.truncated_tokens > 0);
    CHECK(t.truncations_refused > 0);
    CHECK(t.capacity_errors > 0);
}
