// Weight types: fp16/bf16 conversions, reference dequantization of every GGUF weight type (blocks built by hand
// from the published layouts), quantize -> dequantize error bounds, and byte-exactness of the quantizers with
// files written by llama.cpp's `llama-quantize --pure` (golden models, including the regenerated K-quant one).
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "model/dequantize.hpp"
#include "model/dtype.hpp"
#include "model/gguf.hpp"
#include "model/quantize.hpp"
#include "support/error.hpp"
#include "support/half.hpp"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define BASALT_TEST_HAVE_F16C 1
#endif

// ggml's reference is compiled without fused multiply-add; forbid contracting a*b+c here too, whatever -march
// the build uses (GCC contracts by default even in ISO C++ mode when the target has FMA).
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

namespace fs = std::filesystem;
using namespace basalt;
using Catch::Matchers::Contains;

namespace {

uint32_t bits_of(float f) {
    return std::bit_cast<uint32_t>(f);
}
float from_bits(uint32_t u) {
    return std::bit_cast<float>(u);
}

// ---- independent references for the 16-bit conversions (double arithmetic, not bit tricks) ----

// Nearest binary16 value of a finite float (ties to even), as a double; +-inf when it overflows.
double ref_fp16_value(float f) {
    const double x = std::fabs(static_cast<double>(f));
    if (x >= 65520.0) return std::copysign(std::numeric_limits<double>::infinity(), f);
    if (x == 0.0) return std::copysign(0.0, f);
    const int e = std::max(std::ilogb(x), -14);      // subnormals share the exponent of the smallest normal
    const double ulp = std::ldexp(1.0, e - 10);      // 10 fraction bits
    const double r = std::nearbyint(x / ulp) * ulp;  // exact scaling; nearbyint rounds ties to even
    return std::copysign(r, f);
}

// Nearest bfloat16 bit pattern of a finite float (ties to even), found by comparing the two neighbours.
uint16_t ref_bf16_bits(float f) {
    const uint32_t u = bits_of(f);
    const uint32_t sign = u & 0x80000000u;
    const uint32_t lo = u & 0x7fff0000u;  // truncated magnitude
    const double x = std::fabs(static_cast<double>(f));
    const double vlo = static_cast<double>(from_bits(lo));
    const int exp = static_cast<int>(lo >> 23);
    const double ulp = std::ldexp(1.0, std::max(exp, 1) - 127 - 7);  // spacing of bf16 values at this exponent
    const double vhi = vlo + ulp;                                    // may be 2^128: rounds to inf
    uint32_t pick = 0;
    if (x - vlo < vhi - x) {
        pick = lo;
    } else if (x - vlo > vhi - x) {
        pick = lo + 0x10000u;
    } else {
        pick = ((lo >> 16) & 1u) != 0 ? lo + 0x10000u : lo;
    }
    return static_cast<uint16_t>((sign | pick) >> 16);
}

#ifdef BASALT_TEST_HAVE_F16C
__attribute__((target("f16c"))) uint16_t hw_fp32_to_fp16(float f) {
    return static_cast<uint16_t>(_cvtss_sh(f, 0));
}
__attribute__((target("f16c"))) float hw_fp16_to_fp32(uint16_t h) {
    return _cvtsh_ss(h);
}
bool have_f16c() {
    return __builtin_cpu_supports("f16c") != 0;
}
#endif

// ---- test-side block packers, written from the layout descriptions (GGUF spec / ggml block_* structs) ----

void put_u16(uint8_t* p, uint16_t v) {
    p[0] = static_cast<uint8_t>(v & 0xff);
    p[1] = static_cast<uint8_t>(v >> 8);
}
void set_bits(uint8_t& byte, int shift, int width, int value) {
    const int mask = ((1 << width) - 1) << shift;
    byte = static_cast<uint8_t>((byte & ~mask) | ((value << shift) & mask));
}

// A scale that is not a power of two, exactly representable in fp16.
float awkward_f16(std::mt19937& rng, float lo, float hi) {
    std::uniform_real_distribution<float> u(lo, hi);
    return fp16_to_fp32(fp32_to_fp16(u(rng)));
}

int rand_int(std::mt19937& rng, int lo, int hi) {
    return std::uniform_int_distribution<int>(lo, hi)(rng);
}

// One block of `type` with random content, and the values it must dequantize to, computed from the meaning of
// each field in ggml's float operation order.
struct Block {
    std::vector<uint8_t> bytes;
    std::vector<float> values;
};

Block make_block(basalt_dtype type, std::mt19937& rng) {
    const auto* t = dtype_traits(type);
    Block b;
    b.bytes.assign(t->type_size, 0);
    b.values.assign(static_cast<size_t>(t->block_size), 0.f);
    uint8_t* p = b.bytes.data();
    switch (type) {
        case BASALT_DTYPE_Q4_0:
        case BASALT_DTYPE_Q4_1:
        case BASALT_DTYPE_Q5_0:
        case BASALT_DTYPE_Q5_1: {
            const bool five = type == BASALT_DTYPE_Q5_0 || type == BASALT_DTYPE_Q5_1;
            const bool with_min = type == BASALT_DTYPE_Q4_1 || type == BASALT_DTYPE_Q5_1;
            const float d = awkward_f16(rng, -0.2f, 0.2f);
            const float m = awkward_f16(rng, -1.f, 1.f);
            put_u16(p, fp32_to_fp16(d));
            if (with_min) put_u16(p + 2, fp32_to_fp16(m));
            uint8_t* qh = p + (with_min ? 4 : 2);
            uint8_t* qs = qh + (five ? 4 : 0);
            for (int e = 0; e < 32; ++e) {
                const int q = rand_int(rng, 0, five ? 31 : 15);
                set_bits(qs[e % 16], e < 16 ? 0 : 4, 4, q & 15);
                if (five) set_bits(qh[e / 8], e % 8, 1, q >> 4);
                const int offset = with_min ? 0 : (five ? 16 : 8);
                const float v = static_cast<float>(q - offset) * d;
                b.values[e] = with_min ? v + m : v;
            }
            break;
        }
        case BASALT_DTYPE_Q8_0:
        case BASALT_DTYPE_Q8_1: {
            const float d = awkward_f16(rng, -0.1f, 0.1f);
            put_u16(p, fp32_to_fp16(d));
            uint8_t* qs = p + (type == BASALT_DTYPE_Q8_1 ? 4 : 2);
            if (type == BASALT_DTYPE_Q8_1) put_u16(p + 2, fp32_to_fp16(123.f));  // s: not used by dequantization
            for (int e = 0; e < 32; ++e) {
                const int q = rand_int(rng, -128, 127);
                qs[e] = static_cast<uint8_t>(static_cast<int8_t>(q));
                b.values[e] = static_cast<float>(q) * d;
            }
            break;
        }
        case BASALT_DTYPE_Q2_K: {  // scales[16] qs[64] d dmin
            const float d = awkward_f16(rng, 0.f, 0.1f);
            const float dmin = awkward_f16(rng, 0.f, 0.1f);
            put_u16(p + 80, fp32_to_fp16(d));
            put_u16(p + 82, fp32_to_fp16(dmin));
            int sc[16];
            int mn[16];
            for (int g = 0; g < 16; ++g) {
                sc[g] = rand_int(rng, 0, 15);
                mn[g] = rand_int(rng, 0, 15);
                p[g] = static_cast<uint8_t>(sc[g] | (mn[g] << 4));
            }
            for (int e = 0; e < 256; ++e) {
                const int q = rand_int(rng, 0, 3);
                const int r = e % 128;
                set_bits(p[16 + (e / 128) * 32 + r % 32], 2 * (r / 32), 2, q);
                const float dl = d * static_cast<float>(sc[e / 16]);
                const float ml = dmin * static_cast<float>(mn[e / 16]);
                b.values[e] = dl * static_cast<float>(q) - ml;
            }
            break;
        }
        case BASALT_DTYPE_Q3_K: {  // hmask[32] qs[64] scales[12] d
            const float d = awkward_f16(rng, -0.1f, 0.1f);
            put_u16(p + 108, fp32_to_fp16(d));
            uint8_t* sb = p + 96;
            int sc[16];
            for (int g = 0; g < 16; ++g) {
                sc[g] = rand_int(rng, -32, 31);
                const int u = sc[g] + 32;
                set_bits(sb[g % 8], g < 8 ? 0 : 4, 4, u & 15);
                set_bits(sb[8 + g % 4], 2 * (g / 4), 2, u >> 4);
            }
            for (int e = 0; e < 256; ++e) {
                const int q = rand_int(rng, 0, 7);  // value q - 4; the high bit set means "no -4"
                const int r = e % 128;
                set_bits(p[32 + (e / 128) * 32 + r % 32], 2 * (r / 32), 2, q & 3);
                set_bits(p[e % 32], e / 32, 1, q >> 2);
                const float dl = d * static_cast<float>(sc[e / 16]);
                b.values[e] = dl * static_cast<float>(q - 4);
            }
            break;
        }
        case BASALT_DTYPE_Q4_K:
        case BASALT_DTYPE_Q5_K: {  // d dmin scales[12] (qh[32]) qs[128]
            const bool five = type == BASALT_DTYPE_Q5_K;
            const float d = awkward_f16(rng, 0.f, 0.05f);
            const float dmin = awkward_f16(rng, 0.f, 0.05f);
            put_u16(p, fp32_to_fp16(d));
            put_u16(p + 2, fp32_to_fp16(dmin));
            uint8_t* sb = p + 4;
            uint8_t* qh = p + 16;
            uint8_t* qs = p + (five ? 48 : 16);
            int sc[8];
            int mn[8];
            for (int g = 0; g < 8; ++g) {
                sc[g] = rand_int(rng, 0, 63);
                mn[g] = rand_int(rng, 0, 63);
                if (g < 4) {
                    set_bits(sb[g], 0, 6, sc[g]);
                    set_bits(sb[g + 4], 0, 6, mn[g]);
                } else {
                    set_bits(sb[g + 4], 0, 4, sc[g] & 15);
                    set_bits(sb[g + 4], 4, 4, mn[g] & 15);
                    set_bits(sb[g - 4], 6, 2, sc[g] >> 4);
                    set_bits(sb[g], 6, 2, mn[g] >> 4);
                }
            }
            for (int e = 0; e < 256; ++e) {
                const int q = rand_int(rng, 0, five ? 31 : 15);
                const int w = e % 64;
                set_bits(qs[(e / 64) * 32 + w % 32], w < 32 ? 0 : 4, 4, q & 15);
                if (five) set_bits(qh[w % 32], e / 32, 1, q >> 4);
                const float dl = d * static_cast<float>(sc[e / 32]);
                const float ml = dmin * static_cast<float>(mn[e / 32]);
                b.values[e] = dl * static_cast<float>(q) - ml;
            }
            break;
        }
        case BASALT_DTYPE_Q6_K: {  // ql[128] qh[64] scales[16] d
            const float d = awkward_f16(rng, -0.01f, 0.01f);
            put_u16(p + 208, fp32_to_fp16(d));
            int sc[16];
            for (int g = 0; g < 16; ++g) {
                sc[g] = rand_int(rng, -128, 127);
                p[192 + g] = static_cast<uint8_t>(static_cast<int8_t>(sc[g]));
            }
            for (int e = 0; e < 256; ++e) {
                const int q = rand_int(rng, 0, 63);  // value q - 32
                const int h = e / 128;
                const int k = (e % 128) / 32;
                const int l = e % 32;
                set_bits(p[h * 64 + l + 32 * (k % 2)], 4 * (k / 2), 4, q & 15);
                set_bits(p[128 + h * 32 + l], 2 * k, 2, q >> 4);
                b.values[e] = d * static_cast<float>(sc[e / 16]) * static_cast<float>(q - 32);
            }
            break;
        }
        case BASALT_DTYPE_Q8_K: {  // f32 d, qs[256], bsums[16]
            const float d = std::uniform_real_distribution<float>(-0.01f, 0.01f)(rng);
            const uint32_t db = bits_of(d);
            for (int k = 0; k < 4; ++k) p[k] = static_cast<uint8_t>(db >> (8 * k));
            for (int e = 0; e < 256; ++e) {
                const int q = rand_int(rng, -127, 127);
                p[4 + e] = static_cast<uint8_t>(static_cast<int8_t>(q));
                b.values[e] = d * static_cast<float>(q);
            }
            break;
        }
        default:
            FAIL("no packer for type " << dtype_name(type));
    }
    return b;
}

std::vector<float> dequantize(basalt_dtype type, const uint8_t* data, int64_t n) {
    std::vector<float> out(static_cast<size_t>(n));
    dequantize_row(type, data, out.data(), n);
    return out;
}

std::vector<uint8_t> quantize(basalt_dtype type, const float* x, int64_t n) {
    const auto bytes = dtype_bytes(type, static_cast<uint64_t>(n));
    REQUIRE(bytes.has_value());
    std::vector<uint8_t> out(*bytes, 0xcd);  // poison: every byte must be written
    quantize_row(type, x, out.data(), n);
    return out;
}

// Test inputs: gaussian weights with a few outliers, plus degenerate blocks.
std::vector<float> test_weights(int64_t n, uint32_t seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> gauss(0.f, 1.f);
    std::vector<float> x(static_cast<size_t>(n));
    for (auto& v : x) v = 0.05f * gauss(rng);
    for (int64_t i = 0; i < n; i += 97) x[static_cast<size_t>(i)] *= 8.f;  // outliers
    return x;
}

double rms(const std::vector<float>& a) {
    double s = 0;
    for (float v : a) s += static_cast<double>(v) * v;
    return std::sqrt(s / static_cast<double>(a.size()));
}

double rms_diff(const float* a, const float* b, size_t n) {
    double s = 0;
    for (size_t i = 0; i < n; ++i) {
        const double d = static_cast<double>(a[i]) - b[i];
        s += d * d;
    }
    return std::sqrt(s / static_cast<double>(n));
}

// ---- golden files ----

fs::path golden_models() {
    const fs::path p = fs::path(BASALT_TESTDATA_DIR) / "golden" / "models";
    REQUIRE(fs::is_directory(p));  // missing test data is a failure, not a skip
    return p;
}

std::vector<float> f32_tensor(const gguf::File& f, const gguf::TensorInfo& t) {
    REQUIRE(t.type == BASALT_DTYPE_F32);
    std::vector<float> x(t.n_elements());
    REQUIRE(t.n_bytes == x.size() * sizeof(float));
    std::memcpy(x.data(), f.tensor_data(t), t.n_bytes);
    return x;
}

// A folder of this build for generated test data (the test data folder is read-only).
fs::path cache_dir() {
    std::error_code ec;
    fs::path dir = fs::read_symlink("/proc/self/exe", ec);
    dir = ec ? fs::temp_directory_path() / "basalt-test-cache" : dir.parent_path().parent_path() / "test-cache";
    fs::create_directories(dir);
    return dir;
}

// The F32 source of tiny-llama256-{q4_k,q6_k}.gguf, regenerated by the command in golden/README.md (section
// "K-quant model") unless an earlier run left a copy with the right sha256. Written to a temporary name and
// renamed, so concurrent test processes never see half a file.
fs::path kquant_f32_model() {
    const fs::path testdata = BASALT_TESTDATA_DIR;
    REQUIRE(fs::is_regular_file(testdata / "make_models.py"));
    const fs::path out = cache_dir();
    const fs::path file = out / "tiny-llama256-f32.gguf";
    const std::string script =
        "import hashlib, os, shutil, sys, tempfile\n"
        "testdata, out = sys.argv[1], sys.argv[2]\n"
        "want = \"0dab06248857a3658523671c12e39a413e7b9131b58fcb6b80a591ec48eea9ea\"\n"
        "final = os.path.join(out, \"tiny-llama256-f32.gguf\")\n"
        "sha = lambda p: hashlib.sha256(open(p, \"rb\").read()).hexdigest()\n"
        "if os.path.exists(final) and sha(final) == want: sys.exit(0)\n"
        "sys.path.insert(0, testdata)\n"
        "import make_models as m\n"
        "tmp = tempfile.mkdtemp(dir=out)\n"
        "try:\n"
        "    p = m.make_model(\"tiny-llama256\", m.build_llama, dict(n_vocab=512, n_embd=256, n_layer=2, n_head=4,"
        " n_head_kv=2, n_ff=512, n_ctx=256, std=0.05, std_embd=1.0, std_out=0.2), 3001, \"f32\", tmp)\n"
        "    if sha(p) != want: sys.exit(\"regenerated %s has sha256 %s, expected %s\" % (p, sha(p), want))\n"
        "    os.replace(p, final)\n"
        "finally:\n"
        "    shutil.rmtree(tmp, ignore_errors=True)\n";
    for (const auto& s : {testdata.string(), out.string()}) REQUIRE(s.find('\'') == std::string::npos);
    const std::string cmd =
        "/usr/bin/python3 -B -c '" + script + "' '" + testdata.string() + "' '" + out.string() + "'";
    INFO("command: " << cmd);
    const int rc = std::system(cmd.c_str());
    REQUIRE(rc == 0);
    REQUIRE(fs::file_size(file) == 5785120u);
    return file;
}

struct Mismatch {
    size_t offset = 0;
    size_t count = 0;
};
Mismatch compare_bytes(const uint8_t* a, const uint8_t* b, size_t n) {
    Mismatch m;
    for (size_t i = 0; i < n; ++i) {
        if (a[i] != b[i]) {
            if (m.count == 0) m.offset = i;
            ++m.count;
        }
    }
    return m;
}

// Quantizes every tensor of `f32` whose type in `quant` is `type` and compares with the file's bytes; tensors
// of other types must be identical copies. Returns the number of tensors compared in `type`.
int check_file_bytes(const fs::path& f32_path, const fs::path& quant_path, basalt_dtype type) {
    const auto src = gguf::open(f32_path);
    const auto dst = gguf::open(quant_path);
    REQUIRE(src.file.tensors().size() == dst.file.tensors().size());
    int compared = 0;
    for (const auto& t : dst.file.tensors()) {
        INFO(quant_path.filename().string() << ": tensor " << t.name << " (" << dtype_name(t.type) << ")");
        const auto* s = src.file.tensor(t.name);
        REQUIRE(s != nullptr);
        REQUIRE(s->n_elements() == t.n_elements());
        if (t.type != type) {
            CHECK(t.type == s->type);
            REQUIRE(t.n_bytes == s->n_bytes);
            CHECK(std::memcmp(dst.file.tensor_data(t), src.file.tensor_data(*s), t.n_bytes) == 0);
            continue;
        }
        const auto x = f32_tensor(src.file, *s);
        const auto q = quantize(type, x.data(), static_cast<int64_t>(x.size()));
        REQUIRE(q.size() == t.n_bytes);
        const Mismatch m = compare_bytes(q.data(), dst.file.tensor_data(t), q.size());
        INFO("first differing byte " << m.offset << " (block " << m.offset / dtype_traits(type)->type_size << ")");
        CHECK(m.count == 0);
        ++compared;
    }
    return compared;
}

const char* const kArchs[] = {"llama", "qwen2", "gemma3", "llama-moe", "gpt2", "t5"};

}  // namespace

