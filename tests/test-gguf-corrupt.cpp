// Enumerated corrupt-file suite for the GGUF reader: every case takes a valid file (made with gguf::Writer, or a
// golden model), patches or cuts bytes, and expects an exact status and a message naming the field and the
// offending value. Plus exhaustive truncation at every byte and single-byte flips over the header region, which
// may parse or throw basalt::Error but never anything else. The hidden test [.gguf-corpus] writes the fuzz seed
// corpus (tests/fuzz/corpus/gguf) from the same files.
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <catch2/catch.hpp>

#include "model/dtype.hpp"
#include "model/gguf.hpp"
#include "support/error.hpp"

namespace fs = std::filesystem;
using namespace basalt;
using Bytes = std::vector<uint8_t>;

namespace {

fs::path testdata() {
    const fs::path p = BASALT_TESTDATA_DIR;
    REQUIRE(fs::is_directory(p / "golden" / "models"));  // missing test data is a failure, not a skip
    REQUIRE(fs::is_directory(p / "tokenizer"));
    return p;
}

Bytes read_file(const fs::path& path) {
    std::ifstream is(path, std::ios::binary);
    REQUIRE(is.good());
    Bytes b((std::istreambuf_iterator<char>(is)), std::istreambuf_iterator<char>());
    REQUIRE(!b.empty());
    return b;
}

// ---- byte-level layout of a valid file (an independent walker, trusted only on valid input) ----------------

uint32_t get32(const Bytes& b, size_t pos) {
    REQUIRE(pos + 4 <= b.size());
    uint32_t v;
    std::memcpy(&v, b.data() + pos, 4);
    return v;
}

uint64_t get64(const Bytes& b, size_t pos) {
    REQUIRE(pos + 8 <= b.size());
    uint64_t v;
    std::memcpy(&v, b.data() + pos, 8);
    return v;
}

struct KvPos {
    std::string key;
    size_t key_len = 0;  // offset of the key's length
    size_t type = 0;     // offset of the value type
    size_t value = 0;    // offset of the value
    size_t end = 0;
};

struct TensorPos {
    std::string name;
    size_t name_len = 0;
    size_t n_dims = 0;
    size_t dims = 0;  // offset of ne[0]
    size_t type = 0;
    size_t offset = 0;
    size_t end = 0;
};

struct Layout {
    std::vector<KvPos> kvs;
    std::vector<TensorPos> tensors;
    size_t info_end = 0;     // end of the last tensor info
    size_t data_offset = 0;  // start of the data section
    size_t data_end = 0;     // end of the last tensor's bytes (data_offset when there are none)

