// C API: writing GGUF files (models, control vectors) from f32 data, on the core's gguf::Writer and the reference
// quantizers basalt_model_quantize uses.
#include <basalt/basalt.h>

#include <algorithm>
#include <memory>
#include <string>
#include <unordered_set>
#include <vector>

#include "model/dtype.hpp"
#include "model/gguf.hpp"
#include "model/quantize.hpp"
#include "support/error.hpp"

using basalt::fail;
using basalt::guard;

struct basalt_gguf_writer {
    basalt::gguf::Writer writer;
    std::unordered_set<std::string> tensor_names;
};

namespace {

using basalt::gguf::Value;
using basalt::gguf::ValueType;

// llama.cpp's reader refuses names of GGML_MAX_NAME (64) bytes or more.
constexpr size_t kMaxTensorName = 63;
constexpr uint32_t kMaxDims = 4;
constexpr const char* kWritable = "f32, f16, bf16, q8_0, q4_0, q4_k, q6_k, mxfp4";

void check_key(const basalt_gguf_writer* writer, const char* key, const char* fn) {
    if (writer == nullptr || key == nullptr) fail(BASALT_ERR_INVALID_ARGUMENT, "{}: writer and key are required", fn);
    if (*key == '\0') fail(BASALT_ERR_INVALID_ARGUMENT, "{}: the key is empty", fn);
}

// Sets a value other than a uint32: general.alignment is the one key whose type the file layout depends on.
void set_value(basalt_gguf_writer* writer, const char* key, Value v) {
    if (std::strcmp(key, "general.alignment") == 0) {
        fail(BASALT_ERR_INVALID_ARGUMENT, "metadata 'general.alignment' must be a uint32, not {}",
             basalt::gguf::value_type_name(v.type));
    }
    writer->writer.set(key, std::move(v));
}

Value scalar(ValueType type) {
    Value v;
    v.type = type;
    return v;
}

Value array_of(ValueType elem_type, size_t n) {
    Value v;
    v.type = ValueType::ARRAY;
    v.elem_type = elem_type;
    v.items.resize(n, scalar(elem_type));
    return v;
}

}  // namespace