// ============================================================================================================
// (b) fp16 / bf16 conversions
// ============================================================================================================

TEST_CASE("fp16 conversion: hand-picked edge cases", "[quant][half]") {
    struct Case {
        uint32_t f;
        uint16_t h;
    };
    const Case cases[] = {
        {0x00000000u, 0x0000},  // +0
        {0x80000000u, 0x8000},  // -0
        {0x3f800000u, 0x3c00},  // 1
        {0xc0000000u, 0xc000},  // -2
        {0x477fe000u, 0x7bff},  // 65504, the largest half
        {0x477fefffu, 0x7bff},  // just below the halfway point to 65536
        {0x477ff000u, 0x7c00},  // 65520: a tie, rounds to even = 65536 = inf
        {0xc77ff000u, 0xfc00},  // -65520
        {0x4f000000u, 0x7c00},  // 2^31
        {0x7f800000u, 0x7c00},  // inf
        {0xff800000u, 0xfc00},  // -inf
        {0x7fc00000u, 0x7e00},  // quiet NaN
        {0xffc00000u, 0xfe00},  // negative quiet NaN
        {0x7f800001u, 0x7e00},  // signalling NaN: made quiet, low payload bits dropped
        {0x7fffe000u, 0x7fff},  // NaN payload kept in the top bits
        {0x38800000u, 0x0400},  // 2^-14, the smallest normal
        {0x387fc000u, 0x03ff},  // 1023 * 2^-24, the largest subnormal
        {0x387fe000u, 0x0400},  // 1023.5 * 2^-24: tie, rounds to even = smallest normal
        {0x33800000u, 0x0001},  // 2^-24, the smallest subnormal
        {0x33000000u, 0x0000},  // 2^-25: tie between 0 and 2^-24, rounds to even = 0
        {0x33000001u, 0x0001},  // just above 2^-25
        {0x33c00000u, 0x0002},  // 1.5 * 2^-24: tie between 1 and 2 units, rounds to even = 2
        {0x34200000u, 0x0002},  // 2.5 * 2^-24: tie, rounds to 2
        {0x32ffffffu, 0x0000},  // below 2^-25
        {0x00000001u, 0x0000},  // float subnormal
        {0x80000001u, 0x8000},  // negative float subnormal
        {0x3f801000u, 0x3c00},  // 1 + 2^-11: tie, rounds to even = 1
        {0x3f803000u, 0x3c02},  // 1 + 3 * 2^-11: tie, rounds to even = 1 + 2^-9
        {0x3f801001u, 0x3c01},  // just above the tie
        {0x3f800fffu, 0x3c00},  // just below the tie
        {0x3fffffffu, 0x4000},  // rounds up into the next exponent
        {0x40490fdbu, 0x4248},  // pi
    };
    for (const auto& c : cases) {
        INFO("f32 bits 0x" << std::hex << c.f);
        CHECK(fp32_to_fp16(from_bits(c.f)) == c.h);
    }
    // half -> float
    CHECK(bits_of(fp16_to_fp32(0x0000)) == 0x00000000u);
    CHECK(bits_of(fp16_to_fp32(0x8000)) == 0x80000000u);
    CHECK(fp16_to_fp32(0x3c00) == 1.0f);
    CHECK(fp16_to_fp32(0x7bff) == 65504.0f);
    CHECK(fp16_to_fp32(0x0001) == std::ldexp(1.0f, -24));
    CHECK(fp16_to_fp32(0x83ff) == -1023 * std::ldexp(1.0f, -24));
    CHECK(fp16_to_fp32(0x0400) == std::ldexp(1.0f, -14));
    CHECK(bits_of(fp16_to_fp32(0x7c00)) == 0x7f800000u);
    CHECK(bits_of(fp16_to_fp32(0xfc00)) == 0xff800000u);
    CHECK(bits_of(fp16_to_fp32(0x7e00)) == 0x7fc00000u);
    CHECK(bits_of(fp16_to_fp32(0x7c01)) == 0x7fc02000u);  // signalling NaN comes back quiet, payload kept
    CHECK(bits_of(fp16_to_fp32(0xffff)) == 0xffffe000u);
}

