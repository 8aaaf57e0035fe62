#include "model/gguf.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <unordered_set>

#include "model/dtype.hpp"
#include "support/error.hpp"
#include "support/heap-bytes.hpp"

namespace basalt::gguf {
namespace {

constexpr uint32_t kMagic = 0x46554747;  // "GGUF" read as a little-endian uint32
constexpr uint64_t kDefaultAlignment = 32;
constexpr uint32_t kMaxDims = 4;
constexpr size_t kMaxTensorName = 64;
constexpr size_t kMaxKeyLength = 65535;
constexpr int kMaxArrayDepth = 8;
// Counts are only bounded by the bytes left, and a parsed element takes far more memory than its encoding (96
// bytes for a 1-byte bool), so reserve at most this many up front; vectors grow past it as elements really parse.
constexpr uint64_t kMaxReserve = 4096;

// Bounds-checked little-endian reader over the file image. Every read names what it reads for errors.
class Cursor {
  public:
    Cursor(const uint8_t* data, size_t size, const std::string& source) : data_(data), size_(size), source_(source) {}

    size_t pos() const noexcept { return pos_; }
    size_t remaining() const noexcept { return size_ - pos_; }

    template <typename... Args>
    [[noreturn]] void error(fmt::format_string<Args...> format, Args&&... args) const {
        fail(BASALT_ERR_FORMAT, "{}: {}", source_, fmt::format(format, std::forward<Args>(args)...));
    }

    void need(uint64_t n, std::string_view what) const {
        if (n > remaining()) {
            error("{} needs {} bytes at offset {}, but only {} remain (truncated file?)", what, n, pos_, remaining());
        }
    }

    template <typename T>
    T read(std::string_view what) {
        need(sizeof(T), what);
        T v;
        std::memcpy(&v, data_ + pos_, sizeof(T));
        pos_ += sizeof(T);
        return v;
    }

    // The image at the cursor (for values kept encoded in it) and a skip past bytes already checked by need().
    const uint8_t* here() const noexcept { return data_ + pos_; }
    void skip(uint64_t n) noexcept { pos_ += static_cast<size_t>(n); }
    void rewind(size_t pos) noexcept { pos_ = pos; }

    std::string read_string(std::string_view what, uint64_t max_len = UINT64_MAX) {
        const auto len = read<uint64_t>(what);
        if (len > max_len) error("{} has length {} (at most {} allowed)", what, len, max_len);
        need(len, what);
        std::string s(reinterpret_cast<const char*>(data_ + pos_), static_cast<size_t>(len));
        pos_ += static_cast<size_t>(len);
        return s;
    }

