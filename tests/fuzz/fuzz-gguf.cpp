// libFuzzer target for the GGUF reader: gguf::File::parse on arbitrary bytes may succeed or throw basalt::Error
// (status FORMAT, message starting with the source); anything else escaping, a crash, a sanitizer report or a
// broken guarantee of the parsed File (checked below) is a bug. Built with -fsanitize=fuzzer (BASALT_FUZZ=ON)
// and, without libFuzzer, linked with replay-main.cpp to replay the corpus and crashers under CTest.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "model/dtype.hpp"
#include "model/gguf.hpp"
#include "support/error.hpp"

namespace {

using namespace basalt;

[[noreturn]] void bug(const std::string& what) {
    std::fprintf(stderr, "fuzz-gguf: reader guarantee broken: %s\n", what.c_str());
    std::abort();
}

// Folds every byte of a value into the sink so the parsed strings and arrays are really read.
uint64_t touch(const gguf::Value& v, int depth) {
    if (depth > 8) bug("array nesting deeper than 8 accepted");
    uint64_t h = static_cast<uint64_t>(v.type) + v.u + static_cast<uint64_t>(v.i);
    uint64_t bits = 0;
    std::memcpy(&bits, &v.f, sizeof(bits));
    h ^= bits;
    for (const char ch : v.s) h = h * 31 + static_cast<unsigned char>(ch);
    if (v.type == gguf::ValueType::BOOL && v.u > 1) bug("bool value above 1 accepted");
    if (std::string(gguf::value_type_name(v.type)) == "invalid") bug("unknown value type accepted");
    if (v.type == gguf::ValueType::ARRAY) {
        if (std::string(gguf::value_type_name(v.elem_type)) == "invalid") bug("unknown element type accepted");
        for (uint64_t k = 0; k < v.array_size(); ++k) {
            const gguf::Value e = v.element(k);
            if (e.type != v.elem_type) bug("array element of the wrong type");
            h += touch(e, depth + 1);
        }
    }
    return h;
}

uint64_t check_file(const gguf::File& f, const uint8_t* data, size_t size) {
    uint64_t h = f.version() + f.alignment();
    if (f.version() != 2 && f.version() != 3) bug("version " + std::to_string(f.version()) + " accepted");
    if (f.alignment() == 0 || (f.alignment() & (f.alignment() - 1)) != 0) bug("alignment not a power of two");
    if (f.data_offset() % f.alignment() != 0) bug("data offset not aligned");

    std::set<std::string> keys;
    for (const auto& kv : f.metadata()) {
        if (kv.key.empty()) bug("empty key accepted");
        if (!keys.insert(kv.key).second) bug("duplicate key accepted: " + kv.key);
        if (f.find(kv.key) != &kv.value) bug("find() does not return the key's value");
        h += touch(kv.value, 0);
    }
    // The typed lookups either answer or throw basalt::Error for a wrong type (caught by the caller).
    for (const auto& kv : f.metadata()) {
        try {
            if (kv.value.type == gguf::ValueType::ARRAY) {
                if (kv.value.elem_type == gguf::ValueType::STRING) h += f.get_strings(kv.key)->size();
                if (kv.value.elem_type == gguf::ValueType::FLOAT32) h += f.get_floats(kv.key)->size();
                if (kv.value.elem_type != gguf::ValueType::ARRAY) h += f.get_ints(kv.key).has_value();
            } else if (kv.value.type == gguf::ValueType::STRING) {
                h += f.get_string(kv.key)->size();
            } else if (kv.value.type == gguf::ValueType::BOOL) {
                h += *f.get_bool(kv.key);
            } else {
                const double d = f.get_float(kv.key).value_or(0);
                uint64_t bits = 0;
                std::memcpy(&bits, &d, sizeof(bits));
                h += bits;
                h += f.get_int(kv.key).has_value();
            }
        } catch (const Error& e) {
            if (e.status() != BASALT_ERR_FORMAT) bug(std::string("lookup threw status ") + status_name(e.status()));
        }
    }

    std::set<std::string> names;
    std::vector<const gguf::TensorInfo*> by_offset;
    const uint64_t data_size = f.tensors().empty() ? 0 : size - f.data_offset();
    if (!f.tensors().empty() && f.data_offset() > size) bug("data section starts past the end");
    for (const auto& t : f.tensors()) {
        if (t.name.empty() || t.name.size() > 64) bug("tensor name length " + std::to_string(t.name.size()));
        if (!names.insert(t.name).second) bug("duplicate tensor name accepted: " + t.name);
        if (f.tensor(t.name) != &t) bug("tensor() does not find " + t.name);
        if (t.n_dims < 1 || t.n_dims > 4) bug("n_dims " + std::to_string(t.n_dims) + " accepted");
        const DtypeTraits* traits = dtype_traits(t.type);
        if (traits == nullptr) bug("unknown tensor type accepted");
        // Every product of dims (in any order, zeros counted as 1) fits int64.
        uint64_t span = 1;
        for (uint32_t d = 0; d < 4; ++d) {
            if (t.ne[d] < 0) bug("negative dim accepted");
            if (d >= t.n_dims && t.ne[d] != 1) bug("unused dim not 1");
            const uint64_t x = t.ne[d] == 0 ? 1 : static_cast<uint64_t>(t.ne[d]);
            if (span > static_cast<uint64_t>(INT64_MAX) / x) bug("shape of " + t.name + " overflows int64");
            span *= x;
        }
        if (t.ne[0] % traits->block_size != 0) bug("partial block accepted");
        const auto bytes = dtype_bytes(t.type, t.n_elements());
        if (!bytes || *bytes != t.n_bytes) bug("n_bytes inconsistent with the shape of " + t.name);
        if (t.offset % f.alignment() != 0) bug("misaligned offset accepted");
        if (t.offset > data_size || t.n_bytes > data_size - t.offset) bug("tensor " + t.name + " out of bounds");
        // Read every byte: under AddressSanitizer this proves tensor_data stays inside the buffer.
        const uint8_t* p = f.tensor_data(t);
        if (p < data || p + t.n_bytes > data + size) bug("tensor_data outside the buffer");
        for (uint64_t k = 0; k < t.n_bytes; ++k) h = h * 131 + p[k];
        if (t.n_bytes != 0) by_offset.push_back(&t);
    }
    std::sort(by_offset.begin(), by_offset.end(),
              [](const gguf::TensorInfo* a, const gguf::TensorInfo* b) { return a->offset < b->offset; });
    for (size_t k = 1; k < by_offset.size(); ++k) {
        if (by_offset[k - 1]->offset + by_offset[k - 1]->n_bytes > by_offset[k]->offset) {
            bug("overlapping tensors accepted: " + by_offset[k - 1]->name + " and " + by_offset[k]->name);
        }
    }
    return h;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    static volatile uint64_t sink = 0;
    try {
        const gguf::File f = gguf::File::parse(data, size, "fuzz");
        sink = sink + check_file(f, data, size);
    } catch (const Error& e) {
        // Only basalt::Error may escape; anything else (std::bad_alloc, std::length_error...) reaches libFuzzer
        // as an uncaught exception and is reported as a crash.
        if (e.status() != BASALT_ERR_FORMAT) bug(std::string("status ") + status_name(e.status()) + ": " + e.what());
        if (std::strncmp(e.what(), "fuzz: ", 6) != 0) bug(std::string("message without the source: ") + e.what());
    }
    return 0;
}