extern "C" {

basalt_status basalt_gguf_writer_create(basalt_gguf_writer** out) {
    return guard([&] {
        if (out == nullptr) fail(BASALT_ERR_INVALID_ARGUMENT, "basalt_gguf_writer_create: out is required");
        *out = std::make_unique<basalt_gguf_writer>().release();
    });
}

void basalt_gguf_writer_destroy(basalt_gguf_writer* writer) {
    delete writer;
}

basalt_status basalt_gguf_writer_set_u32(basalt_gguf_writer* writer, const char* key, uint32_t value) {
    return guard([&] {
        check_key(writer, key, "basalt_gguf_writer_set_u32");
        if (std::strcmp(key, "general.alignment") == 0) {
            if (value == 0 || (value & (value - 1)) != 0 || value > (1u << 30)) {
                fail(BASALT_ERR_INVALID_ARGUMENT,
                     "metadata 'general.alignment' = {} is not a power of two between 1 and 2^30", value);
            }
            writer->writer.set_alignment(value);
        }
        writer->writer.set_u32(key, value);
    });
}

basalt_status basalt_gguf_writer_set_i32(basalt_gguf_writer* writer, const char* key, int32_t value) {
    return guard([&] {
        check_key(writer, key, "basalt_gguf_writer_set_i32");
        Value v = scalar(ValueType::INT32);
        v.i = value;
        set_value(writer, key, std::move(v));
    });
}

basalt_status basalt_gguf_writer_set_f32(basalt_gguf_writer* writer, const char* key, float value) {
    return guard([&] {
        check_key(writer, key, "basalt_gguf_writer_set_f32");
        Value v = scalar(ValueType::FLOAT32);
        v.f = value;
        set_value(writer, key, std::move(v));
    });
}

basalt_status basalt_gguf_writer_set_bool(basalt_gguf_writer* writer, const char* key, int32_t value) {
    return guard([&] {
        check_key(writer, key, "basalt_gguf_writer_set_bool");
        Value v = scalar(ValueType::BOOL);
        v.u = value != 0 ? 1 : 0;
        set_value(writer, key, std::move(v));
    });
}

basalt_status basalt_gguf_writer_set_string(basalt_gguf_writer* writer, const char* key, const char* value) {
    return guard([&] {
        check_key(writer, key, "basalt_gguf_writer_set_string");
        if (value == nullptr) fail(BASALT_ERR_INVALID_ARGUMENT, "metadata '{}': the string is NULL", key);
        Value v = scalar(ValueType::STRING);
        v.s = value;
        set_value(writer, key, std::move(v));
    });
}

basalt_status basalt_gguf_writer_set_array_string(basalt_gguf_writer* writer, const char* key,
                                                  const char* const* values, size_t n) {
    return guard([&] {
        check_key(writer, key, "basalt_gguf_writer_set_array_string");
        if (values == nullptr && n > 0) fail(BASALT_ERR_INVALID_ARGUMENT, "metadata '{}': {} strings at NULL", key, n);
        Value v = array_of(ValueType::STRING, n);
        for (size_t i = 0; i < n; ++i) {
            if (values[i] == nullptr) fail(BASALT_ERR_INVALID_ARGUMENT, "metadata '{}': string {} is NULL", key, i);
            v.items[i].s = values[i];
        }
        set_value(writer, key, std::move(v));
    });
}

basalt_status basalt_gguf_writer_set_array_i32(basalt_gguf_writer* writer, const char* key, const int32_t* values,
                                               size_t n) {
    return guard([&] {
        check_key(writer, key, "basalt_gguf_writer_set_array_i32");
        if (values == nullptr && n > 0) fail(BASALT_ERR_INVALID_ARGUMENT, "metadata '{}': {} values at NULL", key, n);
        Value v = array_of(ValueType::INT32, n);
        for (size_t i = 0; i < n; ++i) v.items[i].i = values[i];
        set_value(writer, key, std::move(v));
    });
}

basalt_status basalt_gguf_writer_set_array_bool(basalt_gguf_writer* writer, const char* key, const int32_t* values,
                                                size_t n) {
    return guard([&] {
        check_key(writer, key, "basalt_gguf_writer_set_array_bool");
        if (values == nullptr && n > 0) fail(BASALT_ERR_INVALID_ARGUMENT, "metadata '{}': {} values at NULL", key, n);
        Value v = array_of(ValueType::BOOL, n);
        for (size_t i = 0; i < n; ++i) v.items[i].u = values[i] != 0 ? 1 : 0;
        set_value(writer, key, std::move(v));
    });
}

basalt_status basalt_gguf_writer_set_array_f32(basalt_gguf_writer* writer, const char* key, const float* values,
                                               size_t n) {
    return guard([&] {
        check_key(writer, key, "basalt_gguf_writer_set_array_f32");
        if (values == nullptr && n > 0) fail(BASALT_ERR_INVALID_ARGUMENT, "metadata '{}': {} values at NULL", key, n);
        Value v = array_of(ValueType::FLOAT32, n);
        for (size_t i = 0; i < n; ++i) v.items[i].f = values[i];
        set_value(writer, key, std::move(v));
    });
}

namespace {

// A tensor's shape checked for the writer (name, dims, element count, a type it can write in whole blocks, a name not
// added yet): its element count and converted bytes.
struct CheckedTensor {
    std::vector<int64_t> shape;
    uint64_t count = 1;
    uint64_t bytes = 0;
};

CheckedTensor check_tensor(const basalt_gguf_writer* writer, const std::string& n, basalt_dtype type, const int64_t* ne,
                           uint32_t n_dims) {
    if (n.empty() || n.size() > kMaxTensorName) {
        fail(BASALT_ERR_INVALID_ARGUMENT, "tensor name '{}' is {} bytes long (1 to {} allowed)", n, n.size(),
             kMaxTensorName);
    }
    if (n_dims == 0 || n_dims > kMaxDims)
        fail(BASALT_ERR_INVALID_ARGUMENT, "tensor '{}': {} dimensions (1 to {} allowed)", n, n_dims, kMaxDims);
    CheckedTensor t;
    t.shape.assign(ne, ne + n_dims);
    for (uint32_t d = 0; d < n_dims; ++d) {
        if (ne[d] < 1) fail(BASALT_ERR_INVALID_ARGUMENT, "tensor '{}': ne[{}] = {} (each must be >= 1)", n, d, ne[d]);
        if (__builtin_mul_overflow(t.count, static_cast<uint64_t>(ne[d]), &t.count))
            fail(BASALT_ERR_INVALID_ARGUMENT, "tensor '{}': the element count overflows", n);
    }
    const basalt::DtypeTraits* traits = basalt::dtype_traits(type);
    if (traits == nullptr) fail(BASALT_ERR_INVALID_ARGUMENT, "tensor '{}': unknown type id {}", n, type);
    if (!basalt::can_quantize(type)) {
        fail(BASALT_ERR_UNSUPPORTED, "tensor '{}': cannot write type {} (supported: {})", n, traits->name, kWritable);
    }
    if (ne[0] % traits->block_size != 0) {
        fail(BASALT_ERR_INVALID_ARGUMENT, "tensor '{}': rows of {} elements are not whole {} blocks of {}", n, ne[0],
             traits->name, traits->block_size);
    }
    if (writer->tensor_names.count(n) != 0) fail(BASALT_ERR_DUPLICATE, "tensor '{}' added twice", n);
    const auto bytes = basalt::dtype_bytes(type, t.count);
    if (!bytes) fail(BASALT_ERR_INVALID_ARGUMENT, "tensor '{}': {} elements of {} overflow", n, t.count, traits->name);
    t.bytes = *bytes;
    return t;
}

void keep(basalt_gguf_writer* writer, const std::string& n, basalt_dtype type, const CheckedTensor& t,
          std::vector<uint8_t>&& out) {
    writer->tensor_names.insert(n);
    try {
        writer->writer.add_tensor(n, type, t.shape, std::move(out));
    } catch (...) {
        writer->tensor_names.erase(n);
        throw;
    }
}

}  // namespace

basalt_status basalt_gguf_writer_add_tensor_f32(basalt_gguf_writer* writer, const char* name, basalt_dtype type,
                                                const int64_t* ne, uint32_t n_dims, const float* data,
                                                size_t n_values) {
    return guard([&] {
        if (writer == nullptr || name == nullptr || ne == nullptr || data == nullptr) {
            fail(BASALT_ERR_INVALID_ARGUMENT,
                 "basalt_gguf_writer_add_tensor_f32: writer, name, ne and data are required");
        }
        const std::string n = name;
        const CheckedTensor t = check_tensor(writer, n, type, ne, n_dims);
        if (t.count != n_values) {
            fail(BASALT_ERR_INVALID_ARGUMENT, "tensor '{}': {} values given for a shape of {} elements", n, n_values,
                 t.count);
        }
        std::vector<uint8_t> out(static_cast<size_t>(t.bytes));
        basalt::quantize_row(type, data, out.data(), static_cast<int64_t>(t.count));
        keep(writer, n, type, t, std::move(out));
    });
}

basalt_status basalt_gguf_writer_add_tensor_rows(basalt_gguf_writer* writer, const char* name, basalt_dtype type,
                                                 const int64_t* ne, uint32_t n_dims, basalt_gguf_rows_fn fill,
                                                 void* user_data) {
    return guard([&] {
        if (writer == nullptr || name == nullptr || ne == nullptr || fill == nullptr) {
            fail(BASALT_ERR_INVALID_ARGUMENT,
                 "basalt_gguf_writer_add_tensor_rows: writer, name, ne and fill are required");
        }
        const std::string n = name;
        const CheckedTensor t = check_tensor(writer, n, type, ne, n_dims);
        const int64_t row = ne[0], rows = static_cast<int64_t>(t.count / static_cast<uint64_t>(row));
        const uint64_t row_bytes = t.bytes / static_cast<uint64_t>(rows);
        // Batches of about 4 MiB of floats (at least one row).
        const int64_t batch = std::max<int64_t>(1, (int64_t{1} << 20) / row);
        std::vector<uint8_t> out(static_cast<size_t>(t.bytes));
        std::vector<float> values(static_cast<size_t>(std::min(batch, rows) * row));
        for (int64_t r = 0; r < rows; r += batch) {
            const int64_t k = std::min(batch, rows - r);
            if (fill(user_data, r, k, values.data()) != 0) {
                fail(BASALT_ERR_CANCELLED, "tensor '{}': the fill callback stopped at row {} of {}", n, r, rows);
            }
            basalt::quantize_row(type, values.data(), out.data() + static_cast<uint64_t>(r) * row_bytes, k * row);
        }
        keep(writer, n, type, t, std::move(out));
    });
}

size_t basalt_gguf_writer_tensor_count(const basalt_gguf_writer* writer) {
    return writer == nullptr ? 0 : writer->tensor_names.size();
}

basalt_status basalt_gguf_writer_write(const basalt_gguf_writer* writer, const char* path) {
    return guard([&] {
        if (writer == nullptr || path == nullptr)
            fail(BASALT_ERR_INVALID_ARGUMENT, "basalt_gguf_writer_write: writer and path are required");
        if (*path == '\0') fail(BASALT_ERR_INVALID_ARGUMENT, "basalt_gguf_writer_write: the path is empty");
        writer->writer.write(path);
    });
}

}  // extern "C"