  private:
    const uint8_t* data_;
    size_t size_;
    size_t pos_ = 0;
    const std::string& source_;
};

size_t scalar_size(ValueType t) {
    switch (t) {
        case ValueType::UINT8:
        case ValueType::INT8:
        case ValueType::BOOL:
            return 1;
        case ValueType::UINT16:
        case ValueType::INT16:
            return 2;
        case ValueType::UINT32:
        case ValueType::INT32:
        case ValueType::FLOAT32:
            return 4;
        case ValueType::UINT64:
        case ValueType::INT64:
        case ValueType::FLOAT64:
            return 8;
        default:
            return 0;
    }
}

bool known_type(uint32_t t) {
    return t <= static_cast<uint32_t>(ValueType::FLOAT64);
}

// Smallest encoding of one element of type t (used to bound array counts by the bytes left).
uint64_t min_encoded_size(ValueType t) {
    if (t == ValueType::STRING) return 8;
    if (t == ValueType::ARRAY) return 12;
    return scalar_size(t);
}

Value read_value(Cursor& c, ValueType type, const std::string& what, int depth);

// An array of n scalars or strings, checked as read_value would (bool values, string lengths) and kept encoded
// in the image: v.packed and, for strings, each element's offset. False (the cursor back where it was) when the
// strings span more than a 32-bit offset can say; the caller then decodes the elements one by one.
bool read_packed(Cursor& c, Value& v, uint64_t n, const std::string& what) {
    const uint8_t* begin = c.here();
    const auto element = [&](uint64_t k) { return what + "[" + std::to_string(k) + "]"; };
    if (v.elem_type != ValueType::STRING) {
        const uint64_t size = scalar_size(v.elem_type);
        const uint64_t whole = std::min(n, c.remaining() / size);  // elements the bytes left hold
        if (v.elem_type == ValueType::BOOL) {
            for (uint64_t k = 0; k < whole; ++k) {
                if (begin[k] > 1) {
                    c.error("{} is a bool with value {} (expected 0 or 1)", element(k),
                            static_cast<unsigned>(begin[k]));
                }
            }
        }
        c.skip(whole * size);
        if (whole < n) c.need(size, element(whole));
        v.packed = begin;
        v.packed_count = n;
        return true;
    }
    const size_t start = c.pos();
    std::vector<uint32_t> offsets;
    offsets.reserve(static_cast<size_t>(std::min(n, c.remaining() / 8)));
    for (uint64_t k = 0; k < n; ++k) {
        const uint64_t at = c.pos() - start;
        if (at > UINT32_MAX) {
            c.rewind(start);
            return false;
        }
        if (c.remaining() < 8) c.need(8, element(k));
        uint64_t len = 0;
        std::memcpy(&len, c.here(), 8);
        c.skip(8);
        if (len > c.remaining()) c.need(len, element(k));
        c.skip(len);
        offsets.push_back(static_cast<uint32_t>(at));
    }
    v.packed = begin;
    v.packed_count = n;
    v.packed_offsets = std::move(offsets);
    return true;
}

Value read_value(Cursor& c, ValueType type, const std::string& what, int depth) {
    Value v;
    v.type = type;
    switch (type) {
        case ValueType::UINT8:
            v.u = c.read<uint8_t>(what);
            break;
        case ValueType::INT8:
            v.i = c.read<int8_t>(what);
            break;
        case ValueType::UINT16:
            v.u = c.read<uint16_t>(what);
            break;
        case ValueType::INT16:
            v.i = c.read<int16_t>(what);
            break;
        case ValueType::UINT32:
            v.u = c.read<uint32_t>(what);
            break;
        case ValueType::INT32:
            v.i = c.read<int32_t>(what);
            break;
        case ValueType::UINT64:
            v.u = c.read<uint64_t>(what);
            break;
        case ValueType::INT64:
            v.i = c.read<int64_t>(what);
            break;
        case ValueType::FLOAT32:
            v.f = c.read<float>(what);
            break;
        case ValueType::FLOAT64:
            v.f = c.read<double>(what);
            break;
        case ValueType::BOOL: {
            const auto b = c.read<uint8_t>(what);
            if (b > 1) c.error("{} is a bool with value {} (expected 0 or 1)", what, b);
            v.u = b;
            break;
        }
        case ValueType::STRING:
            v.s = c.read_string(what);
            break;
        case ValueType::ARRAY: {
            if (depth >= kMaxArrayDepth) c.error("{} nests arrays deeper than {}", what, kMaxArrayDepth);
            const auto et = c.read<uint32_t>(what + " element type");
            if (!known_type(et)) c.error("{} has unknown element type {}", what, et);
            v.elem_type = static_cast<ValueType>(et);
            const auto n = c.read<uint64_t>(what + " element count");
            const uint64_t min_size = min_encoded_size(v.elem_type);
            if (n > c.remaining() / min_size) {
                c.error("{} claims {} elements of type {}, more than the {} bytes left can hold", what, n,
                        value_type_name(v.elem_type), c.remaining());
            }
            if (v.elem_type != ValueType::ARRAY && read_packed(c, v, n, what)) break;
            v.items.reserve(static_cast<size_t>(std::min(n, kMaxReserve)));
            for (uint64_t k = 0; k < n; ++k) {
                v.items.push_back(read_value(c, v.elem_type, what + "[" + std::to_string(k) + "]", depth + 1));
            }
            break;
        }
    }
    return v;
}

[[noreturn]] void wrong_type(const std::string& source, std::string_view key, const Value& v, const char* expected) {
    fail(BASALT_ERR_FORMAT, "{}: metadata '{}' has type {}{}, expected {}", source, key, value_type_name(v.type),
         v.type == ValueType::ARRAY ? std::string(" of ") + value_type_name(v.elem_type) : std::string(), expected);
}

uint64_t align_up(uint64_t x, uint64_t a) {
    return (x + a - 1) / a * a;
}

}  // namespace

const char* value_type_name(ValueType t) noexcept {
    switch (t) {
        case ValueType::UINT8:
            return "uint8";
        case ValueType::INT8:
            return "int8";
        case ValueType::UINT16:
            return "uint16";
        case ValueType::INT16:
            return "int16";
        case ValueType::UINT32:
            return "uint32";
        case ValueType::INT32:
            return "int32";
        case ValueType::FLOAT32:
            return "float32";
        case ValueType::BOOL:
            return "bool";
        case ValueType::STRING:
            return "string";
        case ValueType::ARRAY:
            return "array";
        case ValueType::UINT64:
            return "uint64";
        case ValueType::INT64:
            return "int64";
        case ValueType::FLOAT64:
            return "float64";
    }
    return "invalid";
}

bool Value::is_integer() const noexcept {
    switch (type) {
        case ValueType::UINT8:
        case ValueType::INT8:
        case ValueType::UINT16:
        case ValueType::INT16:
        case ValueType::UINT32:
        case ValueType::INT32:
        case ValueType::UINT64:
        case ValueType::INT64:
            return true;
        default:
            return false;
    }
}

uint64_t Value::array_size() const noexcept {
    return packed != nullptr ? packed_count : items.size();
}

std::string_view Value::string_at(uint64_t k) const {
    if (packed == nullptr) return items[static_cast<size_t>(k)].s;
    const uint8_t* p = packed + packed_offsets[static_cast<size_t>(k)];
    uint64_t len = 0;
    std::memcpy(&len, p, sizeof(len));
    return {reinterpret_cast<const char*>(p + sizeof(len)), static_cast<size_t>(len)};
}

Value Value::element(uint64_t k) const {
    if (packed == nullptr) return items[static_cast<size_t>(k)];
    if (elem_type == ValueType::STRING) {
        Value v;
        v.type = ValueType::STRING;
        v.s = std::string(string_at(k));
        return v;
    }
    // The element was checked when the array was parsed: decode it from its bytes.
    static const std::string kElement = "array element";
    const size_t size = scalar_size(elem_type);
    Cursor c(packed + k * size, size, kElement);
    return read_value(c, elem_type, kElement, 1);
}

bool Value::is_float() const noexcept {
    return type == ValueType::FLOAT32 || type == ValueType::FLOAT64;
}

std::optional<int64_t> Value::as_int() const noexcept {
    if (!is_integer()) return std::nullopt;
    if (type == ValueType::INT8 || type == ValueType::INT16 || type == ValueType::INT32 || type == ValueType::INT64) {
        return i;
    }
    if (u > static_cast<uint64_t>(INT64_MAX)) return std::nullopt;
    return static_cast<int64_t>(u);
}

std::optional<double> Value::as_number() const noexcept {
    if (is_float()) return f;
    if (auto v = as_int()) return static_cast<double>(*v);
    if (type == ValueType::UINT64) return static_cast<double>(u);
    return std::nullopt;
}

uint64_t TensorInfo::n_elements() const noexcept {
    uint64_t n = 1;
    for (uint32_t d = 0; d < n_dims; ++d) n *= static_cast<uint64_t>(ne[d]);
    return n;
}

File File::parse(const uint8_t* data, size_t size, const std::string& source) {
    File f;
    f.base_ = data;
    f.size_ = size;
    f.source_ = source;
    if (data == nullptr && size != 0) fail(BASALT_ERR_INVALID_ARGUMENT, "{}: no data", source);
    Cursor c(data, size, f.source_);
    if (size == 0) c.error("file is empty (not a GGUF file)");

    const auto magic = c.read<uint32_t>("magic");
    if (magic != kMagic) {
        char shown[5] = {0, 0, 0, 0, 0};
        std::memcpy(shown, &magic, 4);
        for (char& ch : shown) {
            if (ch != 0 && (ch < 0x20 || ch > 0x7e)) ch = '?';
        }
        c.error("bad magic 0x{:08x} ('{}'), expected 'GGUF' (not a GGUF file)", magic, shown);
    }
    f.version_ = c.read<uint32_t>("version");
    if (f.version_ == 1) c.error("GGUF version 1 is not supported (re-convert the model; versions 2 and 3 are)");
    if (f.version_ != 2 && f.version_ != 3) {
        if ((f.version_ & 0xffffu) == 0 && f.version_ != 0) {
            c.error("version 0x{:08x} looks big-endian; only little-endian GGUF is supported", f.version_);
        }
        c.error("unsupported GGUF version {} (supported: 2, 3)", f.version_);
    }
    const auto n_tensors = c.read<uint64_t>("tensor count");
    const auto n_kv = c.read<uint64_t>("metadata count");
    // Smallest encodings: a key-value is key length (8) + 1 byte key + type (4) + 1 byte value; a tensor info
    // is name length (8) + 1 byte name + n_dims (4) + one dim (8) + type (4) + offset (8).
    if (n_kv > c.remaining() / 14) {
        c.error("metadata count {} cannot fit in the {} bytes of the file", n_kv, size);
    }
    if (n_tensors > c.remaining() / 33) {
        c.error("tensor count {} cannot fit in the {} bytes of the file", n_tensors, size);
    }

    std::unordered_set<std::string> keys;
    f.metadata_.reserve(static_cast<size_t>(std::min(n_kv, kMaxReserve)));
    for (uint64_t k = 0; k < n_kv; ++k) {
        const std::string label = "metadata #" + std::to_string(k);
        std::string key = c.read_string(label + " key", kMaxKeyLength);
        if (key.empty()) c.error("{} has an empty key", label);
        const std::string what = "metadata '" + key + "'";
        if (!keys.insert(key).second) c.error("duplicate metadata key '{}'", key);
        const auto type = c.read<uint32_t>(what + " type");
        if (!known_type(type)) c.error("{} has unknown value type {}", what, type);
        Value v = read_value(c, static_cast<ValueType>(type), what, 0);
        f.metadata_.push_back({std::move(key), std::move(v)});
    }

    if (const Value* a = f.find("general.alignment")) {
        if (!a->is_integer())
            c.error("metadata 'general.alignment' has type {}, expected uint32", value_type_name(a->type));
        const auto av = a->as_int();  // nullopt only for uint64 values above INT64_MAX
        if (!av || *av <= 0 || (*av & (*av - 1)) != 0 || *av > (1 << 30)) {
            c.error("metadata 'general.alignment' = {} is not a power of two between 1 and 2^30",
                    av ? std::to_string(*av) : std::to_string(a->u));
        }
        f.alignment_ = static_cast<uint64_t>(*av);
    } else {
        f.alignment_ = kDefaultAlignment;
    }

    std::unordered_set<std::string> names;
    f.tensors_.reserve(static_cast<size_t>(std::min(n_tensors, kMaxReserve)));
    for (uint64_t t = 0; t < n_tensors; ++t) {
        TensorInfo ti;
        const std::string label = "tensor #" + std::to_string(t);
        ti.name = c.read_string(label + " name", UINT64_MAX);
        if (ti.name.empty()) c.error("{} has an empty name", label);
        if (ti.name.size() > kMaxTensorName) {
            c.error("{} name is {} bytes long (at most {} allowed)", label, ti.name.size(), kMaxTensorName);
        }
        const std::string what = "tensor '" + ti.name + "'";
        if (!names.insert(ti.name).second) c.error("duplicate tensor name '{}'", ti.name);
        ti.n_dims = c.read<uint32_t>(what + " n_dims");
        if (ti.n_dims == 0 || ti.n_dims > kMaxDims)
            c.error("{} has n_dims {} (expected 1..{})", what, ti.n_dims, kMaxDims);
        // Overflow checks count a zero dim as 1: a zero must not hide an overflowing product of the other dims
        // (strides multiply them in order), and the verdict must not depend on where the zero is.
        std::string shape;
        uint64_t span = 1;
        bool overflow = false;
        for (uint32_t d = 0; d < ti.n_dims; ++d) {
            const auto ne = c.read<uint64_t>(what + " dim");
            if (ne > static_cast<uint64_t>(INT64_MAX)) c.error("{} dim {} = {} is out of range", what, d, ne);
            ti.ne[d] = static_cast<int64_t>(ne);
            shape += (d == 0 ? "" : ", ") + std::to_string(ne);
            const uint64_t x = std::max<uint64_t>(ne, 1);
            if (span > static_cast<uint64_t>(INT64_MAX) / x) overflow = true;
            span *= x;
        }
        if (overflow) c.error("{} shape [{}] overflows: the element count exceeds 2^63 - 1", what, shape);
        const auto type = c.read<uint32_t>(what + " type");
        const DtypeTraits* traits = dtype_traits(static_cast<int32_t>(type));
        if (traits == nullptr) c.error("{} has unknown or retired type id {}", what, type);
        ti.type = static_cast<basalt_dtype>(type);
        if (ti.ne[0] % traits->block_size != 0) {
            c.error("{} row length {} is not a multiple of the {} block size {}", what, ti.ne[0], traits->name,
                    traits->block_size);
        }
        const auto block_size = static_cast<uint64_t>(traits->block_size);
        const uint64_t span_blocks = span / block_size + (span % block_size != 0 ? 1 : 0);
        const auto bytes = dtype_bytes(ti.type, ti.n_elements());  // fits when the span's bytes fit
        if (span_blocks > UINT64_MAX / traits->type_size || !bytes) {
            c.error("{} shape [{}] of {} spans more than 2^64 bytes", what, shape, traits->name);
        }
        ti.n_bytes = *bytes;
        ti.offset = c.read<uint64_t>(what + " offset");
        if (ti.offset % f.alignment_ != 0) {
            c.error("{} offset {} is not a multiple of the alignment {}", what, ti.offset, f.alignment_);
        }
        f.tensors_.push_back(std::move(ti));
    }

    f.data_offset_ = align_up(c.pos(), f.alignment_);
    if (f.tensors_.empty()) return f;  // vocab-only files may end before the padding
    if (f.data_offset_ > size) {
        c.error("data section starts at {} but the file has only {} bytes (truncated file?)", f.data_offset_, size);
    }
    const uint64_t data_size = size - f.data_offset_;
    std::vector<const TensorInfo*> by_offset;
    by_offset.reserve(f.tensors_.size());
    for (const auto& ti : f.tensors_) {
        if (ti.offset > data_size || ti.n_bytes > data_size - ti.offset) {
            c.error("tensor '{}' data [{}, +{}) lies outside the {}-byte data section (truncated file?)", ti.name,
                    ti.offset, ti.n_bytes, data_size);
        }
        by_offset.push_back(&ti);
    }
    // Stable, so that tensors at the same offset are reported in file order.
    std::stable_sort(by_offset.begin(), by_offset.end(),
                     [](const TensorInfo* a, const TensorInfo* b) { return a->offset < b->offset; });
    // Compare each non-empty tensor with the previous non-empty one (the one ending last so far): an empty tensor
    // occupies no bytes, and must not stand between two overlapping ones and hide their overlap.
    const TensorInfo* prev = nullptr;
    for (const TensorInfo* cur : by_offset) {
        if (cur->n_bytes == 0) continue;
        if (prev != nullptr && prev->offset + prev->n_bytes > cur->offset) {
            c.error("tensor '{}' data [{}, +{}) overlaps tensor '{}' at {}", prev->name, prev->offset, prev->n_bytes,
                    cur->name, cur->offset);
        }
        prev = cur;
    }
    return f;
}

const Value* File::find(std::string_view key) const noexcept {
    for (const auto& kv : metadata_) {
        if (kv.key == key) return &kv.value;
    }
    return nullptr;
}

std::optional<int64_t> File::get_int(std::string_view key) const {
    const Value* v = find(key);
    if (v == nullptr) return std::nullopt;
    auto i = v->as_int();
    if (!i) wrong_type(source_, key, *v, "an integer");
    return i;
}

std::optional<double> File::get_float(std::string_view key) const {
    const Value* v = find(key);
    if (v == nullptr) return std::nullopt;
    auto d = v->as_number();
    if (!d) wrong_type(source_, key, *v, "a number");
    return d;
}

std::optional<bool> File::get_bool(std::string_view key) const {
    const Value* v = find(key);
    if (v == nullptr) return std::nullopt;
    if (v->type != ValueType::BOOL) wrong_type(source_, key, *v, "bool");
    return v->u != 0;
}

std::optional<std::string> File::get_string(std::string_view key) const {
    const Value* v = find(key);
    if (v == nullptr) return std::nullopt;
    if (v->type != ValueType::STRING) wrong_type(source_, key, *v, "string");
    return v->s;
}

std::optional<std::vector<std::string>> File::get_strings(std::string_view key) const {
    const Value* v = find(key);
    if (v == nullptr) return std::nullopt;
    if (v->type != ValueType::ARRAY || v->elem_type != ValueType::STRING)
        wrong_type(source_, key, *v, "array of string");
    std::vector<std::string> out;
    out.reserve(v->array_size());
    for (uint64_t k = 0; k < v->array_size(); ++k) out.emplace_back(v->string_at(k));
    return out;
}

std::optional<std::vector<float>> File::get_floats(std::string_view key) const {
    const Value* v = find(key);
    if (v == nullptr) return std::nullopt;
    if (v->type != ValueType::ARRAY || (v->elem_type != ValueType::FLOAT32 && v->elem_type != ValueType::FLOAT64)) {
        wrong_type(source_, key, *v, "array of float32");
    }
    std::vector<float> out;
    out.reserve(v->array_size());
    for (uint64_t k = 0; k < v->array_size(); ++k) out.push_back(static_cast<float>(v->element(k).f));
    return out;
}

std::optional<std::vector<int64_t>> File::get_ints(std::string_view key) const {
    const Value* v = find(key);
    if (v == nullptr) return std::nullopt;
    if (v->type != ValueType::ARRAY) wrong_type(source_, key, *v, "array of integers");
    std::vector<int64_t> out;
    out.reserve(v->array_size());
    for (uint64_t k = 0; k < v->array_size(); ++k) {
        auto i = v->element(k).as_int();
        if (!i) wrong_type(source_, key, *v, "array of integers");
        out.push_back(*i);
    }
    return out;
}

namespace {

uint64_t value_heap_bytes(const Value& v) noexcept {
    uint64_t b = heap::of(v.s) + heap::of(v.items) + heap::of(v.packed_offsets);
    for (const Value& e : v.items) b += value_heap_bytes(e);
    return b;
}

}  // namespace

uint64_t File::host_bytes() const noexcept {
    uint64_t b = heap::of(metadata_) + heap::of(tensors_) + heap::of(source_);
    for (const KeyValue& kv : metadata_) b += heap::of(kv.key) + value_heap_bytes(kv.value);
    for (const TensorInfo& t : tensors_) b += heap::of(t.name);
    return b;
}

const TensorInfo* File::tensor(std::string_view name) const noexcept {
    for (const auto& t : tensors_) {
        if (t.name == name) return &t;
    }
    return nullptr;
}

namespace {

// What a path that is not a regular file is, for messages ("a directory", "a FIFO (named pipe)", ...).
const char* file_kind(mode_t mode) {
    if (S_ISDIR(mode)) return "a directory";
    if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
    if (S_ISSOCK(mode)) return "a socket";
    if (S_ISCHR(mode)) return "a character device";
    if (S_ISBLK(mode)) return "a block device";
    return "not a regular file";
}

}  // namespace

MappedFile::MappedFile(const std::filesystem::path& path) : path_(path.string()) {
    // The type first: open() on a FIFO blocks until a writer appears, so a model path naming one would hang.
    struct stat pre {};
    if (::stat(path_.c_str(), &pre) == 0 && !S_ISREG(pre.st_mode)) {
        fail(BASALT_ERR_IO, "{}: is {}, not a model file", path_, file_kind(pre.st_mode));
    }
    const int fd = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
        const int err = errno;
        fail(err == ENOENT ? BASALT_ERR_NOT_FOUND : BASALT_ERR_IO, "{}: cannot open: {}", path_, std::strerror(err));
    }
    struct stat st {};
    if (::fstat(fd, &st) != 0) {
        const int err = errno;
        ::close(fd);
        fail(BASALT_ERR_IO, "{}: cannot stat: {}", path_, std::strerror(err));
    }
    if (!S_ISREG(st.st_mode)) {  // replaced between the stat and the open
        ::close(fd);
        fail(BASALT_ERR_IO, "{}: is {}, not a model file", path_, file_kind(st.st_mode));
    }
    size_ = static_cast<size_t>(st.st_size);
    if (size_ > 0) {
        void* p = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
        if (p == MAP_FAILED) {
            const int err = errno;
            ::close(fd);
            fail(err == ENOMEM ? BASALT_ERR_OUT_OF_MEMORY : BASALT_ERR_IO, "{}: cannot map {} bytes: {}", path_, size_,
                 std::strerror(err));
        }
        data_ = static_cast<const uint8_t*>(p);
    }
    ::close(fd);
}