TEST_CASE("fp16 conversion agrees with exact rounding and round-trips every half", "[quant][half]") {
    // Every half converts exactly to float and back.
    for (uint32_t h = 0; h < 0x10000u; ++h) {
        const auto hh = static_cast<uint16_t>(h);
        const float f = fp16_to_fp32(hh);
        const bool nan = (h & 0x7c00u) == 0x7c00u && (h & 0x3ffu) != 0;
        if (nan) {
            REQUIRE(std::isnan(f));
            REQUIRE(fp32_to_fp16(f) == static_cast<uint16_t>(h | 0x200u));  // quiet bit set
        } else {
            REQUIRE(fp32_to_fp16(f) == hh);
            // value check without bit tricks: sign * 2^(e-15) * (1 + m/1024), or m * 2^-24
            const int e = static_cast<int>((h >> 10) & 0x1f);
            const int m = static_cast<int>(h & 0x3ff);
            double v = e == 0 ? std::ldexp(m, -24)
                              : (e == 31 ? std::numeric_limits<double>::infinity() : std::ldexp(1024 + m, e - 25));
            if ((h & 0x8000u) != 0) v = -v;
            REQUIRE(static_cast<double>(f) == v);
        }
    }
    // Float -> half against an independent double-precision rounding, over a sweep of bit patterns.
    for (uint64_t u = 0; u < (1ull << 32); u += 4099) {
        const float f = from_bits(static_cast<uint32_t>(u));
        if (std::isnan(f)) continue;
        const double want = ref_fp16_value(f);
        const float got = fp16_to_fp32(fp32_to_fp16(f));
        INFO("f32 bits 0x" << std::hex << u);
        REQUIRE(static_cast<double>(got) == want);
        REQUIRE(std::signbit(got) == std::signbit(want));
    }
}

