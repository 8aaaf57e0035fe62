// C API: loading models, describing them, metadata, and the memory plan.
#include <basalt/basalt.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <optional>
#include <string>

#include "api/out-struct.hpp"
#include "exec/pooling.hpp"
#include "graph/arch.hpp"
#include "model/dtype.hpp"
#include "model/memory-plan.hpp"
#include "model/model-path.hpp"
#include "model/model.hpp"
#include "model/quantize-model.hpp"
#include "support/error.hpp"
#include "support/log.hpp"

using basalt::fail;
using basalt::guard;
using basalt::api::write_sized;

namespace {

// Copies src into the caller's struct, only as far as its struct_size reaches.

std::string render(const basalt::gguf::Value& v) {
    using basalt::gguf::ValueType;
    switch (v.type) {
        case ValueType::STRING:
            return v.s;
        case ValueType::BOOL:
            return v.u != 0 ? "true" : "false";
        case ValueType::FLOAT32:
        case ValueType::FLOAT64:
            return fmt::format("{}", v.f);
        case ValueType::ARRAY: {
            std::string s = fmt::format("[{} {}]", v.array_size(), basalt::gguf::value_type_name(v.elem_type));
            return s;
        }
        default: {
            if (auto i = v.as_int()) return std::to_string(*i);
            return std::to_string(v.u);
        }
    }
}

// The element of array metadata `key` at index, checked; `what` names the caller.
basalt::gguf::Value array_element(const basalt_model* model, const char* key, size_t index, const char* what) {
    if (model == nullptr || key == nullptr) fail(BASALT_ERR_INVALID_ARGUMENT, "{}: model and key are required", what);
    const auto* v = model->gguf.file.find(key);
    if (v == nullptr) fail(BASALT_ERR_NOT_FOUND, "{}: no metadata key '{}'", model->gguf.file.source(), key);
    if (v->type != basalt::gguf::ValueType::ARRAY) {
        fail(BASALT_ERR_INVALID_ARGUMENT, "{}: metadata '{}' is a {}, not an array", model->gguf.file.source(), key,
             basalt::gguf::value_type_name(v->type));
    }
    if (index >= v->array_size()) {
        fail(BASALT_ERR_INVALID_ARGUMENT, "{}: index {} is past the end of metadata '{}' ({} elements)",
             model->gguf.file.source(), index, key, v->array_size());
    }
    return v->element(index);
}

// The model's host tables: its parsed metadata, the image's metadata pages (parsing reads them all; arrays stay
// encoded there), and its tokenizer (built now when it was not yet, as a generation builds it to read its prompt;
// none for a vocabulary the tokenizer refuses).
uint64_t host_tables_bytes(const basalt_model& model) {
    uint64_t bytes = model.gguf.file.host_bytes() + model.gguf.file.data_offset();
    try {
        bytes += model.tok().host_bytes();
    } catch (const basalt::Error&) {
    }
    return bytes;
}

}  // namespace

