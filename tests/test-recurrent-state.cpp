// The recurrent-state cache of a hybrid model (tiny-qwen35: Gated DeltaNet layers with per-sequence conv and
// delta-rule state beside the KV cache of its attention layers) through the C API: sequences decoded together in one
// ragged batch equal each decoded alone; a fork continues from a copy of the state; a dropped sequence's slot starts
// from zero again; truncation (other than to 0) is refused naming why. Prefix reuse goes as far as a kept checkpoint
// of the state (state_checkpoint_bytes): bit for bit what the same passes compute without the cache; none without
// a budget; salts, the budget and the memory report hold.
#include <basalt/basalt.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "test-support.hpp"

using Catch::Matchers::Contains;

namespace {

const std::vector<int32_t> kPrompt = {456, 443, 308, 258, 256, 72,  295, 11,  260,
                                      371, 269, 79,  507, 260, 446, 282, 426, 13};

struct Hybrid {
    test::Runtime rt{BASALT_RUNTIME_NO_ENV_PLUGINS};
    basalt_model* model = nullptr;
    basalt_session* session = nullptr;

    explicit Hybrid(uint32_t n_seq, uint32_t n_batch = 0, uint64_t checkpoint_bytes = 0, uint32_t n_ctx = 128) {
        const std::string path = test::golden_model("tiny-qwen35-f32.gguf");
        REQUIRE(basalt_model_load(rt.rt, path.c_str(), nullptr, &model) == BASALT_OK);
        basalt_session_params p{};
        p.struct_size = sizeof(p);
        p.n_ctx = n_ctx;
        p.n_batch = n_batch;
        p.n_seq_max = n_seq;
        p.n_threads = 2;
        p.state_checkpoint_bytes = checkpoint_bytes;
        const basalt_status st = basalt_session_create(rt.rt, model, &p, &session);
        INFO(basalt_last_error());
        REQUIRE(st == BASALT_OK);
    }
    ~Hybrid() {
        basalt_session_free(session);
        basalt_model_free(model);
    }
    Hybrid(const Hybrid&) = delete;
    Hybrid& operator=(const Hybrid&) = delete;