#ifdef BASALT_TEST_HAVE_F16C
TEST_CASE("fp16 conversion is bit-identical to the F16C instructions", "[quant][half]") {
    if (!have_f16c()) {
        WARN("this CPU has no F16C; hardware comparison not run");
        return;
    }
    for (uint32_t h = 0; h < 0x10000u; ++h) {
        INFO("half 0x" << std::hex << h);
        REQUIRE(bits_of(fp16_to_fp32(static_cast<uint16_t>(h))) == bits_of(hw_fp16_to_fp32(static_cast<uint16_t>(h))));
    }
    // A sweep of all float bit patterns (stride 251), plus every pattern around the rounding boundaries.
    auto check = [](uint32_t u) {
        const float f = from_bits(u);
        if (fp32_to_fp16(f) != hw_fp32_to_fp16(f)) {
            FAIL_CHECK("f32 bits 0x" << std::hex << u << ": got 0x" << fp32_to_fp16(f) << ", F16C 0x"
                                     << hw_fp32_to_fp16(f));
            return false;
        }
        return true;
    };
    for (uint64_t u = 0; u < (1ull << 32); u += 251) {
        if (!check(static_cast<uint32_t>(u))) break;
    }
    for (uint32_t base : {0x33000000u, 0x33800000u, 0x38800000u, 0x387fe000u, 0x477ff000u, 0x3f801000u, 0x7f800000u}) {
        for (uint32_t s : {0u, 0x80000000u}) {
            for (uint32_t d = 0; d < 0x4000u; ++d) {
                if (!check((base - 0x2000u + d) | s)) break;
            }
        }
    }
}
#endif

TEST_CASE("bf16 conversion: rounding, subnormals, inf and NaN", "[quant][half]") {
    struct Case {
        uint32_t f;
        uint16_t h;
    };
    const Case cases[] = {
        {0x00000000u, 0x0000},  // 0
        {0x80000000u, 0x8000},  // -0
        {0x3f800000u, 0x3f80},  // 1
        {0x3f808000u, 0x3f80},  // tie, lsb even: down
        {0x3f818000u, 0x3f82},  // tie, lsb odd: up
        {0x3f808001u, 0x3f81},  // above the tie
        {0x3f807fffu, 0x3f80},  // below the tie
        {0xbf818000u, 0xbf82},  // negative tie
        {0x00000001u, 0x0000},  // subnormal rounds to 0
        {0x00008000u, 0x0000},  // subnormal tie: even
        {0x00018000u, 0x0002},  // subnormal tie: up
        {0x0000c000u, 0x0001},  // subnormal kept, not flushed
        {0x007fffffu, 0x0080},  // into the smallest normal
        {0x7f7fffffu, 0x7f80},  // FLT_MAX rounds to inf
        {0x7f7f7fffu, 0x7f7f},  // the largest finite bf16
        {0x7f800000u, 0x7f80},  // inf
        {0xff800000u, 0xff80},  // -inf
        {0x7fc00000u, 0x7fc0},  // quiet NaN
        {0xffc00000u, 0xffc0},  // negative quiet NaN
        {0x7f800001u, 0x7fc0},  // signalling NaN made quiet
        {0xff810000u, 0xffc1},  // payload kept
        {0x7fffffffu, 0x7fff},  // no rounding into the sign
    };
    for (const auto& c : cases) {
        INFO("f32 bits 0x" << std::hex << c.f);
        CHECK(fp32_to_bf16(from_bits(c.f)) == c.h);
    }
    for (uint32_t h = 0; h < 0x10000u; ++h) {
        REQUIRE(bits_of(bf16_to_fp32(static_cast<uint16_t>(h))) == h << 16);
    }
    for (uint64_t u = 0; u < (1ull << 32); u += 4099) {
        const float f = from_bits(static_cast<uint32_t>(u));
        if (std::isnan(f) || std::isinf(f)) continue;
        INFO("f32 bits 0x" << std::hex << u);
        REQUIRE(fp32_to_bf16(f) == ref_bf16_bits(f));
    }
}