void MappedFile::release_resident() const noexcept {
#ifdef MADV_DONTNEED
    // Safe only because the mapping is PROT_READ and MAP_PRIVATE over a file: no page was ever written, so none
    // holds data the file does not.
    if (data_ != nullptr) ::madvise(const_cast<uint8_t*>(data_), size_, MADV_DONTNEED);
#endif
}

MappedFile::~MappedFile() {
    if (data_ != nullptr) ::munmap(const_cast<uint8_t*>(data_), size_);
}

MappedGguf open(const std::filesystem::path& path) {
    MappedGguf g;
    g.map = std::make_unique<MappedFile>(path);
    g.file = File::parse(g.map->data(), g.map->size(), g.map->path());
    return g;
}

// ---- writer ------------------------------------------------------------------------------------------------------

void Writer::set(const std::string& key, Value value) {
    for (auto& kv : metadata_) {
        if (kv.key == key) {
            kv.value = std::move(value);
            return;
        }
    }
    metadata_.push_back({key, std::move(value)});
}

void Writer::set_u32(const std::string& key, uint32_t v) {
    Value x;
    x.type = ValueType::UINT32;
    x.u = v;
    set(key, std::move(x));
}

void Writer::set_i32(const std::string& key, int32_t v) {
    Value x;
    x.type = ValueType::INT32;
    x.i = v;
    set(key, std::move(x));
}

