// MXFP4 weights (GGUF type 39): dequantization against a float64 reading of the OCP microscaling spec (every
// exponent x every code, random blocks), against numpy's dequantization in make_models.py (the golden
// tiny-gpt-oss-mxfp4.gguf's expert blocks, bit for bit), quantization byte for byte against make_models.py's
// quantize_mxfp4 (a port checked bit-exact against ggml's quantize_row_mxfp4_ref) and quantize -> dequantize ->
// quantize round trips.
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "model/dequantize.hpp"
#include "model/dtype.hpp"
#include "model/gguf.hpp"
#include "model/quantize.hpp"

namespace fs = std::filesystem;
using namespace basalt;

namespace {

// E2M1 (1 sign, 2 exponent, 1 mantissa bit, bias 1) read from the bits, as the OCP MX spec defines it.
double e2m1(unsigned code) {
    const double sign = (code & 8u) != 0 ? -1.0 : 1.0;
    const unsigned exp = (code >> 1) & 3u;
    const unsigned man = code & 1u;
    const double mag = exp == 0 ? 0.5 * man : std::ldexp(1.0 + 0.5 * man, static_cast<int>(exp) - 1);
    return sign * mag;
}

// Element j (0..31) of a block in float64: 2^(e - 127) * E2M1(code), rounded once to float.
float reference_value(const uint8_t* block, int j) {
    const uint8_t byte = block[1 + (j & 15)];
    const unsigned code = j < 16 ? byte & 0x0fu : byte >> 4;
    return static_cast<float>(std::ldexp(e2m1(code), static_cast<int>(block[0]) - 127));
}

std::vector<float> dequantize(const uint8_t* data, int64_t n) {
    std::vector<float> y(static_cast<size_t>(n));
    dequantize_row(BASALT_DTYPE_MXFP4, data, y.data(), n);
    return y;
}

std::vector<uint8_t> quantize(const float* x, int64_t n) {
    std::vector<uint8_t> q(*dtype_bytes(BASALT_DTYPE_MXFP4, static_cast<uint64_t>(n)));
    quantize_row(BASALT_DTYPE_MXFP4, x, q.data(), n);
    return q;
}

// Values compare as bits, except that -0 and +0 are the same weight (ggml writes code 8 as +0).
bool same_value(float a, float b) {
    return std::bit_cast<uint32_t>(a) == std::bit_cast<uint32_t>(b) || (a == 0.0f && b == 0.0f);
}

fs::path golden_models() {
    const fs::path p = fs::path(BASALT_TESTDATA_DIR) / "golden" / "models";
    REQUIRE(fs::is_directory(p));  // missing test data is a failure, not a skip
    return p;
}

// A folder of this build for generated test data (the test data folder is read-only).
fs::path cache_dir() {
    std::error_code ec;
    fs::path dir = fs::read_symlink("/proc/self/exe", ec);
    dir = ec ? fs::temp_directory_path() / "basalt-test-cache" : dir.parent_path().parent_path() / "test-cache";
    fs::create_directories(dir);
    return dir;
}

}  // namespace

TEST_CASE("mxfp4: the type's layout", "[quant][mxfp4]") {
    const DtypeTraits* t = dtype_traits(BASALT_DTYPE_MXFP4);
    REQUIRE(t != nullptr);
    CHECK(std::string(t->name) == "mxfp4");
    CHECK(t->block_size == 32);
    CHECK(t->type_size == 17);
    CHECK(t->quantized);
    CHECK(dtype_from_name("MXFP4") == t);
    CHECK(dtype_bytes(BASALT_DTYPE_MXFP4, 2880) == 2880u / 32 * 17);
    CHECK(can_dequantize(BASALT_DTYPE_MXFP4));
    CHECK(can_quantize(BASALT_DTYPE_MXFP4));
}

TEST_CASE("mxfp4: every exponent and code against the float64 definition", "[quant][mxfp4][dequant]") {
    // 256 blocks, block e has exponent e and codes 0..15 twice (low nibbles 0..15, high nibbles 15..0).
    std::vector<uint8_t> blocks(256 * 17);
    for (int e = 0; e < 256; ++e) {
        uint8_t* b = blocks.data() + 17 * e;
        b[0] = static_cast<uint8_t>(e);
        for (int j = 0; j < 16; ++j) b[1 + j] = static_cast<uint8_t>(j | ((15 - j) << 4));
    }
    const auto y = dequantize(blocks.data(), 256 * 32);
    int checked = 0;
    for (int e = 0; e < 256; ++e) {
        for (int j = 0; j < 32; ++j) {
            const float want = reference_value(blocks.data() + 17 * e, j);
            const float got = y[static_cast<size_t>(32 * e + j)];
            INFO("e = " << e << ", element " << j << ": " << got << " vs " << want);
            CHECK(same_value(got, want));
            ++checked;
        }
    }
    CHECK(checked == 256 * 32);
    // Spot values: e = 127 is scale 1 (codes 1..7 = 0.5, 1, 1.5, 2, 3, 4, 6); e = 0 reaches the subnormals.
    CHECK(y[127 * 32 + 7] == 6.0f);
    CHECK(y[127 * 32 + 9] == -0.5f);
    CHECK(y[0 * 32 + 1] == std::ldexp(1.0f, -128));
    CHECK(y[254 * 32 + 2] == std::ldexp(1.0f, 127));
    CHECK(std::isinf(y[254 * 32 + 7]));  // 6 x 2^127 overflows float, in ggml too
}