// ============================================================================================================
// (a) dequantization of hand-built blocks
// ============================================================================================================

TEST_CASE("dequantization of literal blocks", "[quant][dequant]") {
    SECTION("q8_0: d = 0.5, q = j - 16") {
        uint8_t b[34] = {0x00, 0x38};  // 0x3800 = 0.5
        for (int j = 0; j < 32; ++j) b[2 + j] = static_cast<uint8_t>(static_cast<int8_t>(j - 16));
        const auto y = dequantize(BASALT_DTYPE_Q8_0, b, 32);
        for (int j = 0; j < 32; ++j) CHECK(y[j] == 0.5f * static_cast<float>(j - 16));
    }
    SECTION("q4_0: d = 2, nibbles 0x1f") {
        uint8_t b[18] = {0x00, 0x40};  // 0x4000 = 2
        std::memset(b + 2, 0x1f, 16);  // low nibble 15 -> (15-8)*2 = 14, high nibble 1 -> (1-8)*2 = -14
        const auto y = dequantize(BASALT_DTYPE_Q4_0, b, 32);
        for (int j = 0; j < 16; ++j) {
            CHECK(y[j] == 14.f);
            CHECK(y[j + 16] == -14.f);
        }
    }
    SECTION("q4_1: d = 0.25, m = -1") {
        uint8_t b[20] = {0x00, 0x34, 0x00, 0xbc};  // 0x3400 = 0.25, 0xbc00 = -1
        for (int j = 0; j < 16; ++j) b[4 + j] = static_cast<uint8_t>(j | ((15 - j) << 4));
        const auto y = dequantize(BASALT_DTYPE_Q4_1, b, 32);
        for (int j = 0; j < 16; ++j) {
            CHECK(y[j] == 0.25f * static_cast<float>(j) - 1.f);
            CHECK(y[j + 16] == 0.25f * static_cast<float>(15 - j) - 1.f);
        }
    }
    SECTION("q5_0: fifth bits from qh = 0x80000001") {
        uint8_t b[22] = {0x00, 0x3c, 0x01, 0x00, 0x00, 0x80};  // d = 1, qh bit 0 and bit 31
        const auto y = dequantize(BASALT_DTYPE_Q5_0, b, 32);   // all nibbles 0
        CHECK(y[0] == 0.f);                                    // 16 - 16
        CHECK(y[31] == 0.f);
        for (int j = 1; j < 31; ++j) CHECK(y[j] == -16.f);
    }
    SECTION("q5_1: d = 1, m = 0.5, element 17 = 31") {
        uint8_t b[24] = {0x00, 0x3c, 0x00, 0x38, 0x00, 0x00, 0x02, 0x00};  // qh bit 17
        b[8 + 1] = 0xf0;                                                   // element 17 low nibble 15
        const auto y = dequantize(BASALT_DTYPE_Q5_1, b, 32);
        CHECK(y[17] == 31.5f);
        CHECK(y[1] == 0.5f);
        CHECK(y[16] == 0.5f);
    }
    SECTION("q8_1: s is ignored") {
        uint8_t b[36] = {0x00, 0xc0, 0xff, 0x7b};  // d = -2, s = 65504
        b[4] = 3;
        b[35] = 0x81;  // -127
        const auto y = dequantize(BASALT_DTYPE_Q8_1, b, 32);
        CHECK(y[0] == -6.f);
        CHECK(y[31] == 254.f);
        CHECK(y[1] == 0.f);
    }
    SECTION("q2_K: d = 1, dmin = 0.5, scale 3 / min 2 in group 0, q = 3 at element 0") {
        uint8_t b[84] = {};
        b[0] = 0x23;   // group 0: scale 3, min 2
        b[16] = 0x03;  // element 0: q 3 (bits 0-1 of qs[0]); element 32 would be bits 2-3
        b[80] = 0x00;
        b[81] = 0x3c;
        b[82] = 0x00;
        b[83] = 0x38;
        const auto y = dequantize(BASALT_DTYPE_Q2_K, b, 256);
        CHECK(y[0] == 1.f * 3 * 3 - 0.5f * 2);
        CHECK(y[1] == -1.f);
        CHECK(y[16] == 0.f);  // group 1: scale 0, min 0
        CHECK(y[32] == 0.f);
    }
    SECTION("q3_K: d = 1, all scales 31 (stored 63), high bits set") {
        uint8_t b[110] = {};
        std::memset(b, 0xff, 32);       // hmask: every high bit set -> no -4
        std::memset(b + 96, 0xff, 12);  // every 6-bit scale = 63 -> 31
        b[32] = 0x02;                   // element 0: low bits 2
        b[108] = 0x00;
        b[109] = 0x3c;
        const auto y = dequantize(BASALT_DTYPE_Q3_K, b, 256);
        CHECK(y[0] == 31.f * 2);
        CHECK(y[1] == 0.f);
        CHECK(y[255] == 0.f);
        b[0] = 0xfe;  // element 0: high bit clear -> 2 - 4
        CHECK(dequantize(BASALT_DTYPE_Q3_K, b, 256)[0] == -62.f);
    }
    SECTION("q4_K: d = 0.5, dmin = 0.25, group 0 scale 2 / min 4, group 7 scale 63 / min 63") {
        uint8_t b[144] = {0x00, 0x38, 0x00, 0x34};
        b[4 + 0] = 2;                        // scale 0
        b[4 + 4] = 4;                        // min 0
        b[4 + 11] = 0xff;                    // group 7: low nibbles of scale and min
        b[4 + 3] |= 0xc0;                    // group 7: high bits of scale
        b[4 + 7] |= 0xc0;                    // group 7: high bits of min
        b[16] = 0x0f;                        // element 0: q 15 (element 32 high nibble 0)
        std::memset(b + 16 + 96, 0xa0, 32);  // elements 224..255 (high nibbles of the last 32 bytes): q 10
        const auto y = dequantize(BASALT_DTYPE_Q4_K, b, 256);
        CHECK(y[0] == 0.5f * 2 * 15 - 0.25f * 4);
        CHECK(y[1] == -1.f);
        CHECK(y[255] == 0.5f * 63 * 10 - 0.25f * 63);
        CHECK(y[200] == 0.f);  // group 6: scale 0, min 0
    }
    SECTION("q5_K: fifth bit of element 40 (group 1) adds 16") {
        uint8_t b[176] = {0x00, 0x3c, 0x00, 0x3c};
        b[4 + 1] = 1;      // scale 1 of group 1
        b[16 + 8] = 0x02;  // qh[8] bit 1: element 32 + 8
        const auto y = dequantize(BASALT_DTYPE_Q5_K, b, 256);
        CHECK(y[40] == 16.f);
        CHECK(y[8] == 0.f);
    }
    SECTION("q6_K: d = 0.125, scale -3, q = 63 and 0") {
        uint8_t b[210] = {};
        b[208] = 0x00;
        b[209] = 0x30;  // 0.125
        for (int g = 0; g < 16; ++g) b[192 + g] = static_cast<uint8_t>(static_cast<int8_t>(-3));
        b[0] = 0x0f;    // element 0 low bits 15
        b[128] = 0x03;  // element 0 high bits 3 -> q 63 -> 31
        const auto y = dequantize(BASALT_DTYPE_Q6_K, b, 256);
        CHECK(y[0] == 0.125f * -3 * 31);
        CHECK(y[1] == 0.125f * -3 * -32);
    }
    SECTION("q8_K: f32 d") {
        uint8_t b[292] = {};
        const uint32_t d = bits_of(0.1f);
        for (int k = 0; k < 4; ++k) b[k] = static_cast<uint8_t>(d >> (8 * k));
        b[4] = 5;
        b[259] = 0x80;  // -128
        const auto y = dequantize(BASALT_DTYPE_Q8_K, b, 256);
        CHECK(y[0] == 0.1f * 5);
        CHECK(y[255] == 0.1f * -128);
    }
    SECTION("f32, f16, bf16") {
        const float f[2] = {1.5f, -0.f};
        const auto y = dequantize(BASALT_DTYPE_F32, reinterpret_cast<const uint8_t*>(f), 2);
        CHECK(y[0] == 1.5f);
        CHECK(std::signbit(y[1]));
        const uint8_t h[4] = {0x00, 0x3e, 0x01, 0x80};  // 1.5, -2^-24
        const auto yh = dequantize(BASALT_DTYPE_F16, h, 2);
        CHECK(yh[0] == 1.5f);
        CHECK(yh[1] == -std::ldexp(1.f, -24));
        const uint8_t bf[4] = {0xc0, 0x3f, 0x80, 0xff};  // 1.5, -inf
        const auto yb = dequantize(BASALT_DTYPE_BF16, bf, 2);
        CHECK(yb[0] == 1.5f);
        CHECK(yb[1] == -std::numeric_limits<float>::infinity());
    }
}