void Writer::set_f32(const std::string& key, float v) {
    Value x;
    x.type = ValueType::FLOAT32;
    x.f = v;
    set(key, std::move(x));
}

void Writer::set_bool(const std::string& key, bool v) {
    Value x;
    x.type = ValueType::BOOL;
    x.u = v ? 1 : 0;
    set(key, std::move(x));
}

void Writer::set_string(const std::string& key, const std::string& v) {
    Value x;
    x.type = ValueType::STRING;
    x.s = v;
    set(key, std::move(x));
}

void Writer::add_tensor(const std::string& name, basalt_dtype type, const std::vector<int64_t>& ne, const void* data,
                        size_t n_bytes) {
    const auto* p = static_cast<const uint8_t*>(data);
    add_tensor(name, type, ne, std::vector<uint8_t>(p, p + n_bytes));
}

void Writer::add_tensor(const std::string& name, basalt_dtype type, const std::vector<int64_t>& ne,
                        std::vector<uint8_t>&& data) {
    const size_t n_bytes = data.size();
    if (ne.empty() || ne.size() > kMaxDims) fail(BASALT_ERR_INVALID_ARGUMENT, "tensor '{}': {} dims", name, ne.size());
    uint64_t n = 1;
    for (int64_t d : ne) {
        if (d < 0) fail(BASALT_ERR_INVALID_ARGUMENT, "tensor '{}': negative dim {}", name, d);
        n *= static_cast<uint64_t>(d);
    }
    const auto bytes = dtype_bytes(type, n);
    if (!bytes || *bytes != n_bytes) {
        fail(BASALT_ERR_INVALID_ARGUMENT, "tensor '{}': {} bytes given for {} elements of {}", name, n_bytes, n,
             dtype_name(type));
    }
    for (const auto& t : tensors_) {
        if (t.name == name) fail(BASALT_ERR_DUPLICATE, "tensor '{}' added twice", name);
    }
    tensors_.push_back({name, type, ne, std::move(data)});
}

