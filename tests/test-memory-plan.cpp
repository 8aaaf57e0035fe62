// The memory plan against hand computation (docs/memory-plan.md) for two golden models, plus hparams, and its host
// tables against what malloc hands out.
#include <malloc.h>

#include <filesystem>
#include <functional>
#include <memory>
#include <vector>

#include <catch2/catch.hpp>

#include "model/memory-plan.hpp"
#include "model/model-hparams.hpp"
#include "support/error.hpp"
#include "support/host-memory.hpp"
#include "tokenizer/tokenizer.hpp"

namespace fs = std::filesystem;
using namespace basalt;
using Catch::Matchers::Contains;

namespace {

gguf::MappedGguf open_golden(const std::string& name) {
    const fs::path p = fs::path(BASALT_TESTDATA_DIR) / "golden" / "models" / name;
    REQUIRE(fs::exists(p));  // missing test data fails
    return gguf::open(p);
}

}  // namespace

TEST_CASE("tiny-llama: plan by hand", "[memory-plan]") {
    const auto g = open_golden("tiny-llama-f32.gguf");
    const ModelHparams hp = read_hparams(g.file);
    // From the file: 4 layers, embd 64, 4 heads, 2 kv heads, head dim 16, ffn 192, vocab 512, train ctx 256.
    CHECK(hp.n_layer == 4);
    CHECK(hp.n_head_kv == 2);
    CHECK(hp.head_dim_k == 16);
    CHECK(hp.n_rot == 16);
    CHECK(hp.n_vocab == 512);
    CHECK(hp.n_ctx_train == 256);

    PlanRequest req;  // ctx 0 -> training ctx 256; batch 512 -> capped at 256; K/V f16
    const MemoryPlan p = plan_memory(g.file, hp, req);
    CHECK(p.n_ctx == 256);
    CHECK(p.n_batch == 256);
    CHECK(p.n_params == 262720);  // 512*64*2 + 4*(64 + 64*64 + 2*64*32 + 64*64 + 64 + 3*64*192) + 64
    CHECK(p.n_params == 512 * 64 * 2 + 4 * (64 + 64 * 64 + 2 * 64 * 32 + 64 * 64 + 64 + 3 * 64 * 192) + 64);
    CHECK(p.weight_bytes == 262720 * 4);
    // K row = 2 kv heads * 16 dims * 2 bytes (f16) = 64 B, V the same; 4 layers.
    CHECK(p.kv_bytes_per_token == 4 * (64 + 64));
    CHECK(p.kv_bytes == 4 * (64 + 64) * 256);
    // One layer for 256 tokens, in floats: residual etc. 4*T*64, qkv T*(4*16 + 2*(16+16)), context T*4*16,
    // ffn 3*T*192 (no score matrix); inputs 6*T int32 (ids, positions, slots, query pairs, rows) and one slot list
    // of 256 (slot, position) pairs; logits 512 floats; inputs and logits twice (host and IO buffer).
    const uint64_t T = 256;
    const uint64_t floats = 4 * T * 64 + T * 128 + T * 64 + 3 * T * 192;
    // (inputs + 8 x 63 bytes of alignment: the session aligns its 8 input arrays to 64 bytes)
    const uint64_t inputs = 6 * T * 4 + 256 * 2 * 4 + 8 * 63;
    // A generation step asks for the logits of one row (one sequence); a step asking for every row (perplexity)
    // holds T rows instead.
    CHECK(p.scratch_bytes == floats * 4 + 2 * (inputs + 512 * 4));
    CHECK(p.logits_bytes == 2 * 512 * 4);
    CHECK(p.logits_all_rows_bytes == 2 * T * 512 * 4);
    CHECK(p.scratch_all_rows_bytes == floats * 4 + 2 * (inputs + T * 512 * 4));
    CHECK(p.scratch_bytes == 1070064);
    CHECK(p.total_bytes == 1050880 + 131072 + 1070064);
}