TEST_CASE("dequantization of random blocks packed from the layout descriptions", "[quant][dequant]") {
    const basalt_dtype types[] = {BASALT_DTYPE_Q4_0, BASALT_DTYPE_Q4_1, BASALT_DTYPE_Q5_0, BASALT_DTYPE_Q5_1,
                                  BASALT_DTYPE_Q8_0, BASALT_DTYPE_Q8_1, BASALT_DTYPE_Q2_K, BASALT_DTYPE_Q3_K,
                                  BASALT_DTYPE_Q4_K, BASALT_DTYPE_Q5_K, BASALT_DTYPE_Q6_K, BASALT_DTYPE_Q8_K};
    std::mt19937 rng(1234);
    for (const auto type : types) {
        INFO("type " << dtype_name(type));
        CHECK(can_dequantize(type));
        // several blocks in one row, at an odd address (the layout has no alignment requirement)
        const int n_blocks = 5;
        std::vector<uint8_t> row(1);
        std::vector<float> want;
        for (int i = 0; i < n_blocks; ++i) {
            const Block b = make_block(type, rng);
            row.insert(row.end(), b.bytes.begin(), b.bytes.end());
            want.insert(want.end(), b.values.begin(), b.values.end());
        }
        const auto n = static_cast<int64_t>(want.size());
        const auto got = dequantize(type, row.data() + 1, n);
        int bad = 0;
        for (size_t i = 0; i < want.size(); ++i) {
            if (bits_of(got[i]) != bits_of(want[i]) && ++bad <= 5) {
                FAIL_CHECK("element " << i << ": got " << got[i] << ", expected " << want[i]);
            }
        }
        CHECK(bad == 0);
    }
}

TEST_CASE("dequantization of plain types and argument errors", "[quant][dequant]") {
    std::vector<float> x = test_weights(64, 7);
    x[3] = std::numeric_limits<float>::infinity();
    const auto f16 = quantize(BASALT_DTYPE_F16, x.data(), 64);
    const auto y = dequantize(BASALT_DTYPE_F16, f16.data(), 64);
    for (size_t i = 0; i < 64; ++i) CHECK(bits_of(y[i]) == bits_of(fp16_to_fp32(fp32_to_fp16(x[i]))));
    const auto bf = quantize(BASALT_DTYPE_BF16, x.data(), 64);
    const auto yb = dequantize(BASALT_DTYPE_BF16, bf.data(), 64);
    for (size_t i = 0; i < 64; ++i)
        CHECK(bits_of(yb[i]) == (bits_of(x[i]) + 0x7fffu + ((bits_of(x[i]) >> 16) & 1u)) >> 16 << 16);

    float out[256];
    CHECK_NOTHROW(dequantize_row(BASALT_DTYPE_Q4_0, nullptr, out, 0));
    for (const basalt_dtype t : {16, 20, 23, 24, 26, 28, 1000}) {  // 39 (MXFP4): tests/test-mxfp4.cpp
        INFO("type " << t);
        CHECK_FALSE(can_dequantize(t));
        CHECK_FALSE(can_quantize(t));
        try {
            dequantize_row(t, f16.data(), out, 32);
            FAIL("no exception");
        } catch (const Error& e) {
            CHECK(e.status() == BASALT_ERR_UNSUPPORTED);
            CHECK_THAT(e.what(), Contains(dtype_name(t)));
        }
        CHECK_THROWS_AS(quantize_row(t, x.data(), out, 32), Error);
    }
    CHECK_THROWS_WITH(dequantize_row(basalt_dtype{16}, f16.data(), out, 256), Contains("iq2_xxs"));
    try {
        dequantize_row(BASALT_DTYPE_Q4_K, f16.data(), out, 100);
        FAIL("no exception");
    } catch (const Error& e) {
        CHECK(e.status() == BASALT_ERR_INVALID_ARGUMENT);
        CHECK_THAT(e.what(), Contains("100") && Contains("q4_k"));
    }
    CHECK_THROWS_AS(dequantize_row(BASALT_DTYPE_Q8_0, f16.data(), out, -32), Error);
    CHECK_THROWS_AS(quantize_row(BASALT_DTYPE_Q6_K, x.data(), out, 64), Error);
    CHECK_THROWS_WITH(quantize_row(BASALT_DTYPE_Q2_K, x.data(), out, 256),
                      Contains("q2_k") && Contains("not supported"));
}

// ============================================================================================================
// (c) quantize -> dequantize error bounds
// ============================================================================================================