    const KvPos& kv(const std::string& key) const {
        for (const auto& k : kvs) {
            if (k.key == key) return k;
        }
        FAIL("no key " << key);
        throw 0;
    }
    const TensorPos& tensor(const std::string& name) const {
        for (const auto& t : tensors) {
            if (t.name == name) return t;
        }
        FAIL("no tensor " << name);
        throw 0;
    }
};

size_t skip_value(const Bytes& b, size_t pos, uint32_t type) {
    switch (static_cast<gguf::ValueType>(type)) {
        case gguf::ValueType::UINT8:
        case gguf::ValueType::INT8:
        case gguf::ValueType::BOOL:
            return pos + 1;
        case gguf::ValueType::UINT16:
        case gguf::ValueType::INT16:
            return pos + 2;
        case gguf::ValueType::UINT32:
        case gguf::ValueType::INT32:
        case gguf::ValueType::FLOAT32:
            return pos + 4;
        case gguf::ValueType::UINT64:
        case gguf::ValueType::INT64:
        case gguf::ValueType::FLOAT64:
            return pos + 8;
        case gguf::ValueType::STRING:
            return pos + 8 + get64(b, pos);
        case gguf::ValueType::ARRAY: {
            const uint32_t et = get32(b, pos);
            const uint64_t n = get64(b, pos + 4);
            pos += 12;
            for (uint64_t k = 0; k < n; ++k) pos = skip_value(b, pos, et);
            return pos;
        }
    }
    FAIL("bad type in a valid file");
    return 0;
}

Layout walk(const Bytes& b) {
    Layout l;
    const uint64_t n_tensors = get64(b, 8);
    const uint64_t n_kv = get64(b, 16);
    size_t pos = 24;
    uint64_t alignment = 32;
    for (uint64_t k = 0; k < n_kv; ++k) {
        KvPos kv;
        kv.key_len = pos;
        const uint64_t len = get64(b, pos);
        kv.key.assign(reinterpret_cast<const char*>(b.data() + pos + 8), len);
        kv.type = pos + 8 + len;
        kv.value = kv.type + 4;
        kv.end = skip_value(b, kv.value, get32(b, kv.type));
        if (kv.key == "general.alignment") alignment = get32(b, kv.value);
        pos = kv.end;
        l.kvs.push_back(kv);
    }
    for (uint64_t t = 0; t < n_tensors; ++t) {
        TensorPos ti;
        ti.name_len = pos;
        const uint64_t len = get64(b, pos);
        ti.name.assign(reinterpret_cast<const char*>(b.data() + pos + 8), len);
        ti.n_dims = pos + 8 + len;
        ti.dims = ti.n_dims + 4;
        ti.type = ti.dims + 8 * get32(b, ti.n_dims);
        ti.offset = ti.type + 4;
        ti.end = ti.offset + 8;
        pos = ti.end;
        l.tensors.push_back(ti);
    }
    l.info_end = pos;
    l.data_offset = (pos + alignment - 1) / alignment * alignment;
    l.data_end = l.data_offset;
    if (n_tensors > 0) {
        const auto f = gguf::File::parse(b.data(), b.size(), "walk");
        for (const auto& t : f.tensors()) {
            l.data_end = std::max<size_t>(l.data_end, f.data_offset() + t.offset + t.n_bytes);
        }
        REQUIRE(f.data_offset() == l.data_offset);
    }
    return l;
}

// ---- patching ----------------------------------------------------------------------------------------------

Bytes with_u8(Bytes b, size_t pos, uint8_t v) {
    REQUIRE(pos < b.size());
    b[pos] = v;
    return b;
}

Bytes with_u32(Bytes b, size_t pos, uint32_t v) {
    REQUIRE(pos + 4 <= b.size());
    std::memcpy(b.data() + pos, &v, 4);
    return b;
}

Bytes with_u64(Bytes b, size_t pos, uint64_t v) {
    REQUIRE(pos + 8 <= b.size());
    std::memcpy(b.data() + pos, &v, 8);
    return b;
}

Bytes cut(const Bytes& b, size_t n) {
    REQUIRE(n <= b.size());
    return Bytes(b.begin(), b.begin() + static_cast<std::ptrdiff_t>(n));
}

// ---- valid source files --------------------------------------------------------------------------------------

gguf::Value scalar(gguf::ValueType t, int64_t v) {
    gguf::Value x;
    x.type = t;
    if (t == gguf::ValueType::INT8 || t == gguf::ValueType::INT16 || t == gguf::ValueType::INT32 ||
        t == gguf::ValueType::INT64) {
        x.i = v;
    } else {
        x.u = static_cast<uint64_t>(v);
    }
    return x;
}

gguf::Value array_of(gguf::ValueType et, std::vector<gguf::Value> elems) {
    gguf::Value x;
    x.type = gguf::ValueType::ARRAY;
    x.elem_type = et;
    x.items = std::move(elems);
    return x;
}

gguf::Value strings(const std::vector<std::string>& ss) {
    std::vector<gguf::Value> elems;
    for (const auto& s : ss) {
        gguf::Value e;
        e.type = gguf::ValueType::STRING;
        e.s = s;
        elems.push_back(e);
    }
    return array_of(gguf::ValueType::STRING, std::move(elems));
}

// `levels` arrays nested inside each other, the innermost holding one int32.
gguf::Value nested(int levels) {
    gguf::Value v = array_of(gguf::ValueType::INT32, {scalar(gguf::ValueType::INT32, 7)});
    for (int k = 1; k < levels; ++k) v = array_of(gguf::ValueType::ARRAY, {v});
    return v;
}

Bytes pattern(size_t n, uint8_t seed) {
    Bytes b(n);
    for (size_t k = 0; k < n; ++k) b[k] = static_cast<uint8_t>(seed + k * 7);
    return b;
}

// Metadata shared by the small files: strings, scalars, a nested array, a string array and two keys of equal
// length (patched into a duplicate). general.description comes last so a cut inside it leaves the counts valid.
void add_metadata(gguf::Writer& w) {
    w.set_string("general.architecture", "llama");
    w.set_string("general.name", "corrupt-test");
    w.set_u32("test.u32", 7);
    w.set_f32("test.f32", 0.5f);
    w.set_bool("test.bool", true);
    w.set("test.nested",
          array_of(gguf::ValueType::ARRAY, {array_of(gguf::ValueType::INT32, {scalar(gguf::ValueType::INT32, 1),
                                                                              scalar(gguf::ValueType::INT32, 2)}),
                                            array_of(gguf::ValueType::INT32, {scalar(gguf::ValueType::INT32, 3)})}));
    w.set("tokenizer.ggml.tokens", strings({"<s>", "hello", "world", "!"}));
    w.set_u32("test.dup1", 1);
    w.set_u32("test.dup2", 2);
    w.set_string("general.description", "last string value");
}

// token_embd.weight: Q8_0 [64, 3] (204 bytes at 0), norm_a.weight: F32 [8] (at 224), norm_b.weight: F32 [4, 2]
// (at 256, ending the file).
gguf::Writer base_writer() {
    gguf::Writer w;
    add_metadata(w);
    const Bytes q = pattern(204, 1);
    const Bytes a = pattern(32, 2);
    const Bytes b = pattern(32, 3);
    w.add_tensor("token_embd.weight", BASALT_DTYPE_Q8_0, {64, 3}, q.data(), q.size());
    w.add_tensor("norm_a.weight", BASALT_DTYPE_F32, {8}, a.data(), a.size());
    w.add_tensor("norm_b.weight", BASALT_DTYPE_F32, {4, 2}, b.data(), b.size());
    return w;
}

const Bytes& base_file() {
    static const Bytes b = base_writer().to_bytes();
    return b;
}

Bytes vocab_only_file() {
    gguf::Writer w;
    add_metadata(w);
    return w.to_bytes();
}

// A file with an empty tensor between two others: a [16] at 0, z [0, 2, 2] at 64, b [8] at 64.
Bytes zero_size_tensor_file() {
    gguf::Writer w;
    w.set_string("general.architecture", "llama");
    const Bytes a = pattern(64, 4);
    const Bytes b = pattern(32, 5);
    w.add_tensor("a", BASALT_DTYPE_F32, {16}, a.data(), a.size());
    w.add_tensor("z", BASALT_DTYPE_F32, {0, 2, 2}, nullptr, 0);
    w.add_tensor("b", BASALT_DTYPE_F32, {8}, b.data(), b.size());
    return w.to_bytes();
}

Bytes with_writer(const std::function<void(gguf::Writer&)>& edit) {
    gguf::Writer w = base_writer();
    edit(w);
    return w.to_bytes();
}

// ---- the enumerated cases ------------------------------------------------------------------------------------

struct Case {
    std::string name;
    Bytes bytes;
    basalt_status status;
    std::string expect;  // a substring of the message: the field and the offending value
};

constexpr basalt_status kFormat = BASALT_ERR_FORMAT;

std::vector<Case> small_cases() {
    const Bytes& b = base_file();
    const Layout l = walk(b);
    const size_t data_size = b.size() - l.data_offset;
    const auto& tok = l.tensor("token_embd.weight");
    const auto& na = l.tensor("norm_a.weight");
    const auto& nb = l.tensor("norm_b.weight");
    const auto& tokens = l.kv("tokenizer.ggml.tokens");
    std::vector<Case> cs;
    auto add = [&](std::string name, Bytes bytes, basalt_status status, std::string expect) {
        cs.push_back({std::move(name), std::move(bytes), status, std::move(expect)});
    };

    // Header.
    add("empty file", {}, kFormat, "file is empty");
    add("truncated in the magic", cut(b, 2), kFormat, "magic needs 4 bytes at offset 0, but only 2 remain");
    add("bad magic GGUG", with_u8(b, 3, 'G'), kFormat, "bad magic 0x47554747 ('GGUG')");
    add("bad magic zeros", with_u32(b, 0, 0), kFormat, "bad magic 0x00000000");
    add("bad magic binary", with_u32(b, 0, 0x89abcdefu), kFormat, "bad magic 0x89abcdef ('?\?\?\?')");
    add("version 0", with_u32(b, 4, 0), kFormat, "unsupported GGUF version 0 (supported: 2, 3)");
    add("version 1", with_u32(b, 4, 1), kFormat, "GGUF version 1 is not supported");
    add("version 4", with_u32(b, 4, 4), kFormat, "unsupported GGUF version 4 (supported: 2, 3)");
    add("big-endian version 3", with_u32(b, 4, 0x03000000u), kFormat, "version 0x03000000 looks big-endian");
    add("truncated in the version", cut(b, 6), kFormat, "version needs 4 bytes at offset 4, but only 2 remain");
    add("truncated in the tensor count", cut(b, 10), kFormat,
        "tensor count needs 8 bytes at offset 8, but only 2 remain");
    add("truncated in the metadata count", cut(b, 20), kFormat,
        "metadata count needs 8 bytes at offset 16, but only 4 remain");
    add("tensor count cannot fit", with_u64(b, 8, uint64_t{1} << 40), kFormat,
        fmt::format("tensor count 1099511627776 cannot fit in the {} bytes", b.size()));
    add("tensor count UINT64_MAX", with_u64(b, 8, UINT64_MAX), kFormat, "tensor count 18446744073709551615 cannot fit");
    add("metadata count cannot fit", with_u64(b, 16, uint64_t{1} << 40), kFormat,
        fmt::format("metadata count 1099511627776 cannot fit in the {} bytes", b.size()));
    add("metadata count UINT64_MAX", with_u64(b, 16, UINT64_MAX), kFormat,
        "metadata count 18446744073709551615 cannot fit");

    // Metadata keys and values.
    const auto& desc = l.kv("general.description");
    add("truncated in a key", cut(b, desc.key_len + 8 + 5), kFormat,
        fmt::format("metadata #9 key needs 19 bytes at offset {}, but only 5 remain", desc.key_len + 8));
    add("truncated in a key length", cut(b, desc.key_len + 3), kFormat, "metadata #9 key needs 8 bytes");
    add("truncated in a value type", cut(b, desc.type + 1), kFormat,
        "metadata 'general.description' type needs 4 bytes");
    add("truncated in a string value", cut(b, desc.value + 8 + 4), kFormat,
        "metadata 'general.description' needs 17 bytes");
    add("truncated in a scalar value", cut(b, l.kv("test.dup2").value + 2), kFormat,
        "metadata 'test.dup2' needs 4 bytes");
    add("truncated in an array header", cut(b, tokens.value + 6), kFormat,
        "metadata 'tokenizer.ggml.tokens' element count needs 8 bytes");
    // tokens = 12-byte array header, "<s>" (8 + 3), "hello" (8 + 5), then "world" cut after its length.
    add("truncated in an array element", cut(b, tokens.value + 12 + 11 + 13 + 8 + 2), kFormat,
        "metadata 'tokenizer.ggml.tokens'[2] needs 5 bytes");
    add("key length too large", with_u64(b, l.kv("general.name").key_len, uint64_t{1} << 32), kFormat,
        "metadata #1 key has length 4294967296 (at most 65535 allowed)");
    add("empty key", with_u64(b, l.kv("general.name").key_len, 0), kFormat, "metadata #1 has an empty key");
    add("duplicate key", with_u8(b, l.kv("test.dup2").type - 1, '1'), kFormat, "duplicate metadata key 'test.dup1'");
    add("unknown value type 13", with_u32(b, l.kv("test.u32").type, 13), kFormat,
        "metadata 'test.u32' has unknown value type 13");
    add("unknown value type 0xffffffff", with_u32(b, l.kv("test.u32").type, 0xffffffffu), kFormat,
        "metadata 'test.u32' has unknown value type 4294967295");
    add("unknown array element type", with_u32(b, tokens.value, 13), kFormat,
        "metadata 'tokenizer.ggml.tokens' has unknown element type 13");
    add("unknown nested array element type", with_u32(b, l.kv("test.nested").value + 12, 200), kFormat,
        "metadata 'test.nested'[0] has unknown element type 200");
    add("huge string length", with_u64(b, l.kv("general.name").value, uint64_t{1} << 63), kFormat,
        "metadata 'general.name' needs 9223372036854775808 bytes");
    add("huge string length in an array", with_u64(b, tokens.value + 12, UINT64_MAX), kFormat,
        "metadata 'tokenizer.ggml.tokens'[0] needs 18446744073709551615 bytes");
    add("huge array count", with_u64(b, tokens.value + 4, uint64_t{1} << 62), kFormat,
        "metadata 'tokenizer.ggml.tokens' claims 4611686018427387904 elements of type string");
    add("huge nested array count", with_u64(b, l.kv("test.nested").value + 12 + 4, UINT64_MAX), kFormat,
        "metadata 'test.nested'[0] claims 18446744073709551615 elements of type int32");
    // A fifth token swallows the next key ("test.dup1"), so the next key length is read from its type and value.
    add("array count one too many", with_u64(b, tokens.value + 4, 5), kFormat,
        "metadata #7 key has length 4294967300 (at most 65535 allowed)");
    add("deep nested arrays", with_writer([](gguf::Writer& w) { w.set("test.nested", nested(9)); }), kFormat,
        "metadata 'test.nested'[0][0][0][0][0][0][0][0] nests arrays deeper than 8");
    {
        // A bool array whose count claims every byte left, backed by invalid bools: fails on the first element
        // (and, since the fix, without first reserving 96 bytes of Value per claimed element).
        Bytes big = base_file();
        big.resize(big.size() + 16384, 0xff);
        add("bool array count backed by garbage",
            with_u64(with_u32(big, tokens.value, 7), tokens.value + 4, big.size() - tokens.value - 12), kFormat,
            "metadata 'tokenizer.ggml.tokens'[0] is a bool with value 3");
    }
    add("bool value 2", with_u8(b, l.kv("test.bool").value, 2), kFormat,
        "metadata 'test.bool' is a bool with value 2 (expected 0 or 1)");
    add("bool value 255", with_u8(b, l.kv("test.bool").value, 255), kFormat,
        "metadata 'test.bool' is a bool with value 255");

    // general.alignment.
    add("alignment 0", with_writer([](gguf::Writer& w) { w.set_u32("general.alignment", 0); }), kFormat,
        "metadata 'general.alignment' = 0 is not a power of two");
    add("alignment 3", with_writer([](gguf::Writer& w) { w.set_u32("general.alignment", 3); }), kFormat,
        "metadata 'general.alignment' = 3 is not a power of two");
    add("alignment negative", with_writer([](gguf::Writer& w) { w.set_i32("general.alignment", -32); }), kFormat,
        "metadata 'general.alignment' = -32 is not a power of two");
    add("alignment 2^31", with_writer([](gguf::Writer& w) { w.set_u32("general.alignment", 1u << 31); }), kFormat,
        "metadata 'general.alignment' = 2147483648 is not a power of two between 1 and 2^30");
    add("alignment 2^63 as uint64",
        with_writer([](gguf::Writer& w) { w.set("general.alignment", scalar(gguf::ValueType::UINT64, INT64_MIN)); }),
        kFormat, "metadata 'general.alignment' = 9223372036854775808 is not a power of two between 1 and 2^30");
    add("alignment of type string", with_writer([](gguf::Writer& w) { w.set_string("general.alignment", "32"); }),
        kFormat, "metadata 'general.alignment' has type string, expected uint32");
    add("alignment of type float32", with_writer([](gguf::Writer& w) { w.set_f32("general.alignment", 32.f); }),
        kFormat, "metadata 'general.alignment' has type float32, expected uint32");

    // Tensor infos.
    add("truncated in a tensor name", cut(b, nb.name_len + 8 + 3), kFormat, "tensor #2 name needs 13 bytes at offset");
    add("truncated in a tensor n_dims", cut(b, nb.n_dims + 2), kFormat, "tensor 'norm_b.weight' n_dims needs 4 bytes");
    add("truncated in a tensor dim", cut(b, nb.dims + 8 + 4), kFormat,
        "tensor 'norm_b.weight' dim needs 8 bytes at offset");
    add("truncated in a tensor type", cut(b, nb.type + 1), kFormat, "tensor 'norm_b.weight' type needs 4 bytes");
    add("truncated in a tensor offset", cut(b, nb.offset + 7), kFormat,
        "tensor 'norm_b.weight' offset needs 8 bytes at offset");
    add("tensor name too long", with_writer([](gguf::Writer& w) {
            const Bytes d = pattern(4, 9);
            w.add_tensor(std::string(65, 'x'), BASALT_DTYPE_F32, {1}, d.data(), d.size());
        }),
        kFormat, "tensor #3 name is 65 bytes long (at most 64 allowed)");
    add("tensor name length huge", with_u64(b, na.name_len, uint64_t{1} << 40), kFormat,
        "tensor #1 name needs 1099511627776 bytes");
    add("empty tensor name", with_u64(b, na.name_len, 0), kFormat, "tensor #1 has an empty name");
    add("duplicate tensor name", with_u8(b, nb.name_len + 8 + 5, 'a'), kFormat,
        "duplicate tensor name 'norm_a.weight'");
    add("n_dims 0", with_u32(b, na.n_dims, 0), kFormat, "tensor 'norm_a.weight' has n_dims 0 (expected 1..4)");
    add("n_dims 5", with_u32(b, na.n_dims, 5), kFormat, "tensor 'norm_a.weight' has n_dims 5 (expected 1..4)");
    add("n_dims UINT32_MAX", with_u32(b, na.n_dims, UINT32_MAX), kFormat,
        "tensor 'norm_a.weight' has n_dims 4294967295");
    add("dim above INT64_MAX", with_u64(b, nb.dims + 8, uint64_t{1} << 63), kFormat,
        "tensor 'norm_b.weight' dim 1 = 9223372036854775808 is out of range");
    add("dims whose product overflows",
        with_u64(with_u64(b, nb.dims, uint64_t{1} << 32), nb.dims + 8, uint64_t{1} << 32), kFormat,
        "tensor 'norm_b.weight' shape [4294967296, 4294967296] overflows");
    add("byte size overflows", with_u64(b, na.dims, uint64_t{1} << 62), kFormat,
        "tensor 'norm_a.weight' shape [4611686018427387904] of f32 spans more than 2^64 bytes");
    add("row length not a multiple of the block size", with_u64(b, tok.dims, 48), kFormat,
        "tensor 'token_embd.weight' row length 48 is not a multiple of the q8_0 block size 32");
    add("unknown tensor type 40", with_u32(b, na.type, 40), kFormat,
        "tensor 'norm_a.weight' has unknown or retired type id 40");
    add("retired tensor type 4 (q4_2)", with_u32(b, na.type, 4), kFormat,
        "tensor 'norm_a.weight' has unknown or retired type id 4");
    add("tensor type UINT32_MAX", with_u32(b, na.type, UINT32_MAX), kFormat,
        "tensor 'norm_a.weight' has unknown or retired type id 4294967295");
    add("misaligned tensor offset", with_u64(b, na.offset, 225), kFormat,
        "tensor 'norm_a.weight' offset 225 is not a multiple of the alignment 32");
    add("tensor offset past the end", with_u64(b, nb.offset, uint64_t{1} << 40), kFormat,
        fmt::format("tensor 'norm_b.weight' data [1099511627776, +32) lies outside the {}-byte data section",
                    data_size));
    add("tensor offset near UINT64_MAX", with_u64(b, nb.offset, UINT64_MAX - 31), kFormat,
        fmt::format("tensor 'norm_b.weight' data [18446744073709551584, +32) lies outside the {}-byte data section",
                    data_size));
    add("tensor data runs past the end", with_u64(b, nb.offset, data_size), kFormat,
        fmt::format("tensor 'norm_b.weight' data [{}, +32) lies outside", data_size));
    add("overlapping tensors", with_u64(b, nb.offset, 32), kFormat,
        "tensor 'token_embd.weight' data [0, +204) overlaps tensor 'norm_b.weight' at 32");
    add("tensors at the same offset", with_u64(b, nb.offset, 224), kFormat,
        "tensor 'norm_a.weight' data [224, +32) overlaps tensor 'norm_b.weight' at 224");
    {
        // Overlap with an empty tensor sorted between the two overlapping ones.
        const Bytes z = zero_size_tensor_file();
        const Layout zl = walk(z);
        add("overlap hidden behind an empty tensor",
            with_u64(with_u64(z, zl.tensor("z").offset, 32), zl.tensor("b").offset, 32), kFormat,
            "tensor 'a' data [0, +64) overlaps tensor 'b' at 32");
        // A zero dim must not hide an overflowing product of the other dims.
        add("zero dim before dims whose product overflows",
            with_u64(with_u64(z, zl.tensor("z").dims + 8, uint64_t{1} << 62), zl.tensor("z").dims + 16, 4), kFormat,
            "tensor 'z' shape [0, 4611686018427387904, 4] overflows");
    }

    // Data section.
    add("truncated before the data section", cut(b, l.info_end), kFormat,
        fmt::format("data section starts at {} but the file has only {} bytes", l.data_offset, l.info_end));
    add("truncated in the padding before the data", cut(b, l.data_offset - 1), kFormat,
        fmt::format("data section starts at {} but the file has only {} bytes", l.data_offset, l.data_offset - 1));
    add("truncated in tensor data", cut(b, b.size() - 1), kFormat,
        fmt::format("tensor 'norm_b.weight' data [256, +32) lies outside the {}-byte data section (truncated file?)",
                    data_size - 1));
    add("truncated at the start of the data", cut(b, l.data_offset), kFormat,
        "tensor 'token_embd.weight' data [0, +204) lies outside the 0-byte data section");
    return cs;
}

// Cases on real files from the golden set (llama.cpp's converter wrote them).
std::vector<Case> golden_cases() {
    std::vector<Case> cs;
    const Bytes m = read_file(testdata() / "golden" / "models" / "tiny-qwen2-q4_0.gguf");
    const Layout l = walk(m);
    const auto f = gguf::File::parse(m.data(), m.size(), "golden");
    const auto& t0 = l.tensors.front();
    cs.push_back({"golden: retired tensor type 5", with_u32(m, t0.type, 5), kFormat,
                  fmt::format("tensor '{}' has unknown or retired type id 5", t0.name)});
    cs.push_back({"golden: version 4", with_u32(m, 4, 4), kFormat, "unsupported GGUF version 4"});
    const auto& tokens = l.kv("tokenizer.ggml.tokens");
    cs.push_back({"golden: huge token count", with_u64(m, tokens.value + 4, UINT64_MAX / 8), kFormat,
                  "metadata 'tokenizer.ggml.tokens' claims 2305843009213693951 elements of type string"});
    // Cut in the middle of the data: the first tensor (in file order) that no longer fits is named.
    const size_t half = l.data_offset + (m.size() - l.data_offset) / 2;
    const gguf::TensorInfo* victim = nullptr;
    for (const auto& t : f.tensors()) {
        if (l.data_offset + t.offset + t.n_bytes > half) {
            victim = &t;
            break;
        }
    }
    REQUIRE(victim != nullptr);
    cs.push_back({"golden: truncated in the data", cut(m, half), kFormat,
                  fmt::format("tensor '{}' data [{}, +{}) lies outside the {}-byte data section", victim->name,
                              victim->offset, victim->n_bytes, half - l.data_offset)});
    cs.push_back({"golden: misaligned offset", with_u64(m, t0.offset, get64(m, t0.offset) + 16), kFormat,
                  fmt::format("tensor '{}' offset {} is not a multiple of the alignment 32", t0.name,
                              get64(m, t0.offset) + 16)});

    const Bytes v = read_file(testdata() / "tokenizer" / "ggml-vocab-bert-bge.gguf");
    const Layout vl = walk(v);
    cs.push_back({"golden vocab: truncated in the token array", cut(v, vl.kv("tokenizer.ggml.tokens").end - 3), kFormat,
                  "metadata 'tokenizer.ggml.tokens'["});
    cs.push_back({"golden vocab: unknown value type", with_u32(v, vl.kvs.back().type, 99), kFormat,
                  fmt::format("metadata '{}' has unknown value type 99", vl.kvs.back().key)});
    return cs;
}

enum class Outcome { parsed, error, other };

struct Result {
    Outcome outcome = Outcome::other;
    basalt_status status = BASALT_OK;
    std::string message;
};

// Parses and, on success, touches every tensor byte (so a sanitizer build proves the bounds).
Result try_parse(const Bytes& bytes, const std::string& source) {
    Result r;
    try {
        const auto f = gguf::File::parse(bytes.data(), bytes.size(), source);
        unsigned sum = 0;
        for (const auto& t : f.tensors()) {
            if (f.data_offset() + t.offset + t.n_bytes > bytes.size()) {
                r.message = "tensor '" + t.name + "' lies outside the buffer";
                return r;
            }
            const uint8_t* p = f.tensor_data(t);
            for (uint64_t k = 0; k < t.n_bytes; ++k) sum += p[k];
        }
        r.outcome = Outcome::parsed;
        r.message = std::to_string(sum);
    } catch (const Error& e) {
        r.outcome = Outcome::error;
        r.status = e.status();
        r.message = e.what();
    } catch (const std::exception& e) {
        r.message = std::string("non-basalt exception: ") + e.what();
    } catch (...) {
        r.message = "unknown exception";
    }
    return r;
}

void check_case(const Case& c) {
    INFO("case: " << c.name);
    const std::string source = "corrupt/" + c.name;
    const Result r = try_parse(c.bytes, source);
    REQUIRE(r.outcome == Outcome::error);
    INFO("message: " << r.message);
    CHECK(r.status == c.status);
    CHECK(r.message.rfind(source + ": ", 0) == 0);  // names the source first
    CHECK_THAT(r.message, Catch::Matchers::Contains(c.expect));
}

// Must fail to parse exactly when the cut removes bytes the file needs: data_end for files with tensors,
// the end of the tensor infos (the metadata) for vocab-only files.
void check_every_truncation(const Bytes& b, const std::string& label, size_t step = 1, size_t dense_prefix = 0) {
    const Layout l = walk(b);
    const size_t needed = l.tensors.empty() ? l.info_end : l.data_end;
    size_t parsed = 0;
    size_t failed = 0;
    for (size_t n = 0; n < b.size(); n = (n < dense_prefix ? n + 1 : n + step)) {
        const Result r = try_parse(cut(b, n), label);
        INFO(label << " cut at " << n << " of " << b.size() << ": " << r.message);
        REQUIRE(r.outcome != Outcome::other);
        if (n < needed) {
            REQUIRE(r.outcome == Outcome::error);
            REQUIRE(r.status == BASALT_ERR_FORMAT);
            ++failed;
        } else {
            REQUIRE(r.outcome == Outcome::parsed);
            ++parsed;
        }
    }
    CHECK(failed > 0);
    // Vocab-only files parse when cut in the alignment padding after the metadata (the Writer pads them).
    if (l.tensors.empty() && step == 1 && needed < b.size()) CHECK(parsed > 0);
}

std::string file_name_for(const std::string& name) {
    std::string s;
    for (char ch : name) {
        const bool ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9');
        s += ok ? ch : '-';
    }
    return s;
}

}  // namespace