namespace {

template <typename T>
void put(std::vector<uint8_t>& out, T v) {
    const auto* p = reinterpret_cast<const uint8_t*>(&v);
    out.insert(out.end(), p, p + sizeof(T));
}

void put_string(std::vector<uint8_t>& out, const std::string& s) {
    put<uint64_t>(out, s.size());
    out.insert(out.end(), s.begin(), s.end());
}

void put_value(std::vector<uint8_t>& out, const Value& v) {
    switch (v.type) {
        case ValueType::UINT8:
            put<uint8_t>(out, static_cast<uint8_t>(v.u));
            break;
        case ValueType::INT8:
            put<int8_t>(out, static_cast<int8_t>(v.i));
            break;
        case ValueType::UINT16:
            put<uint16_t>(out, static_cast<uint16_t>(v.u));
            break;
        case ValueType::INT16:
            put<int16_t>(out, static_cast<int16_t>(v.i));
            break;
        case ValueType::UINT32:
            put<uint32_t>(out, static_cast<uint32_t>(v.u));
            break;
        case ValueType::INT32:
            put<int32_t>(out, static_cast<int32_t>(v.i));
            break;
        case ValueType::UINT64:
            put<uint64_t>(out, v.u);
            break;
        case ValueType::INT64:
            put<int64_t>(out, v.i);
            break;
        case ValueType::FLOAT32:
            put<float>(out, static_cast<float>(v.f));
            break;
        case ValueType::FLOAT64:
            put<double>(out, v.f);
            break;
        case ValueType::BOOL:
            put<uint8_t>(out, v.u != 0 ? 1 : 0);
            break;
        case ValueType::STRING:
            put_string(out, v.s);
            break;
        case ValueType::ARRAY:
            put<uint32_t>(out, static_cast<uint32_t>(v.elem_type));
            put<uint64_t>(out, v.array_size());
            if (v.packed != nullptr && v.packed_count != 0) {
                // Kept encoded as the file had it: the same bytes.
                const uint64_t last = v.packed_count - 1;
                const uint64_t end = v.elem_type == ValueType::STRING
                                         ? v.packed_offsets.back() + sizeof(uint64_t) + v.string_at(last).size()
                                         : v.packed_count * scalar_size(v.elem_type);
                out.insert(out.end(), v.packed, v.packed + end);
                break;
            }
            for (uint64_t k = 0; k < v.array_size(); ++k) put_value(out, v.element(k));
            break;
    }
}

}  // namespace