TEST_CASE("quantizers: error bounds of quantize -> dequantize", "[quant][quantize]") {
    const int64_t n = 256 * 64;
    auto x = test_weights(n, 42);
    // degenerate blocks: zeros, a constant, a single spike, tiny and large magnitudes, all negative
    std::fill(x.begin(), x.begin() + 256, 0.f);
    std::fill(x.begin() + 256, x.begin() + 512, 0.37f);
    std::fill(x.begin() + 512, x.begin() + 768, 0.f);
    x[600] = -3.f;
    for (int i = 768; i < 1024; ++i) x[static_cast<size_t>(i)] *= 1e-6f;
    for (int i = 1024; i < 1280; ++i) x[static_cast<size_t>(i)] *= 1000.f;
    for (int i = 1280; i < 1536; ++i) x[static_cast<size_t>(i)] = -std::fabs(x[static_cast<size_t>(i)]) - 0.1f;
    const double x_rms = rms(x);
    // fp16 scales of very small blocks lose relative precision: absolute rounding of an fp16 subnormal
    const float kF16Sub = std::ldexp(1.f, -25);

    auto roundtrip = [&](basalt_dtype t) {
        const auto q = quantize(t, x.data(), n);
        CHECK(std::count(q.begin(), q.end(), uint8_t{0xcd}) < static_cast<std::ptrdiff_t>(q.size() / 64));
        return dequantize(t, q.data(), n);
    };
    // the largest |x| of the block holding element i
    auto block_amax = [&](size_t i, size_t bs) {
        float m = 0;
        for (size_t j = i / bs * bs; j < i / bs * bs + bs; ++j) m = std::max(m, std::fabs(x[j]));
        return m;
    };

    SECTION("f32 copies") {
        const auto y = roundtrip(BASALT_DTYPE_F32);
        CHECK(std::memcmp(y.data(), x.data(), x.size() * 4) == 0);
    }
    SECTION("f16 and bf16: relative error at most half an ulp") {
        const auto h = roundtrip(BASALT_DTYPE_F16);
        const auto b = roundtrip(BASALT_DTYPE_BF16);
        for (size_t i = 0; i < x.size(); ++i) {
            const float a = std::fabs(x[i]);
            if (a >= std::ldexp(1.f, -14))
                REQUIRE(std::fabs(h[i] - x[i]) <= a * std::ldexp(1.f, -11));
            else
                REQUIRE(std::fabs(h[i] - x[i]) <= std::ldexp(1.f, -25));
            REQUIRE(std::fabs(b[i] - x[i]) <= a * std::ldexp(1.f, -8));
        }
    }
    SECTION("q8_0: |error| <= d/2 + fp16 rounding of d, d = amax/127") {
        const auto y = roundtrip(BASALT_DTYPE_Q8_0);
        for (size_t i = 0; i < x.size(); ++i) {
            const float amax = block_amax(i, 32);
            REQUIRE(std::fabs(y[i] - x[i]) <= amax * (0.5f / 127 + 1.f / 2048) * 1.0001f + 127 * kF16Sub);
        }
        CHECK(rms_diff(y.data(), x.data(), x.size()) / x_rms < 0.006);
    }
    SECTION("q4_0: |error| <= |d| (the clamped extreme), d = amax/8") {
        const auto y = roundtrip(BASALT_DTYPE_Q4_0);
        for (size_t i = 0; i < x.size(); ++i) {
            const float amax = block_amax(i, 32);
            REQUIRE(std::fabs(y[i] - x[i]) <= amax / 8 * (1.f + 8.f / 2048) * 1.0001f + 8 * kF16Sub);
        }
        CHECK(rms_diff(y.data(), x.data(), x.size()) / x_rms < 0.12);
    }
    SECTION("q4_K and q6_K: bounded by the super-block range, better than q4_0 / q8_0 neighbours") {
        const auto y4 = roundtrip(BASALT_DTYPE_Q4_K);
        const auto y6 = roundtrip(BASALT_DTYPE_Q6_K);
        const auto y40 = roundtrip(BASALT_DTYPE_Q4_0);
        const auto y80 = roundtrip(BASALT_DTYPE_Q8_0);
        for (size_t i = 0; i < x.size(); ++i) {
            const float amax = block_amax(i, 256);
            // q4_K: 15 levels over at most [-amax, amax]; 6-bit scales/mins and fp16 rounding cost a little
            REQUIRE(std::fabs(y4[i] - x[i]) <= amax * 2 / 15 * 1.1f + 2 * 63 * 15 * kF16Sub);
            // q6_K: levels -32..31 per 16 values, 8-bit sub-scales
            REQUIRE(std::fabs(y6[i] - x[i]) <= amax / 32 * 1.1f + 127 * 32 * kF16Sub);
        }
        for (size_t i = 0; i < 512; ++i) {  // a zero block is exact, a constant one close (fp16 scales)
            REQUIRE(std::fabs(y4[i] - x[i]) <= x[i] / 1024);
            REQUIRE(std::fabs(y6[i] - x[i]) <= x[i] / 1024);
        }
        const double e4 = rms_diff(y4.data(), x.data(), x.size()) / x_rms;
        const double e6 = rms_diff(y6.data(), x.data(), x.size()) / x_rms;
        const double e40 = rms_diff(y40.data(), x.data(), x.size()) / x_rms;
        const double e80 = rms_diff(y80.data(), x.data(), x.size()) / x_rms;
        INFO("normalised rms error q4_0 " << e40 << ", q4_K " << e4 << ", q6_K " << e6 << ", q8_0 " << e80);
        CHECK(e4 < e40);
        CHECK(e6 < e4);
        CHECK(e80 < e6);
        CHECK(e6 < 0.03);
    }
}

TEST_CASE("quantizers: zero input gives zero blocks, n = 0 writes nothing", "[quant][quantize]") {
    const std::vector<float> zeros(512, 0.f);
    for (const basalt_dtype t : {BASALT_DTYPE_F16, BASALT_DTYPE_BF16, BASALT_DTYPE_Q8_0, BASALT_DTYPE_Q4_0,
                                 BASALT_DTYPE_Q4_K, BASALT_DTYPE_Q6_K}) {
        INFO("type " << dtype_name(t));
        CHECK(can_quantize(t));
        const auto q = quantize(t, zeros.data(), 512);
        const auto y = dequantize(t, q.data(), 512);
        for (float v : y) REQUIRE(v == 0.f);
        if (t == BASALT_DTYPE_Q4_0) {
            CHECK(q[2] == 0x88);  // level 8 = zero
        } else {
            CHECK(std::all_of(q.begin(), q.end(), [](uint8_t b) { return b == 0; }));
        }
        uint8_t canary = 0x5a;
        quantize_row(t, zeros.data(), &canary, 0);
        CHECK(canary == 0x5a);
    }
}

// ============================================================================================================
// (d) byte-exactness with llama-quantize --pure
// ============================================================================================================

