// GGUF (v2, v3) reader and writer. The reader parses from (const uint8_t*, size_t), validates everything
// (magic, version, counts against the file size, string lengths, dims and element-count overflow, tensor
// offsets in range / aligned / non-overlapping, unknown types, duplicate keys and tensor names) and reports
// problems as basalt::Error(BASALT_ERR_FORMAT) naming the source, the field and the offending value. It
// never aborts and never reads outside the buffer.
#pragma once

#include <basalt/plugin_backend.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace basalt::gguf {

// Metadata value types, numbered as in the GGUF specification.
enum class ValueType : uint32_t {
    UINT8 = 0,
    INT8 = 1,
    UINT16 = 2,
    INT16 = 3,
    UINT32 = 4,
    INT32 = 5,
    FLOAT32 = 6,
    BOOL = 7,
    STRING = 8,
    ARRAY = 9,
    UINT64 = 10,
    INT64 = 11,
    FLOAT64 = 12,
};

// Returns "uint32", "string", "array", ... ("invalid" for unknown values).
const char* value_type_name(ValueType t) noexcept;

// One metadata value. Scalars use the matching field; arrays hold elements of `elem_type` (arrays nest).
// An array parsed from a file of scalars or strings keeps its elements encoded in the file image (a vocabulary's
// 262k tokens, scores and types would take 96 bytes each as Values): `packed` points at its first element and
// `items` is empty; it stays valid while the image does (as File's tensors do). An array built in memory (the
// writer) or one of arrays holds its elements in `items`. Read either form through array_size() / element() /
// string_at().
struct Value {
    ValueType type = ValueType::UINT8;
    uint64_t u = 0;                          // UINT8/16/32/64 and BOOL (0/1)
    int64_t i = 0;                           // INT8/16/32/64
    double f = 0;                            // FLOAT32/64
    std::string s;                           // STRING
    ValueType elem_type = ValueType::UINT8;  // ARRAY
    std::vector<Value> items;                // ARRAY built in memory, or of arrays
    const uint8_t* packed = nullptr;         // ARRAY parsed from an image: its first element's encoding
    uint64_t packed_count = 0;               // ... and its element count
    std::vector<uint32_t> packed_offsets;    // ... of STRING: each element's offset from `packed`

    // ARRAY: the number of elements (either form).
    uint64_t array_size() const noexcept;
    // ARRAY: element k (k < array_size()), a copy (decoded from the image for a packed array).
    Value element(uint64_t k) const;
    // ARRAY of STRING: element k's bytes (k < array_size()), borrowed from the image or the element.
    std::string_view string_at(uint64_t k) const;

    bool is_integer() const noexcept;
    bool is_float() const noexcept;
    // Integer value of any integer type; nullopt for other types or when it does not fit int64.
    std::optional<int64_t> as_int() const noexcept;
    // Numeric value of any integer or float type.
    std::optional<double> as_number() const noexcept;
};

struct KeyValue {
    std::string key;
    Value value;
};

struct TensorInfo {
    std::string name;
    uint32_t n_dims = 0;
    int64_t ne[4] = {1, 1, 1, 1};  // ne[0] contiguous
    basalt_dtype type = BASALT_DTYPE_F32;
    uint64_t offset = 0;  // relative to the data section
    uint64_t n_bytes = 0;
    uint64_t n_elements() const noexcept;
};

class File {
  public:
    // Parses a complete GGUF image. `source` names it in error messages (usually the path). The buffer
    // must outlive the File (tensor_data points into it). Throws basalt::Error(BASALT_ERR_FORMAT).
    static File parse(const uint8_t* data, size_t size, const std::string& source);

    uint32_t version() const noexcept { return version_; }
    uint64_t alignment() const noexcept { return alignment_; }
    uint64_t data_offset() const noexcept { return data_offset_; }
    const std::string& source() const noexcept { return source_; }

    const std::vector<KeyValue>& metadata() const noexcept { return metadata_; }
    const Value* find(std::string_view key) const noexcept;
    // Typed lookups: nullopt when absent; throw Error(FORMAT) naming the key when present with a wrong type.
    std::optional<int64_t> get_int(std::string_view key) const;
    std::optional<double> get_float(std::string_view key) const;
    std::optional<bool> get_bool(std::string_view key) const;
    std::optional<std::string> get_string(std::string_view key) const;
    // Array lookups (element type checked): nullopt when absent.
    std::optional<std::vector<std::string>> get_strings(std::string_view key) const;
    std::optional<std::vector<float>> get_floats(std::string_view key) const;
    std::optional<std::vector<int64_t>> get_ints(std::string_view key) const;