TEST_CASE("tiny-gemma3: sliding-window layers are capped at window + batch", "[memory-plan]") {
    const auto g = open_golden("tiny-gemma3-q8_0.gguf");
    const ModelHparams hp = read_hparams(g.file);
    CHECK(hp.n_layer == 6);
    CHECK(hp.sliding_window == 8);
    CHECK(hp.head_dim_k == 32);  // key_length, not embd / heads (= 16)
    REQUIRE(hp.layer_sliding.size() == 6);
    CHECK(hp.layer_sliding == std::vector<bool>{true, true, true, true, true, false});  // 5 local : 1 global

    PlanRequest req;
    req.n_ctx = 512;
    req.n_batch = 16;
    const MemoryPlan p = plan_memory(g.file, hp, req);
    // K row = 1 kv head * 32 * 2 B = 64 B, V the same: 128 B per layer and token.
    CHECK(p.kv_bytes_per_token == 6 * 128);
    CHECK(p.kv_cells_window == 8 + 16);
    CHECK(p.kv_bytes == 5 * (8 + 16) * 128 + 1 * 512 * 128);

    // Several sequences: a window of 8 + 16 per sequence while that stays below the context, then the context.
    req.n_seq_max = 3;
    CHECK(plan_memory(g.file, hp, req).kv_cells_window == 3 * 24);
    CHECK(plan_memory(g.file, hp, req).kv_bytes == 5 * 3 * 24 * 128 + 512 * 128);
    req.n_seq_max = 22;  // 22 x 24 = 528 >= 512: the window layers keep the 512 rows of the full layers
    CHECK(plan_memory(g.file, hp, req).kv_cells_window == 512);
    CHECK(plan_memory(g.file, hp, req).kv_bytes == 6 * 512 * 128);
    req.n_seq_max = 0;
    CHECK_THROWS_WITH(plan_memory(g.file, hp, req), Contains("n_seq_max must be at least 1"));
    req.n_seq_max = 1;
    CHECK(window_cells(512, 8, 16, 1) == 24);
    CHECK(window_cells(24, 8, 16, 1) == 24);  // equal to the context: the context
    CHECK(window_cells(20, 8, 16, 1) == 20);
    CHECK(window_cells(512, 0, 16, 4) == 0);

    req.k_type = BASALT_DTYPE_Q8_0;  // 32 values -> 34 bytes
    req.v_type = BASALT_DTYPE_F32;   // 32 values -> 128 bytes
    const MemoryPlan q = plan_memory(g.file, hp, req);
    CHECK(q.kv_bytes_per_token == 6 * (34 + 128));
    // Q8_0 weights: 43 tensors; their bytes are 34/32 of their element count.
    REQUIRE(q.types.count(BASALT_DTYPE_Q8_0) == 1);
    CHECK(q.types.at(BASALT_DTYPE_Q8_0).bytes == q.types.at(BASALT_DTYPE_Q8_0).elements / 32 * 34);
}

TEST_CASE("an unusable KV type is refused with the reason", "[memory-plan]") {
    const auto g = open_golden("tiny-llama-f32.gguf");
    const ModelHparams hp = read_hparams(g.file);
    PlanRequest req;
    // Only what a session can store is planned (inspect used to plan q4_0 or i32 caches that run refuses).
    req.k_type = BASALT_DTYPE_Q4_K;
    CHECK_THROWS_WITH(plan_memory(g.file, hp, req), Contains("K cache type q4_k cannot be stored by a session"));
    req.k_type = BASALT_DTYPE_F16;
    req.v_type = BASALT_DTYPE_I32;
    CHECK_THROWS_WITH(plan_memory(g.file, hp, req), Contains("V cache type i32 cannot be stored by a session"));
    req.v_type = BASALT_DTYPE_Q4_1;
    CHECK_THROWS_WITH(plan_memory(g.file, hp, req), Contains("V cache type q4_1 cannot be stored by a session"));
    // Per-channel KIVI needs a residual window, in whole units of 32.
    req.v_type = BASALT_DTYPE_KIVI_C2;
    CHECK_THROWS_WITH(plan_memory(g.file, hp, req), Contains("V cache type kivi_c2 quantizes each channel"));
    req.kv_residual = 40;
    CHECK_THROWS_WITH(plan_memory(g.file, hp, req), Contains("KV residual window 40 is not a multiple of 32"));
}