TEST_CASE("the source files used by the corrupt-file cases are valid", "[gguf-corrupt]") {
    for (const Bytes& b : {base_file(), vocab_only_file(), zero_size_tensor_file()}) {
        const Result r = try_parse(b, "valid");
        INFO(r.message);
        CHECK(r.outcome == Outcome::parsed);
    }
    const auto f = gguf::File::parse(base_file().data(), base_file().size(), "base");
    CHECK(f.tensors().size() == 3);
    CHECK(f.tensor("token_embd.weight")->n_bytes == 204);
    CHECK(f.tensor("norm_b.weight")->offset == 256);
    CHECK(f.find("test.nested")->array_size() == 2);
    // Version 2 is accepted, as are arrays nested exactly as deep as allowed.
    const Bytes v2 = with_u32(base_file(), 4, 2);
    CHECK(try_parse(v2, "v2").outcome == Outcome::parsed);
    const Bytes deep8 = with_writer([](gguf::Writer& w) { w.set("test.nested", nested(8)); });
    CHECK(try_parse(deep8, "deep8").outcome == Outcome::parsed);
    const Bytes name64 = with_writer([](gguf::Writer& w) {
        const Bytes d = pattern(4, 9);
        w.add_tensor(std::string(64, 'x'), BASALT_DTYPE_F32, {1}, d.data(), d.size());
    });
    CHECK(try_parse(name64, "name64").outcome == Outcome::parsed);
}