    const std::vector<TensorInfo>& tensors() const noexcept { return tensors_; }
    // Heap bytes of the parsed metadata and tensor list (not the image: arrays of scalars and strings stay in it).
    uint64_t host_bytes() const noexcept;
    const TensorInfo* tensor(std::string_view name) const noexcept;
    // Pointer to a tensor's bytes inside the parsed buffer (n_bytes long).
    const uint8_t* tensor_data(const TensorInfo& t) const noexcept { return base_ + data_offset_ + t.offset; }

  private:
    const uint8_t* base_ = nullptr;
    size_t size_ = 0;
    std::string source_;
    uint32_t version_ = 0;
    uint64_t alignment_ = 32;
    uint64_t data_offset_ = 0;
    std::vector<KeyValue> metadata_;
    std::vector<TensorInfo> tensors_;
};

// A read-only memory mapping of a whole file. Throws Error(IO / NOT_FOUND) naming the path.
class MappedFile {
  public:
    explicit MappedFile(const std::filesystem::path& path);
    ~MappedFile();
    MappedFile(const MappedFile&) = delete;
    MappedFile& operator=(const MappedFile&) = delete;
    const uint8_t* data() const noexcept { return data_; }
    size_t size() const noexcept { return size_; }
    const std::string& path() const noexcept { return path_; }
    // Drops this process's resident pages of the mapping (madvise MADV_DONTNEED on a read-only private file
    // mapping): the bytes stay in the page cache or on disk, and a later read faults them back in unchanged. For
    // pages nothing reads any more (weights a backend uploaded, or repacked into its own copy). Thread-safe.
    void release_resident() const noexcept;

  private:
    std::string path_;
    const uint8_t* data_ = nullptr;
    size_t size_ = 0;
};

// A memory-mapped, parsed GGUF file.
struct MappedGguf {
    std::unique_ptr<MappedFile> map;
    File file;
};
// Maps and parses path. Throws Error naming the path.
MappedGguf open(const std::filesystem::path& path);

// Builds a GGUF v3 file: metadata in insertion order, tensors aligned to `alignment` (general.alignment is
// written when it differs from 32).
class Writer {
  public:
    void set(const std::string& key, Value value);  // replaces an existing key
    void set_u32(const std::string& key, uint32_t v);
    void set_i32(const std::string& key, int32_t v);
    void set_f32(const std::string& key, float v);
    void set_bool(const std::string& key, bool v);
    void set_string(const std::string& key, const std::string& v);
    // Adds a tensor; `data` must hold dtype_bytes(type, elements) bytes and is copied.
    void add_tensor(const std::string& name, basalt_dtype type, const std::vector<int64_t>& ne, const void* data,
                    size_t n_bytes);
    // The same, taking the bytes (dtype_bytes(type, elements) of them) without a copy.
    void add_tensor(const std::string& name, basalt_dtype type, const std::vector<int64_t>& ne,
                    std::vector<uint8_t>&& data);
    // Serialises into bytes.
    std::vector<uint8_t> to_bytes() const;
    // Writes the file, streamed, through a temporary file beside path and a rename: a failure (Error(IO) naming the
    // path) leaves path as it was.
    void write(const std::filesystem::path& path) const;
    // Serialises piece by piece into `sink` (the header, then each tensor's padding and bytes), so a file of any
    // size is written without a second copy of its data; to_bytes and write use it.
    void stream(const std::function<void(const uint8_t* bytes, size_t n)>& sink) const;
    void set_alignment(uint64_t alignment) { alignment_ = alignment; }

  private:
    // The bytes before the data section (header, metadata, tensor infos, padding); each tensor's offset in the data
    // section and the section's size.
    std::vector<uint8_t> header(std::vector<uint64_t>& offsets, uint64_t& data_bytes) const;

    struct PendingTensor {
        std::string name;
        basalt_dtype type;
        std::vector<int64_t> ne;
        std::vector<uint8_t> data;
    };
    std::vector<KeyValue> metadata_;
    std::vector<PendingTensor> tensors_;
    uint64_t alignment_ = 32;
};

// Copies every metadata key of `from` into `to` (used by quantize to keep the model's metadata).
void copy_metadata(const File& from, Writer& to);

}  // namespace basalt::gguf