extern "C" {

basalt_status basalt_model_load(basalt_runtime* /*runtime*/, const char* path, const basalt_model_params* params,
                                basalt_model** out) {
    return guard([&] {
        if (path == nullptr || out == nullptr)
            fail(BASALT_ERR_INVALID_ARGUMENT, "basalt_model_load: path and out are required");
        if (params != nullptr && params->struct_size < sizeof(uint32_t)) {
            fail(BASALT_ERR_INVALID_ARGUMENT, "basalt_model_params.struct_size {} is too small", params->struct_size);
        }
        auto m = std::make_unique<basalt_model>();
        const std::string file = basalt::resolve_model_path(path).string();
        m->gguf = basalt::gguf::open(file);
        m->hparams = basalt::read_hparams(m->gguf.file);
        basalt::log::info("loaded '{}': {} ({} layers, {} tensors)", file, m->hparams.arch, m->hparams.n_layer,
                          m->gguf.file.tensors().size());
        *out = m.release();
    });
}

void basalt_model_free(basalt_model* model) {
    delete model;
}

basalt_status basalt_model_describe(const basalt_model* model, basalt_model_info* out) {
    return guard([&] {
        if (model == nullptr || out == nullptr)
            fail(BASALT_ERR_INVALID_ARGUMENT, "basalt_model_describe: model and out are required");
        const auto& h = model->hparams;
        basalt_model_info info{};
        info.struct_size = sizeof(info);
        info.gguf_version = model->gguf.file.version();
        info.arch = h.arch.c_str();
        info.name = h.name.c_str();
        info.n_layer = h.n_layer;
        info.n_embd = h.n_embd;
        info.n_head = h.n_head;
        info.n_head_kv = h.n_head_kv;
        info.head_dim_k = h.head_dim_k;
        info.head_dim_v = h.head_dim_v;
        info.n_ff = h.n_ff;
        info.n_ctx_train = h.n_ctx_train;
        info.n_vocab = h.n_vocab;
        info.n_expert = h.n_expert;
        info.n_expert_used = h.n_expert_used;
        info.sliding_window = h.sliding_window;
        for (const auto& t : model->gguf.file.tensors()) {
            info.n_params += t.n_elements();
            info.weight_bytes += t.n_bytes;
        }
        info.file_bytes = model->gguf.map->size();
        info.n_tensors = static_cast<uint32_t>(model->gguf.file.tensors().size());
        info.supported = h.known_arch ? 1 : 0;
        const basalt::Pooling pooling = basalt::model_pooling(h);
        info.pooling = basalt::embed_refusal(h, pooling).empty() ? static_cast<int32_t>(pooling) + 1 : 0;
        info.n_cls_out = h.n_cls_out;
        info.rope_scaling = h.rope_description.c_str();
        info.n_layer_recurrent =
            static_cast<uint32_t>(std::count(h.layer_recurrent.begin(), h.layer_recurrent.end(), true));
        write_sized(out, info);
    });
}

basalt_status basalt_model_decoder_layers(const basalt_model* model, uint32_t* out) {
    return guard([&] {
        if (model == nullptr || out == nullptr)
            fail(BASALT_ERR_INVALID_ARGUMENT, "basalt_model_decoder_layers: model and out are required");
        *out = model->hparams.encoder_decoder ? model->hparams.n_layer_dec : 0;
    });
}

basalt_status basalt_model_meta(const basalt_model* model, const char* key, const char** out) {
    return guard([&] {
        if (model == nullptr || key == nullptr || out == nullptr) {
            fail(BASALT_ERR_INVALID_ARGUMENT, "basalt_model_meta: model, key and out are required");
        }
        const auto* v = model->gguf.file.find(key);
        if (v == nullptr) fail(BASALT_ERR_NOT_FOUND, "{}: no metadata key '{}'", model->gguf.file.source(), key);
        std::lock_guard lock(model->meta_mutex);
        auto& slot = model->meta_text[key];
        slot = render(*v);
        *out = slot.c_str();
    });
}

basalt_status basalt_model_meta_array_size(const basalt_model* model, const char* key, size_t* out_n) {
    return guard([&] {
        if (model == nullptr || key == nullptr || out_n == nullptr) {
            fail(BASALT_ERR_INVALID_ARGUMENT, "basalt_model_meta_array_size: model, key and out_n are required");
        }
        const auto* v = model->gguf.file.find(key);
        if (v == nullptr) fail(BASALT_ERR_NOT_FOUND, "{}: no metadata key '{}'", model->gguf.file.source(), key);
        if (v->type != basalt::gguf::ValueType::ARRAY) {
            fail(BASALT_ERR_INVALID_ARGUMENT, "{}: metadata '{}' is a {}, not an array", model->gguf.file.source(), key,
                 basalt::gguf::value_type_name(v->type));
        }
        *out_n = v->array_size();
    });
}

basalt_status basalt_model_meta_array_string(const basalt_model* model, const char* key, size_t index, const char** out,
                                             size_t* out_len) {
    return guard([&] {
        if (out == nullptr) fail(BASALT_ERR_INVALID_ARGUMENT, "basalt_model_meta_array_string: out is required");
        auto e = array_element(model, key, index, "basalt_model_meta_array_string");
        if (e.type != basalt::gguf::ValueType::STRING) {
            fail(BASALT_ERR_INVALID_ARGUMENT, "{}: metadata '{}' is an array of {}, not of strings",
                 model->gguf.file.source(), key, basalt::gguf::value_type_name(e.type));
        }
        // The file keeps it without a NUL: a NUL-terminated copy, kept with the model.
        std::lock_guard lock(model->meta_mutex);
        const std::string& text = model->meta_elements.try_emplace({key, index}, std::move(e.s)).first->second;
        *out = text.c_str();
        if (out_len != nullptr) *out_len = text.size();
    });
}

basalt_status basalt_model_meta_array_number(const basalt_model* model, const char* key, size_t index, double* out) {
    return guard([&] {
        if (out == nullptr) fail(BASALT_ERR_INVALID_ARGUMENT, "basalt_model_meta_array_number: out is required");
        const auto e = array_element(model, key, index, "basalt_model_meta_array_number");
        const auto n =
            e.type == basalt::gguf::ValueType::BOOL ? std::optional<double>(static_cast<double>(e.u)) : e.as_number();
        if (!n) {
            fail(BASALT_ERR_INVALID_ARGUMENT, "{}: metadata '{}' is an array of {}, not of numbers",
                 model->gguf.file.source(), key, basalt::gguf::value_type_name(e.type));
        }
        *out = *n;
    });
}

basalt_status basalt_model_check_runnable(const basalt_model* model) {
    return guard([&] {
        if (model == nullptr) fail(BASALT_ERR_INVALID_ARGUMENT, "basalt_model_check_runnable: model is required");
        basalt::check_runnable(model->gguf.file, model->hparams);
    });
}

size_t basalt_model_tensor_count(const basalt_model* model) {
    return model == nullptr ? 0 : model->gguf.file.tensors().size();
}

basalt_status basalt_model_tensor_info(const basalt_model* model, size_t index, basalt_model_tensor* out) {
    return guard([&] {
        if (model == nullptr || out == nullptr) {
            fail(BASALT_ERR_INVALID_ARGUMENT, "basalt_model_tensor_info: model and out are required");
        }
        const auto& ts = model->gguf.file.tensors();
        if (index >= ts.size())
            fail(BASALT_ERR_INVALID_ARGUMENT, "tensor index {} out of range (count {})", index, ts.size());
        const auto& t = ts[index];
        basalt_model_tensor info{};
        info.struct_size = sizeof(info);
        info.type = t.type;
        info.name = t.name.c_str();
        info.n_dims = t.n_dims;
        for (int d = 0; d < 4; ++d) info.ne[d] = t.ne[d];
        info.n_bytes = t.n_bytes;
        info.offset = model->gguf.file.data_offset() + t.offset;
        write_sized(out, info);
    });
}

basalt_status basalt_model_plan(const basalt_model* model, const basalt_plan_params* params, basalt_memory_plan* out) {
    return guard([&] {
        if (model == nullptr || out == nullptr)
            fail(BASALT_ERR_INVALID_ARGUMENT, "basalt_model_plan: model and out are required");
        basalt::PlanRequest req;
        if (params != nullptr) {
            if (params->struct_size < offsetof(basalt_plan_params, v_type) + sizeof(params->v_type)) {
                fail(BASALT_ERR_INVALID_ARGUMENT, "basalt_plan_params.struct_size {} is too small",
                     params->struct_size);
            }
            req.n_ctx = params->n_ctx;
            if (params->n_batch != 0) req.n_batch = params->n_batch;
            if (BASALT_HAS_FIELD(params, basalt_plan_params, n_seq_max) && params->n_seq_max != 0) {
                req.n_seq_max = params->n_seq_max;
            }
            if (BASALT_HAS_FIELD(params, basalt_plan_params, kv_residual)) req.kv_residual = params->kv_residual;
            for (auto [in, dst, which] :
                 {std::tuple{params->k_type, &req.k_type, "K"}, std::tuple{params->v_type, &req.v_type, "V"}}) {
                if (in < 0) continue;
                const basalt::DtypeTraits* t = basalt::dtype_traits(in);
                if (t == nullptr) fail(BASALT_ERR_INVALID_ARGUMENT, "{} cache type id {} is unknown", which, in);
                *dst = in;
            }
        }
        req.host_bytes = host_tables_bytes(*model);
        const basalt::MemoryPlan p = basalt::plan_memory(model->gguf.file, model->hparams, req);
        write_sized(out, basalt::api::to_c(p));
    });
}

basalt_status basalt_dtype_from_name(const char* name, int32_t* out) {
    return guard([&] {
        if (name == nullptr || out == nullptr)
            fail(BASALT_ERR_INVALID_ARGUMENT, "basalt_dtype_from_name: name and out are required");
        const basalt::DtypeTraits* t = basalt::dtype_from_name(name);
        if (t == nullptr)
            fail(BASALT_ERR_INVALID_ARGUMENT,
                 "unknown tensor type '{}' (e.g. f32, f16, bf16, q8_0, q4_0, q4_k, q6_k, mxfp4)", name);
        *out = t->id;
    });
}

basalt_status basalt_model_quantize(const char* in_path, const char* out_path, basalt_dtype type,
                                    basalt_quantize_report* report) {
    return guard([&] {
        if (in_path == nullptr || out_path == nullptr) {
            fail(BASALT_ERR_INVALID_ARGUMENT, "basalt_model_quantize: in_path and out_path are required");
        }
        if (basalt::dtype_traits(type) == nullptr) fail(BASALT_ERR_INVALID_ARGUMENT, "unknown tensor type id {}", type);
        // The input may be a shipped model's name ("target", "draft") as for basalt_model_load.
        const basalt::QuantizeReport r =
            basalt::quantize_model(basalt::resolve_model_path(in_path).string(), out_path, type);
        if (report != nullptr) {
            basalt_quantize_report out{};
            out.struct_size = sizeof(out);
            out.tensors_quantized = r.quantized;
            out.tensors_fallback = r.fallback;
            out.tensors_kept = r.kept;
            out.bytes_in = r.bytes_in;
            out.bytes_out = r.bytes_out;
            write_sized(report, out);
        }
    });
}

const char* basalt_dtype_name(int32_t dtype) {
    return basalt::dtype_name(dtype);
}

}  // extern "C"