    uint32_t length(int32_t seq) const {
        uint32_t n = 0;
        REQUIRE(basalt_session_seq_length(session, seq, &n) == BASALT_OK);
        return n;
    }
    std::vector<float> decode(const std::vector<int32_t>& toks, int32_t seq) {
        return test::decode_rows(session, toks, static_cast<int32_t>(length(seq)), seq);
    }
    // Decodes tokens[from, to) of seq as passes ending at each of `ends` (then `to`); returns the last pass's rows.
    std::vector<float> passes(const std::vector<int32_t>& toks, int32_t seq, size_t from, std::vector<size_t> ends) {
        std::vector<float> rows;
        for (size_t end : ends) {
            rows = decode(
                {toks.begin() + static_cast<std::ptrdiff_t>(from), toks.begin() + static_cast<std::ptrdiff_t>(end)},
                seq);
            from = end;
        }
        return rows;
    }
    size_t attach(int32_t seq, const std::vector<int32_t>& toks, size_t n) {
        size_t matched = 0;
        const basalt_status st = basalt_session_prefix_attach(session, seq, toks.data(), n, &matched);
        INFO(basalt_last_error());
        REQUIRE(st == BASALT_OK);
        REQUIRE(length(seq) == matched);
        return matched;
    }
    basalt_memory_plan memory() const {
        basalt_memory_plan m{};
        m.struct_size = sizeof(m);
        REQUIRE(basalt_session_memory(session, &m) == BASALT_OK);
        return m;
    }
};

// One sequence's recurrent state in tiny-qwen35 (its keys: 3 recurrent of 4 layers, conv_kernel 4, group_count 2,
// state_size 32, inner_size 64): per layer the conv's last 3 inputs of 2 x 2 x 32 + 64 channels and the 32 x 64
// delta-rule matrix, F32.
constexpr uint64_t kStateBytes = 3 * 4 * ((4 - 1) * (2 * 2 * 32 + 64) + 32 * 64);

// Tokens of a long prompt (tiny-qwen35's vocabulary has 512 ids).
std::vector<int32_t> long_prompt(size_t n, int32_t salt) {
    std::vector<int32_t> t(n);
    for (size_t i = 0; i < n; ++i) t[i] = static_cast<int32_t>((37 * i + 11 + static_cast<size_t>(salt)) % 500);
    return t;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

double max_abs(const float* a, const float* b, size_t n) {
    double m = 0;
    for (size_t i = 0; i < n; ++i) m = std::max(m, std::abs(static_cast<double>(a[i]) - b[i]));
    return m;
}

}  // namespace

TEST_CASE("recurrent state: interleaved sequences in one batch equal each decoded alone", "[recurrent]") {
    const std::vector<int32_t> a(kPrompt.begin(), kPrompt.begin() + 11), b(kPrompt.begin() + 5, kPrompt.end());
    std::vector<float> alone_a, alone_b;
    {
        Hybrid h(1);
        alone_a = h.decode(a, 0);
    }
    {
        Hybrid h(1);
        alone_b = h.decode(b, 0);
    }
    // One ragged batch, rows of the two sequences alternating (then b's tail), in passes of 4 rows.
    Hybrid h(2, 4);
    std::vector<int32_t> toks, pos, seqs;
    size_t ia = 0, ib = 0;
    while (ia < a.size() || ib < b.size()) {
        if (ia < a.size()) {
            toks.push_back(a[ia]);
            pos.push_back(static_cast<int32_t>(ia++));
            seqs.push_back(0);
        }
        if (ib < b.size()) {
            toks.push_back(b[ib]);
            pos.push_back(static_cast<int32_t>(ib++));
            seqs.push_back(1);
        }
    }
    std::vector<int8_t> want(toks.size(), 1);
    basalt_batch batch{};
    batch.struct_size = sizeof(batch);
    batch.n_tokens = toks.size();
    batch.tokens = toks.data();
    batch.positions = pos.data();
    batch.seq_ids = seqs.data();
    batch.want_logits = want.data();
    REQUIRE(basalt_session_decode(h.session, &batch) == BASALT_OK);
    const size_t V = basalt_session_n_vocab(h.session);
    size_t ra = 0, rb = 0;
    for (size_t i = 0; i < toks.size(); ++i) {
        const float* row = nullptr;
        REQUIRE(basalt_session_logits(h.session, i, &row) == BASALT_OK);
        const float* alone = seqs[i] == 0 ? alone_a.data() + V * ra++ : alone_b.data() + V * rb++;
        INFO("row " << i << " of sequence " << seqs[i]);
        CHECK(max_abs(row, alone, V) <= 1e-5);
    }
}

TEST_CASE("recurrent state: a fork continues from a copy, a dropped sequence starts from zero", "[recurrent]") {
    const std::vector<int32_t> head(kPrompt.begin(), kPrompt.begin() + 9), x = {300, 301, 302}, y = {400, 401};
    std::vector<int32_t> full_x = head, full_y = head;
    full_x.insert(full_x.end(), x.begin(), x.end());
    full_y.insert(full_y.end(), y.begin(), y.end());
    std::vector<float> want_x, want_y;
    {
        Hybrid h(1);
        want_x = h.decode(full_x, 0);
    }
    {
        Hybrid h(1);
        want_y = h.decode(full_y, 0);
    }
    Hybrid h(3);
    const size_t V = basalt_session_n_vocab(h.session);
    h.decode(head, 0);
    REQUIRE(basalt_session_seq_fork(h.session, 0, 1) == BASALT_OK);
    const auto got_y = h.decode(y, 1);  // the fork first: the source's state must be untouched by it
    const auto got_x = h.decode(x, 0);
    CHECK(max_abs(got_x.data(), want_x.data() + V * head.size(), V * x.size()) <= 1e-5);
    CHECK(max_abs(got_y.data(), want_y.data() + V * head.size(), V * y.size()) <= 1e-5);
    // Sequence 1 dropped and reused: its new tokens see none of the old state.
    REQUIRE(basalt_session_seq_drop(h.session, 1) == BASALT_OK);
    const auto again = h.decode(full_x, 1);
    CHECK(max_abs(again.data(), want_x.data(), V * full_x.size()) <= 1e-5);
    // Truncation to 0 starts the sequence again.
    REQUIRE(basalt_session_seq_truncate(h.session, 0, 0) == BASALT_OK);
    const auto restart = h.decode(full_y, 0);
    CHECK(max_abs(restart.data(), want_y.data(), V * full_y.size()) <= 1e-5);
}

TEST_CASE("recurrent state: a prefix reuses a kept state checkpoint, bit for bit the passes it stands for",
          "[recurrent][prefix-cache]") {
    const std::vector<int32_t> b = long_prompt(70, 0);
    const std::vector<int32_t> a(b.begin(), b.begin() + 40);
    Hybrid h(3, 0, 64 * kStateBytes, 512);
    Hybrid ref(3, 0, 0, 512);
    const size_t V = basalt_session_n_vocab(h.session);
    CHECK(h.memory().state_checkpoint_bytes == 64 * kStateBytes);
    CHECK(ref.memory().state_checkpoint_bytes == 0);
    // A's prompt in one batch runs as two passes, [0, 32) and [32, 40) (its last block boundary: a checkpoint), and
    // gives the rows the reference gets from those two passes.
    const auto rows_a = h.decode(a, 0);
    ref.passes(a, 0, 0, {32});
    std::vector<float> want_a = test::decode_rows(ref.session, {a.begin(), a.begin() + 32}, 0, 1);
    const auto tail_a = test::decode_rows(ref.session, {a.begin() + 32, a.end()}, 32, 1);
    want_a.insert(want_a.end(), tail_a.begin(), tail_a.end());
    CHECK(same_bits(rows_a, want_a));
    // B starts with A: it attaches A's 2 full blocks with the state at 32, then its own passes [32, 64), [64, 70).
    REQUIRE(h.attach(1, b, b.size() - 1) == 32);
    const auto rows_b = h.decode({b.begin() + 32, b.end()}, 1);
    const auto want_b = ref.passes(b, 2, 0, {32, 64, 70});
    const auto last_b = ref.passes(b, 0, 40, {64, 70});  // the same from A's sequence in the reference
    CHECK(same_bits({rows_b.end() - static_cast<std::ptrdiff_t>(6 * V), rows_b.end()}, want_b));
    CHECK(same_bits(want_b, last_b) == false);  // sanity: other passes round differently (else the test is blind)
    // Decoding keeps its latest boundary: B grows one token at a time past 80; a new sequence attaches at 80.
    std::vector<int32_t> grown = b;
    for (int32_t t = 0; t < 12; ++t) {
        grown.push_back(100 + t);
        h.decode({grown.back()}, 1);
        ref.decode({grown.back()}, 2);
    }
    REQUIRE(basalt_session_seq_drop(h.session, 0) == BASALT_OK);
    REQUIRE(h.attach(0, grown, grown.size()) == 80);
    grown.push_back(7);
    const auto rows_c = h.decode({grown.begin() + 80, grown.end()}, 0);
    const auto want_c = ref.decode({grown.back()}, 2);
    CHECK(same_bits({rows_c.end() - static_cast<std::ptrdiff_t>(V), rows_c.end()}, want_c));
    // Another salt sees none of it; the same salt again does.
    REQUIRE(basalt_session_seq_drop(h.session, 0) == BASALT_OK);
    REQUIRE(basalt_session_seq_set_salt(h.session, 0, 77) == BASALT_OK);
    CHECK(h.attach(0, b, b.size() - 1) == 0);
    REQUIRE(basalt_session_seq_set_salt(h.session, 0, 0) == BASALT_OK);
    CHECK(h.attach(0, b, b.size() - 1) == 64);
}

TEST_CASE("recurrent state: prompts sharing a long prefix reuse its checkpoint every 512 positions, as run uncached",
          "[recurrent][prefix-cache]") {
    // A system prompt's worth of shared tokens (530), then each request its own. A's prompt runs as passes [0, 512),
    // [512, 560): a checkpoint at 512. B shares only 530 of them: it attaches 512 (33 blocks match, the checkpoint
    // at 512 is the longest within them) and gives the rows a fresh run of B gives (passes [0, 512), [512, 560),
    // [560, 570)) bit for bit.
    const std::vector<int32_t> a = long_prompt(560, 0);
    std::vector<int32_t> b(a.begin(), a.begin() + 530);
    for (int32_t t = 0; t < 40; ++t) b.push_back(400 + t);
    Hybrid h(2, 0, 16 * kStateBytes, 2048);
    Hybrid fresh(1, 0, 16 * kStateBytes, 2048);
    const size_t V = basalt_session_n_vocab(h.session);
    h.decode(a, 0);
    REQUIRE(h.attach(1, b, b.size() - 1) == 512);
    const auto rows = h.decode({b.begin() + 512, b.end()}, 1);
    const auto want = fresh.decode(b, 0);
    CHECK(same_bits(rows, {want.end() - static_cast<std::ptrdiff_t>(58 * V), want.end()}));
}

TEST_CASE("recurrent state: a chunked prompt keeps its latest piece's checkpoint off the 512 grid, not each piece's",
          "[recurrent][prefix-cache]") {
    const std::vector<int32_t> a = long_prompt(70, 0);
    Hybrid h(2, 0, 64 * kStateBytes, 512);
    h.passes(a, 0, 0, {16, 32, 48, 64});  // four pieces of a block: checkpoints at 16, 32, 48, then only 64 stays
    CHECK(h.attach(1, {a.begin(), a.begin() + 40}, 40) == 0);  // 2 blocks match, no checkpoint within them
    CHECK(h.attach(1, a, a.size()) == 64);
}

TEST_CASE("recurrent state: the checkpoint budget bounds what is kept, least recently used out",
          "[recurrent][prefix-cache]") {
    const std::vector<int32_t> a = long_prompt(40, 0), c = long_prompt(40, 3);
    {
        // Less than one state: nothing kept, no reuse, nothing reported.
        Hybrid h(2, 0, kStateBytes - 1);
        CHECK(h.memory().state_checkpoint_bytes == 0);
        h.decode(a, 0);
        CHECK(h.attach(1, a, a.size()) == 0);
    }
    // One state: C's checkpoint replaces A's.
    Hybrid h(2, 0, kStateBytes);
    const basalt_memory_plan m = h.memory();
    CHECK(m.state_checkpoint_bytes == kStateBytes);
    CHECK(m.total_bytes >= m.weight_bytes + m.kv_bytes + m.scratch_bytes + kStateBytes);
    h.decode(a, 0);
    CHECK(h.attach(1, a, a.size()) == 32);
    REQUIRE(basalt_session_seq_drop(h.session, 1) == BASALT_OK);
    h.decode(c, 1);
    REQUIRE(basalt_session_seq_drop(h.session, 0) == BASALT_OK);
    CHECK(h.attach(0, a, a.size()) == 0);
    REQUIRE(basalt_session_seq_drop(h.session, 1) == BASALT_OK);
    CHECK(h.attach(1, c, c.size()) == 32);
}

TEST_CASE("recurrent state: cutting a sequence back is refused naming why, and no budget means no prefix reuse",
          "[recurrent]") {
    Hybrid h(2);
    h.decode(kPrompt, 0);
    CHECK(basalt_session_seq_truncate(h.session, 0, 10) == BASALT_ERR_UNSUPPORTED);
    CHECK_THAT(test::last_error(), Contains("recurrent state of the hybrid model 'qwen35'") &&
                                       Contains("truncate sequence 0 to 10 of its 18 tokens"));
    CHECK(h.length(0) == kPrompt.size());  // untouched
    size_t matched = 99;
    CHECK(basalt_session_prefix_attach(h.session, 1, kPrompt.data(), kPrompt.size(), &matched) == BASALT_OK);
    CHECK(matched == 0);
}