std::vector<uint8_t> Writer::header(std::vector<uint64_t>& offsets, uint64_t& data_bytes) const {
    std::vector<uint8_t> out;
    std::vector<KeyValue> meta = metadata_;
    const bool has_alignment_key =
        std::any_of(meta.begin(), meta.end(), [](const KeyValue& kv) { return kv.key == "general.alignment"; });
    if (alignment_ != kDefaultAlignment && !has_alignment_key) {
        Value a;
        a.type = ValueType::UINT32;
        a.u = alignment_;
        meta.push_back({"general.alignment", a});
    }
    put<uint32_t>(out, kMagic);
    put<uint32_t>(out, 3);
    put<uint64_t>(out, tensors_.size());
    put<uint64_t>(out, meta.size());
    for (const auto& kv : meta) {
        put_string(out, kv.key);
        put<uint32_t>(out, static_cast<uint32_t>(kv.value.type));
        put_value(out, kv.value);
    }
    uint64_t offset = 0;
    offsets.clear();
    for (const auto& t : tensors_) {
        put_string(out, t.name);
        put<uint32_t>(out, static_cast<uint32_t>(t.ne.size()));
        for (int64_t d : t.ne) put<uint64_t>(out, static_cast<uint64_t>(d));
        put<uint32_t>(out, static_cast<uint32_t>(t.type));
        put<uint64_t>(out, offset);
        offsets.push_back(offset);
        offset = align_up(offset + t.data.size(), alignment_);
    }
    out.resize(align_up(out.size(), alignment_), 0);
    data_bytes = tensors_.empty() ? 0 : offset;
    return out;
}