TEST_CASE("every enumerated corruption is rejected with its status, field and value", "[gguf-corrupt]") {
    std::vector<Case> cases = small_cases();
    for (auto& c : golden_cases()) cases.push_back(std::move(c));
    std::set<std::string> names;
    for (const auto& c : cases) {
        CHECK(names.insert(c.name).second);  // distinct names
        check_case(c);
    }
    CHECK(cases.size() >= 25);
}

TEST_CASE("a small file cut at every byte parses only when complete, and otherwise throws basalt::Error",
          "[gguf-corrupt]") {
    check_every_truncation(base_file(), "cut-base");
    check_every_truncation(zero_size_tensor_file(), "cut-zero");
    check_every_truncation(vocab_only_file(), "cut-vocab");
}

TEST_CASE("golden files cut at every byte of their first 4 KiB and at sampled points after it", "[gguf-corrupt]") {
    check_every_truncation(read_file(testdata() / "golden" / "models" / "tiny-qwen2-q4_0.gguf"), "cut-qwen2", 4093,
                           4096);
    check_every_truncation(read_file(testdata() / "golden" / "models" / "tiny-llama256-q4_k.gguf"), "cut-q4k", 32749,
                           4096);
    check_every_truncation(read_file(testdata() / "tokenizer" / "ggml-vocab-bert-bge.gguf"), "cut-bge", 20011, 4096);
}