TEST_CASE("quantized K/V with a residual window: the plan by hand", "[memory-plan][kv-quant]") {
    const auto g = open_golden("tiny-llama-f32.gguf");
    const ModelHparams hp = read_hparams(g.file);
    PlanRequest req;
    req.n_ctx = 100;
    req.n_seq_max = 1;
    req.k_type = BASALT_DTYPE_KIVI_C2;  // 12 bytes per 32 values: a K row of 2 x 16 values is 12 bytes
    req.v_type = BASALT_DTYPE_KIVI_T4;  // 20 bytes per 32
    req.kv_residual = 32;
    const MemoryPlan p = plan_memory(g.file, hp, req);
    CHECK(p.kv_bytes_per_token == 4 * (12 + 20));
    // 100 cells rounded up to whole groups of 32 (128 rows of K and of V), plus per layer one sequence's 32 F32
    // residual rows of K and of V.
    CHECK(p.kv_residual_bytes == 4 * 32 * 4 * (32 + 32));
    CHECK(p.kv_bytes == 4 * (12 + 20) * 128 + 4 * 32 * 4 * (32 + 32));
    req.k_type = BASALT_DTYPE_Q4_0;  // 18 bytes per 32, rows not rounded
    req.v_type = BASALT_DTYPE_Q8_0;
    req.kv_residual = 0;
    const MemoryPlan q = plan_memory(g.file, hp, req);
    CHECK(q.kv_bytes == 4 * (18 + 34) * 100);
}

TEST_CASE("encoder-decoder and MoE hyper-parameters", "[memory-plan]") {
    const auto t5 = open_golden("tiny-t5-f32.gguf");
    const ModelHparams h5 = read_hparams(t5.file);
    CHECK(h5.encoder_decoder);
    CHECK(h5.n_layer_dec == 2);
    CHECK(h5.n_rot == 0);
    PlanRequest req;
    req.n_ctx = 64;
    const MemoryPlan p5 = plan_memory(t5.file, h5, req);
    // decoder self-attention + cross-attention: 2 * 2 layers * (4 heads * 16 * 2 B * 2)
    CHECK(p5.kv_bytes_per_token == 2 * 2 * (4 * 16 * 2 * 2));
    CHECK(p5.kv_bytes == p5.kv_bytes_per_token * 64);

    const auto moe = open_golden("tiny-llama-moe-f32.gguf");
    const ModelHparams hm = read_hparams(moe.file);
    CHECK(hm.n_expert == 4);
    CHECK(hm.n_expert_used == 2);
}

TEST_CASE("host memory: /proc/meminfo parsing and byte descriptions", "[memory-plan]") {
    const auto m = parse_meminfo(
        "MemTotal:       24683520 kB\nMemFree:        23232000 kB\nMemAvailable:   24204388 kB\n"
        "Buffers:           12 kB\nSwapTotal:       1048572 kB\nSwapFree:         524288 kB\n");
    REQUIRE(m.has_value());
    CHECK(m->available == 24204388ull * 1024);
    CHECK(m->swap_free == 524288ull * 1024);
    CHECK(m->usable() == (24204388ull + 524288) * 1024);
    CHECK_FALSE(parse_meminfo("MemTotal: 100 kB\nMemFree: 50 kB\n").has_value());  // no MemAvailable
    CHECK_FALSE(parse_meminfo("MemAvailable: lots\n").has_value());
    CHECK_FALSE(parse_meminfo("MemAvailable: 99999999999999999999999 kB\n").has_value());
    const auto no_swap = parse_meminfo("MemAvailableX: 1 kB\nMemAvailable: 2 kB");
    REQUIRE(no_swap.has_value());
    CHECK(no_swap->available == 2048);
    CHECK(no_swap->swap_free == 0);
    const auto here = host_memory();  // Linux test machines have it
    REQUIRE(here.has_value());
    CHECK(here->available > 0);
    CHECK(describe_bytes(512) == "512 B");
    CHECK(describe_bytes(1536) == "1536 B (1.5 KiB)");
    CHECK(describe_bytes(1024000000000ull) == "1024000000000 B (953.7 GiB)");
}