TEST_CASE("mxfp4: random blocks against the float64 definition", "[quant][mxfp4][dequant]") {
    std::mt19937_64 rng(39);
    std::vector<uint8_t> blocks(4096 * 17);
    for (auto& b : blocks) b = static_cast<uint8_t>(rng());
    const auto y = dequantize(blocks.data(), 4096 * 32);
    int bad = 0;
    for (int i = 0; i < 4096; ++i) {
        for (int j = 0; j < 32; ++j)
            bad += !same_value(y[static_cast<size_t>(32 * i + j)],
                               reference_value(&blocks[17 * static_cast<size_t>(i)], j));
    }
    CHECK(bad == 0);
}

TEST_CASE("mxfp4: quantization picks the exponent from the block's maximum and the nearest code",
          "[quant][mxfp4][quantize]") {
    SECTION("an all-zero block is exponent 0 and code 0") {
        const std::vector<float> x(32, 0.0f);
        const auto q = quantize(x.data(), 32);
        for (uint8_t b : q) CHECK(b == 0);
    }
    SECTION("amax = 6 gives e = floor(log2 6) - 2 + 127 = 127 and exact codes") {
        std::vector<float> x(32);
        const float grid[8] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};
        for (int j = 0; j < 32; ++j) x[static_cast<size_t>(j)] = (j & 8) != 0 ? -grid[j & 7] : grid[j & 7];
        x[8] = 0.0f;  // -0 would quantize to code 0 anyway
        const auto q = quantize(x.data(), 32);
        CHECK(q[0] == 127);
        const auto y = dequantize(q.data(), 32);
        for (int j = 0; j < 32; ++j) CHECK(y[static_cast<size_t>(j)] == x[static_cast<size_t>(j)]);
    }
    SECTION("ties go to the first code: 0.25 between 0 and 0.5 is 0, 1.25 between 1 and 1.5 is 1") {
        std::vector<float> x(32, 0.0f);
        x[0] = 6.0f;  // e = 127
        x[1] = 0.25f;
        x[2] = 1.25f;
        x[3] = -0.25f;
        const auto y = dequantize(quantize(x.data(), 32).data(), 32);
        CHECK(y[1] == 0.0f);
        CHECK(y[2] == 1.0f);
        CHECK(y[3] == 0.0f);
    }
    SECTION("the largest value of a block saturates at 6 x 2^(e - 127)") {
        std::vector<float> x(32, 0.0f);
        x[5] = 7.9f;  // log2 < 3: e = 127, 7.9 -> 6
        const auto y = dequantize(quantize(x.data(), 32).data(), 32);
        CHECK(y[5] == 6.0f);
    }
}

TEST_CASE("mxfp4: quantize -> dequantize -> quantize is a fixed point", "[quant][mxfp4][quantize]") {
    std::mt19937_64 rng(2026);
    std::normal_distribution<float> g(0.0f, 1.0f);
    std::vector<float> x(32 * 2048);
    for (size_t i = 0; i < x.size(); ++i) x[i] = std::ldexp(g(rng), static_cast<int>(i / 32 % 40) - 20);
    const auto q1 = quantize(x.data(), static_cast<int64_t>(x.size()));
    const auto y1 = dequantize(q1.data(), static_cast<int64_t>(x.size()));
    const auto q2 = quantize(y1.data(), static_cast<int64_t>(y1.size()));
    CHECK(std::memcmp(q1.data(), q2.data(), q1.size()) == 0);
    // Error bound per block, in units of 2^(e - 127): below 6 half the largest grid gap (4 to 6), 1; above, the
    // saturation of values up to 8 (amax < 2^(floor(log2 amax) + 1)) at 6, 2.
    for (size_t b = 0; b < x.size() / 32; ++b) {
        const double scale = std::ldexp(1.0, static_cast<int>(q1[17 * b]) - 127);
        for (size_t j = 0; j < 32; ++j) {
            REQUIRE(std::fabs(static_cast<double>(y1[32 * b + j]) - x[32 * b + j]) <= scale * 2.0);
        }
    }
    // Blocks dequantized from codes that include a +-6 and no -0 (code 8) quantize back to the same bytes.
    std::vector<uint8_t> blocks(1024 * 17);
    for (size_t b = 0; b < 1024; ++b) {
        uint8_t* p = blocks.data() + 17 * b;
        p[0] = static_cast<uint8_t>(2 + rng() % 249);
        for (int j = 0; j < 16; ++j) {
            uint8_t lo = static_cast<uint8_t>(rng() % 16);
            uint8_t hi = static_cast<uint8_t>(rng() % 16);
            p[1 + j] = static_cast<uint8_t>((lo == 8 ? 0 : lo) | ((hi == 8 ? 0 : hi) << 4));
        }
        p[1 + rng() % 16] |= (rng() & 1) != 0 ? 0x07 : 0x0f;  // a +-6 among the low nibbles
    }
    const auto yb = dequantize(blocks.data(), 1024 * 32);
    const auto qb = quantize(yb.data(), 1024 * 32);
    CHECK(std::memcmp(qb.data(), blocks.data(), blocks.size()) == 0);
}