TEST_CASE("flipping any byte of the header region never crashes", "[gguf-corrupt]") {
    for (const Bytes& b : {base_file(), zero_size_tensor_file()}) {
        const Layout l = walk(b);
        size_t parsed = 0;
        size_t rejected = 0;
        for (size_t pos = 0; pos < l.data_offset; ++pos) {
            for (int mode = 0; mode < 6; ++mode) {
                Bytes m = b;
                switch (mode) {
                    case 0:
                        m[pos] ^= 0xff;
                        break;
                    case 1:
                        m[pos] ^= 0x01;
                        break;
                    case 2:
                        m[pos] ^= 0x80;
                        break;
                    case 3:
                        m[pos] = 0x00;
                        break;
                    case 4:
                        m[pos] = 0xff;
                        break;
                    default:
                        m[pos] = static_cast<uint8_t>(m[pos] + 1);
                        break;
                }
                const Result r = try_parse(m, "flip");
                INFO("byte " << pos << " mode " << mode << ": " << r.message);
                REQUIRE(r.outcome != Outcome::other);
                if (r.outcome == Outcome::error) {
                    REQUIRE(r.status == BASALT_ERR_FORMAT);
                    REQUIRE(r.message.rfind("flip: ", 0) == 0);
                    ++rejected;
                } else {
                    ++parsed;
                }
            }
        }
        CHECK(rejected > 0);
        CHECK(parsed > 0);  // flips inside string contents and float values are harmless
    }
}