// gemma4: per-layer head sizes (key_length 32 on the full layer, key_length_swa 16 on the 5 sliding ones), the
// per-layer K/V rows the plan counts, layer_output_scale read from the file, and the keys of its other layouts
// (KV shared between layers, per-layer embeddings) refused by name.
TEST_CASE("tiny-gemma4: per-layer head sizes, K/V rows per layer, refused layouts", "[memory-plan]") {
    const auto g = open_golden("tiny-gemma4-f32.gguf");
    const ModelHparams hp = read_hparams(g.file);
    CHECK(hp.unimplemented.empty());
    CHECK(hp.layer_sliding == std::vector<bool>{true, true, true, true, true, false});
    CHECK(hp.head_dim_k_at(0) == 16);
    CHECK(hp.head_dim_k_at(5) == 32);
    CHECK(hp.n_rot_at(0) == 16);
    CHECK(hp.n_rot_at(5) == 32);
    CHECK(hp.n_embd_k_gqa(0) == 2 * 16);
    CHECK(hp.n_embd_v_gqa(5) == 2 * 32);
    REQUIRE(hp.layer_out_scale.size() == 6);
    for (float s : hp.layer_out_scale) CHECK((s > 0.5f && s < 1.0f));  // 0.75 + 0.25 tanh(.) in make_models.py
    PlanRequest req;
    req.n_ctx = 512;
    req.n_batch = 16;
    const MemoryPlan p = plan_memory(g.file, hp, req);
    // f16 K and V: 5 sliding layers of 2 x 16 values (64 B each), 1 full layer of 2 x 32 values (128 B each).
    CHECK(p.kv_bytes_per_token == 5 * (64 + 64) + (128 + 128));
    CHECK(p.kv_bytes == 5 * (8 + 16) * (64 + 64) + 512 * (128 + 128));

    auto with = [&](const std::function<void(gguf::Writer&)>& edit) {
        gguf::Writer w;
        gguf::copy_metadata(g.file, w);
        edit(w);
        auto bytes = std::make_shared<std::vector<uint8_t>>(w.to_bytes());
        return std::make_pair(bytes, gguf::File::parse(bytes->data(), bytes->size(), "edited.gguf"));
    };
    {
        // K/V heads per layer (real files): the full layer with 1 head.
        const auto [bytes, f] = with([](gguf::Writer& w) {
            gguf::Value v;
            v.type = gguf::ValueType::ARRAY;
            v.elem_type = gguf::ValueType::INT32;
            for (int32_t n : {2, 2, 2, 2, 2, 1}) {
                gguf::Value e;
                e.type = gguf::ValueType::INT32;
                e.i = n;
                v.items.push_back(e);
            }
            w.set("gemma4.attention.head_count_kv", v);
        });
        const ModelHparams h = read_hparams(f);
        CHECK(h.n_head_kv == 2);
        CHECK(h.n_head_kv_at(0) == 2);
        CHECK(h.n_head_kv_at(5) == 1);
        CHECK(h.n_embd_k_gqa(5) == 32);
    }
    // The small layouts' keys are read (they were refused by name before issue 32's tiny-gemma4e): KV sharing needs
    // an earlier layer of each sharing layer's kind (tiny-gemma4's one full layer is its last), per-layer embeddings
    // a width (their tensors are the builder's to require), FFN widths may differ by layer.
    for (uint32_t shared : {1u, 2u}) {
        const auto [bytes, f] = with([&](gguf::Writer& w) { w.set_u32("gemma4.attention.shared_kv_layers", shared); });
        CHECK_THROWS_WITH(read_hparams(f),
                          Contains("layer 5 shares K/V") && Contains("no full-attention layer before layer " +
                                                                     std::to_string(6 - shared) + " computes them"));
    }
    {
        const auto [bytes, f] = with([](gguf::Writer& w) {
            w.set_u32("gemma4.attention.shared_kv_layers", 6);
            w.set_u32("gemma4.embedding_length_per_layer_input", 2);
        });
        CHECK_THROWS_WITH(read_hparams(f), Contains("shared_kv_layers = 6 leaves no layer of the 6 to compute K/V"));
    }
    {
        const auto [bytes, f] = with([](gguf::Writer& w) {
            w.set_u32("gemma4.embedding_length_per_layer_input", 2);
            gguf::Value v;
            v.type = gguf::ValueType::ARRAY;
            v.elem_type = gguf::ValueType::INT32;
            for (int32_t n : {128, 128, 128, 128, 256, 256}) {
                gguf::Value e;
                e.type = gguf::ValueType::INT32;
                e.i = n;
                v.items.push_back(e);
            }
            w.set("gemma4.feed_forward_length", v);
        });
        const ModelHparams h = read_hparams(f);
        CHECK(h.unimplemented.empty());
        CHECK(h.n_embd_per_layer == 2);
        CHECK(h.n_ff == 256);
        CHECK(h.n_ff_at(0) == 128);
        CHECK(h.n_ff_at(5) == 256);
        CHECK(h.layer_kv_source.empty());
    }
}