TEST_CASE("mxfp4: the golden tiny-gpt-oss experts quantize byte for byte and dequantize as numpy does",
          "[quant][mxfp4][golden]") {
    const fs::path dir = golden_models();
    const auto f32 = gguf::open(dir / "tiny-gpt-oss-f32.gguf");
    const auto mx = gguf::open(dir / "tiny-gpt-oss-mxfp4.gguf");
    // numpy's dequantization of every MXFP4 tensor (make_models.py's dequantize), as raw little-endian floats in
    // file order.
    const fs::path numpy_out = cache_dir() / "tiny-gpt-oss-mxfp4-numpy.f32";
    const std::string script =
        "import sys\n"
        "sys.path.insert(0, sys.argv[1])\n"
        "import numpy as np, make_models as m\n"
        "_, _, ts = m.read_gguf(sys.argv[2])\n"
        "with open(sys.argv[3] + \".tmp\", \"wb\") as f:\n"
        "    for name, (ne, t, raw) in ts.items():\n"
        "        if t == m.GGML_MXFP4: f.write(m.dequantize(ne, t, raw).astype(\"<f4\").tobytes())\n"
        "import os\n"
        "os.replace(sys.argv[3] + \".tmp\", sys.argv[3])\n";
    const std::string testdata = fs::path(BASALT_TESTDATA_DIR).string();
    const std::string model = (dir / "tiny-gpt-oss-mxfp4.gguf").string();
    for (const auto& s : {script, testdata, model, numpy_out.string()}) REQUIRE(s.find('\'') == std::string::npos);
    const std::string cmd =
        "/usr/bin/python3 -B -c '" + script + "' '" + testdata + "' '" + model + "' '" + numpy_out.string() + "'";
    INFO("command: " << cmd);
    REQUIRE(std::system(cmd.c_str()) == 0);
    std::ifstream in(numpy_out, std::ios::binary);
    const std::vector<char> numpy_bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());

    int tensors = 0;
    size_t numpy_at = 0;
    for (const auto& t : mx.file.tensors()) {
        if (t.type != BASALT_DTYPE_MXFP4) continue;
        INFO("tensor " << t.name);
        const auto* s = f32.file.tensor(t.name);
        REQUIRE(s != nullptr);
        REQUIRE(s->type == BASALT_DTYPE_F32);
        const auto n = static_cast<int64_t>(t.n_elements());
        std::vector<float> x(static_cast<size_t>(n));
        std::memcpy(x.data(), f32.file.tensor_data(*s), x.size() * sizeof(float));
        const auto q = quantize(x.data(), n);
        REQUIRE(q.size() == t.n_bytes);
        CHECK(std::memcmp(q.data(), mx.file.tensor_data(t), q.size()) == 0);

        const auto y = dequantize(mx.file.tensor_data(t), n);
        REQUIRE(numpy_at + y.size() * sizeof(float) <= numpy_bytes.size());
        int bad = 0;
        for (size_t i = 0; i < y.size(); ++i) {
            float v;
            std::memcpy(&v, numpy_bytes.data() + numpy_at + 4 * i, 4);
            bad += !same_value(y[i], v);
            const uint8_t* block = mx.file.tensor_data(t) + 17 * (i / 32);
            bad += !same_value(y[i], reference_value(block, static_cast<int>(i % 32)));
        }
        CHECK(bad == 0);
        numpy_at += y.size() * sizeof(float);
        ++tensors;
    }
    CHECK(tensors == 12);  // ffn_{gate,up,down}_exps of 4 layers
    CHECK(numpy_at == numpy_bytes.size());
}