// Writes the fuzz seed corpus: BASALT_GGUF_CORPUS_OUT=tests/fuzz/corpus/gguf basalt-core-tests "[.gguf-corpus]"
TEST_CASE("write the GGUF fuzz seed corpus", "[.gguf-corpus]") {
    const char* out = std::getenv("BASALT_GGUF_CORPUS_OUT");
    REQUIRE(out != nullptr);
    const fs::path dir = out;
    fs::create_directories(dir);
    auto write = [&](const std::string& name, const Bytes& b) {
        std::ofstream os(dir / name, std::ios::binary | std::ios::trunc);
        os.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
        REQUIRE(os.good());
    };
    write("valid-base.gguf", base_file());
    write("valid-vocab-only.gguf", vocab_only_file());
    write("valid-zero-size-tensor.gguf", zero_size_tensor_file());
    write("valid-v2.gguf", with_u32(base_file(), 4, 2));
    write("valid-alignment-64.gguf", with_writer([](gguf::Writer& w) { w.set_alignment(64); }));
    write("valid-nested-8.gguf", with_writer([](gguf::Writer& w) { w.set("test.nested", nested(8)); }));
    for (const auto& c : small_cases()) {
        if (c.bytes.size() <= 4096) write("corrupt-" + file_name_for(c.name) + ".gguf", c.bytes);
    }
    // Real models: the first 4 KiB (real key names and value types), and a miniature keeping every metadata key
    // (arrays cut to 8 elements) and the first four tensors of at most 1 KiB.
    const fs::path models = testdata() / "golden" / "models";
    for (const char* name : {"tiny-llama-q8_0", "tiny-gemma3-q4_0", "tiny-t5-q4_0", "tiny-llama256-q4_k",
                             "tiny-gpt2-f16", "tiny-llama-moe-q4_0"}) {
        const Bytes m = read_file(models / (std::string(name) + ".gguf"));
        write(std::string("golden-") + name + "-head4k.gguf", cut(m, 4096));
        const auto f = gguf::File::parse(m.data(), m.size(), name);
        gguf::Writer w;
        for (const auto& kv : f.metadata()) {
            gguf::Value v = kv.value;
            if (v.type == gguf::ValueType::ARRAY && v.array_size() > 8) {
                gguf::Value first8;
                first8.type = v.type;
                first8.elem_type = v.elem_type;
                for (uint64_t k = 0; k < 8; ++k) first8.items.push_back(v.element(k));
                v = std::move(first8);
            }
            w.set(kv.key, v);
        }
        int kept = 0;
        for (const auto& t : f.tensors()) {
            if (t.n_bytes > 1024 || kept == 4) continue;
            w.add_tensor(t.name, t.type, std::vector<int64_t>(t.ne, t.ne + t.n_dims), f.tensor_data(t), t.n_bytes);
            ++kept;
        }
        write(std::string("golden-") + name + "-mini.gguf", w.to_bytes());
    }
    write("golden-vocab-bert-bge-head4k.gguf",
          cut(read_file(testdata() / "tokenizer" / "ggml-vocab-bert-bge.gguf"), 4096));
}