// gemma4 in the small models' layout (tests/golden/models/tiny-gemma4e: 9 layers, sliding, sliding, full x 3, the last
// 3 sharing): the sharing layers read the K/V of layers 4 (sliding) and 5 (full) and the plan gives them none.
TEST_CASE("tiny-gemma4e: KV sharing layers have no K/V rows, per-layer embeddings and FFN widths", "[memory-plan]") {
    const fs::path path = fs::path(BASALT_TEST_GOLDEN_LOCAL_DIR) / "models" / "tiny-gemma4e-f32.gguf";
    REQUIRE(fs::exists(path));
    const auto g = gguf::open(path);
    const ModelHparams hp = read_hparams(g.file);
    CHECK(hp.unimplemented.empty());
    CHECK(hp.layer_kv_source == std::vector<uint32_t>{0, 1, 2, 3, 4, 5, 4, 4, 5});
    CHECK(hp.owns_kv(5));
    CHECK_FALSE(hp.owns_kv(6));
    CHECK(hp.n_embd_per_layer == 32);
    CHECK(hp.n_ff_at(5) == 96);
    CHECK(hp.n_ff_at(6) == 192);
    CHECK(hp.n_ff == 192);
    PlanRequest req;
    req.n_ctx = 512;
    req.n_batch = 16;
    const MemoryPlan p = plan_memory(g.file, hp, req);
    // f16 K and V: of the 6 caching layers 4 slide (2 heads x 16: 64 B per row) and 2 are full (2 x 32: 128 B).
    CHECK(p.kv_bytes_per_token == 4 * (64 + 64) + 2 * (128 + 128));
    CHECK(p.kv_bytes == 4 * (8 + 16) * (64 + 64) + 2 * 512 * (128 + 128));
}

// Measured with glibc's mallinfo2, which AddressSanitizer's allocator does not feed: not built into the sanitizer
// build (as the peak-RSS test is not registered there).
#if !defined(__SANITIZE_ADDRESS__)
namespace {

// Bytes malloc has handed out and not taken back (arena chunks in use and mmapped chunks).
uint64_t malloc_in_use() {
    const struct mallinfo2 mi = mallinfo2();
    return static_cast<uint64_t>(mi.uordblks) + static_cast<uint64_t>(mi.hblkhd);
}

}  // namespace

TEST_CASE("host tables: the plan counts what parsing the file and building its tokenizer allocate", "[memory-plan]") {
    // Real vocabularies (SentencePiece 32k, byte-level BPE 100k with 99k merges, WordPiece 30k): the metadata's
    // arrays stay in the file image, and the tokenizer's tables are counted from their containers.
    for (const char* name : {"ggml-vocab-llama-spm.gguf", "ggml-vocab-deepseek-llm.gguf", "ggml-vocab-bert-bge.gguf"}) {
        INFO(name);
        const fs::path p = fs::path(BASALT_TESTDATA_DIR) / "tokenizer" / name;
        REQUIRE(fs::exists(p));
        const uint64_t before = malloc_in_use();
        const auto g = gguf::open(p);
        const auto tok = Tokenizer::create(g.file);
        const double held = static_cast<double>(malloc_in_use() - before);
        const double counted = static_cast<double>(g.file.host_bytes() + tok->host_bytes());
        CHECK(counted >= 0.9 * held);
        CHECK(counted <= 1.1 * held);
        // Kept encoded, the arrays cost a 4-byte offset per string (token texts, merges); as Values, each token's
        // text, score and type took 96 bytes.
        CHECK(g.file.host_bytes() < 64 * 1024 + 8 * tok->n_vocab());
    }
}
#endif