TEST_CASE("F16, Q8_0 and Q4_0 quantizers reproduce the llama.cpp golden files byte for byte", "[quant][golden]") {
    const fs::path dir = golden_models();
    struct Variant {
        const char* suffix;
        basalt_dtype type;
    };
    const Variant variants[] = {{"f16", BASALT_DTYPE_F16}, {"q8_0", BASALT_DTYPE_Q8_0}, {"q4_0", BASALT_DTYPE_Q4_0}};
    int files = 0;
    for (const char* arch : kArchs) {
        for (const auto& v : variants) {
            const fs::path f32 = dir / (std::string("tiny-") + arch + "-f32.gguf");
            const fs::path quant = dir / (std::string("tiny-") + arch + "-" + v.suffix + ".gguf");
            REQUIRE(fs::is_regular_file(f32));
            REQUIRE(fs::is_regular_file(quant));
            const int n = check_file_bytes(f32, quant, v.type);
            INFO(quant.filename().string());
            CHECK(n >= 7);  // every weight matrix of the model
            ++files;
        }
    }
    CHECK(files == 18);
}

TEST_CASE("Q4_K and Q6_K quantizers reproduce llama-quantize --pure byte for byte", "[quant][golden][kquant]") {
    const fs::path f32 = kquant_f32_model();
    const fs::path dir = golden_models();
    CHECK(check_file_bytes(f32, dir / "tiny-llama256-q4_k.gguf", BASALT_DTYPE_Q4_K) == 16);
    CHECK(check_file_bytes(f32, dir / "tiny-llama256-q6_k.gguf", BASALT_DTYPE_Q6_K) == 16);
}

TEST_CASE("dequantized golden weights are consistent with the F32 weights", "[quant][golden]") {
    const fs::path dir = golden_models();
    struct Variant {
        const char* suffix;
        basalt_dtype type;
        double max_nrmse;  // rms error / rms of the tensor
    };
    const Variant variants[] = {
        {"f16", BASALT_DTYPE_F16, 3e-4}, {"q8_0", BASALT_DTYPE_Q8_0, 6.5e-3}, {"q4_0", BASALT_DTYPE_Q4_0, 0.12}};
    for (const char* arch : kArchs) {
        const auto src = gguf::open(dir / (std::string("tiny-") + arch + "-f32.gguf"));
        for (const auto& v : variants) {
            const auto g = gguf::open(dir / (std::string("tiny-") + arch + "-" + v.suffix + ".gguf"));
            for (const auto& t : g.file.tensors()) {
                if (t.type != v.type) continue;
                INFO(arch << "-" << v.suffix << ": " << t.name);
                const auto x = f32_tensor(src.file, *src.file.tensor(t.name));
                const auto y = dequantize(t.type, g.file.tensor_data(t), static_cast<int64_t>(t.n_elements()));
                CHECK(rms_diff(x.data(), y.data(), x.size()) <= v.max_nrmse * rms(x));
            }
        }
    }
}

TEST_CASE("K-quant dequantization is consistent with the F32 weights and with re-quantization",
          "[quant][golden][kquant]") {
    const auto src = gguf::open(kquant_f32_model());
    const fs::path dir = golden_models();
    struct Variant {
        const char* file;
        basalt_dtype type;
        double max_nrmse;
        double max_requant_nrmse;  // dequantize -> quantize -> dequantize vs dequantize, relative to the error
    };
    const Variant variants[] = {{"tiny-llama256-q4_k.gguf", BASALT_DTYPE_Q4_K, 0.09, 0.05},
                                {"tiny-llama256-q6_k.gguf", BASALT_DTYPE_Q6_K, 0.022, 0.05}};
    for (const auto& v : variants) {
        const auto g = gguf::open(dir / v.file);
        int tensors = 0;
        for (const auto& t : g.file.tensors()) {
            if (t.type != v.type) continue;
            INFO(v.file << ": " << t.name);
            ++tensors;
            const auto x = f32_tensor(src.file, *src.file.tensor(t.name));
            const auto n = static_cast<int64_t>(x.size());
            const uint8_t* q = g.file.tensor_data(t);
            const auto y = dequantize(t.type, q, n);
            const double err = rms_diff(x.data(), y.data(), x.size());
            CHECK(err <= v.max_nrmse * rms(x));

            // Every element sits on the grid point the reference quantizer picked: the nearest level of its
            // sub-block (within half a step), or a clamped end level on the side of x.
            int off_grid = 0;
            for (int64_t b = 0; b < n / 256; ++b) {
                const uint8_t* blk = q + b * static_cast<int64_t>(dtype_traits(t.type)->type_size);
                for (int e = 0; e < 256; ++e) {
                    const size_t i = static_cast<size_t>(b * 256 + e);
                    float step = 0;
                    float lo = 0;
                    float hi = 0;
                    if (t.type == BASALT_DTYPE_Q4_K) {
                        const float d = fp16_to_fp32(static_cast<uint16_t>(blk[0] | (blk[1] << 8)));
                        const float dmin = fp16_to_fp32(static_cast<uint16_t>(blk[2] | (blk[3] << 8)));
                        const uint8_t* s = blk + 4;
                        const int g_ = e / 32;
                        const int sc = g_ < 4 ? (s[g_] & 63) : ((s[g_ + 4] & 15) | ((s[g_ - 4] >> 6) << 4));
                        const int mn = g_ < 4 ? (s[g_ + 4] & 63) : ((s[g_ + 4] >> 4) | ((s[g_] >> 6) << 4));
                        step = d * static_cast<float>(sc);
                        lo = -(dmin * static_cast<float>(mn));
                        hi = step * 15 + lo;
                    } else {
                        const float d = fp16_to_fp32(static_cast<uint16_t>(blk[208] | (blk[209] << 8)));
                        step = d * static_cast<float>(static_cast<int8_t>(blk[192 + e / 16]));
                        lo = step * -32;
                        hi = step * 31;
                        if (step < 0) std::swap(lo, hi);
                        step = std::fabs(step);
                    }
                    if (step == 0) continue;
                    const float dist = std::fabs(x[i] - y[i]);
                    const bool nearest = dist <= step * 0.5f * 1.001f + 1e-7f;
                    const bool clamped_low = std::fabs(y[i] - lo) <= step * 1e-3f && x[i] < y[i];
                    const bool clamped_high = std::fabs(y[i] - hi) <= step * 1e-3f && x[i] > y[i];
                    if (!nearest && !clamped_low && !clamped_high && ++off_grid <= 3) {
                        FAIL_CHECK("element " << i << ": x " << x[i] << ", dequantized " << y[i] << ", step " << step);
                    }
                }
            }
            CHECK(off_grid == 0);

            // Re-quantizing the dequantized weights finds (nearly) the same grid: far below the original error.
            const auto q2 = quantize(t.type, y.data(), n);
            const auto y2 = dequantize(t.type, q2.data(), n);
            const double requant = rms_diff(y.data(), y2.data(), y.size());
            const Mismatch same = compare_bytes(q2.data(), q, q2.size());
            INFO("re-quantization: rms change " << requant << " vs quantization error " << err << ", " << same.count
                                                << " of " << q2.size() << " bytes differ");
            CHECK(requant <= v.max_requant_nrmse * err);
        }
        CHECK(tensors == 16);
    }
}