void Writer::stream(const std::function<void(const uint8_t* bytes, size_t n)>& sink) const {
    std::vector<uint64_t> offsets;
    uint64_t data_bytes = 0;
    const std::vector<uint8_t> head = header(offsets, data_bytes);
    sink(head.data(), head.size());
    const std::vector<uint8_t> zeros(static_cast<size_t>(alignment_), 0);
    uint64_t at = 0;
    for (size_t k = 0; k < tensors_.size(); ++k) {
        sink(zeros.data(), static_cast<size_t>(offsets[k] - at));
        const auto& d = tensors_[k].data;
        sink(d.data(), d.size());
        at = offsets[k] + d.size();
    }
    sink(zeros.data(), static_cast<size_t>(data_bytes - at));
}

std::vector<uint8_t> Writer::to_bytes() const {
    std::vector<uint8_t> out;
    stream([&](const uint8_t* bytes, size_t n) { out.insert(out.end(), bytes, bytes + n); });
    return out;
}

void Writer::write(const std::filesystem::path& path) const {
    // Through a temporary file beside path and a rename, so a failure leaves path as it was.
    static std::atomic<uint64_t> counter{0};
    const std::string target = path.string();
    const std::string tmp = target + ".tmp-" + std::to_string(::getpid()) + "-" + std::to_string(counter++);
    const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd < 0) fail(BASALT_ERR_IO, "{}: cannot create: {}", target, std::strerror(errno));
    uint64_t done = 0;
    try {
        stream([&](const uint8_t* bytes, size_t n) {
            for (size_t at = 0; at < n;) {
                const ssize_t k = ::write(fd, bytes + at, n - at);
                if (k < 0 && errno == EINTR) continue;
                if (k <= 0) {
                    const int err = k < 0 ? errno : EIO;
                    fail(BASALT_ERR_IO, "{}: write failed after {} bytes: {}", target, done, std::strerror(err));
                }
                at += static_cast<size_t>(k);
                done += static_cast<uint64_t>(k);
            }
        });
    } catch (...) {  // a write error, or no memory for the header: the temporary file goes, path stays as it was
        ::close(fd);
        ::unlink(tmp.c_str());
        throw;
    }
    if (::close(fd) != 0) {
        const int err = errno;
        ::unlink(tmp.c_str());
        fail(BASALT_ERR_IO, "{}: write failed: {}", target, std::strerror(err));
    }
    if (std::rename(tmp.c_str(), target.c_str()) != 0) {
        const int err = errno;
        ::unlink(tmp.c_str());
        fail(BASALT_ERR_IO, "{}: cannot replace: {}", target, std::strerror(err));
    }
}

void copy_metadata(const File& from, Writer& to) {
    for (const auto& kv : from.metadata()) to.set(kv.key, kv.value);
}

}  // namespace basalt::gguf
