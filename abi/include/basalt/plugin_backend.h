/*
 * Basalt plugin ABI: the compute backend component kind.
 *
 * A backend enumerates devices, owns device buffers, and executes op graphs:
 * a plain C description of nodes (op, dtype, shape, strides, inputs, params).
 * The core builds graphs; the backend never sees a model. A backend says which
 * node it supports; a graph with an unsupported node fails naming the node.
 *
 * Arrays of ABI structs are arrays of pointers, so every element carries its
 * own struct_size.
 */
#ifndef BASALT_PLUGIN_BACKEND_H
#define BASALT_PLUGIN_BACKEND_H

#include "basalt/plugin.h"

BASALT_BEGIN_DECLS

/* Graph operations. Parameters of each op are documented at its value (ip = iparams, fp = fparams). */
typedef int32_t basalt_op;
enum {
    BASALT_OP_NONE = 0,
    BASALT_OP_GET_ROWS = 1,   /* out[i] = in0[in1[i]] (in1: I32 ids); dequantizes rows of in0 */
    BASALT_OP_MATMUL = 2,     /* out = in1 x in0^T: in0 weights [k, n] (any weight dtype), in1 activations [k, m] */
    BASALT_OP_ADD = 3,        /* out = in0 + in1 (in1 broadcast over rows) */
    BASALT_OP_MUL = 4,        /* out = in0 * in1 (in1 broadcast over rows) */
    BASALT_OP_SCALE = 5,      /* out = in0 * fp[0] */
    BASALT_OP_RMS_NORM = 6,   /* out = in0 / sqrt(mean(in0^2) + fp[0]) */
    BASALT_OP_LAYER_NORM = 7, /* out = (in0 - mean) / sqrt(var + fp[0]) */
    BASALT_OP_ROPE = 8,    /* in1: I32 positions; ip[0] mode (0 normal, 1 neox), ip[1] n_rot; fp[0] base, fp[1] scale */
    BASALT_OP_SOFTMAX = 9, /* row softmax of in0 * fp[0] */
    BASALT_OP_SILU = 10,
    BASALT_OP_GELU = 11,     /* tanh approximation */
    BASALT_OP_GELU_ERF = 12, /* exact (erf) */
    BASALT_OP_SWIGLU = 13,   /* out = silu(in0) * in1 */
    BASALT_OP_GEGLU = 14,    /* out = gelu(in0) * in1 */
    BASALT_OP_ATTENTION =
        15, /* q=in0, K cache=in1, V cache=in2, slot table=in3; ip: window, n_sinks; fp: scale, soft-cap */
    BASALT_OP_KV_WRITE = 16,   /* writes rows of in0 into cache in1 at slots in2 (I32) */
    BASALT_OP_MOE_TOPK = 17,   /* router logits in0 -> top ip[0] expert ids and softmax weights */
    BASALT_OP_MOE_MATMUL = 18, /* per-row expert matmul: experts in0 [k, n, e], activations in1, ids in2 */
    BASALT_OP_CAST = 19,       /* out = in0 converted to out's dtype */
    BASALT_OP_COPY = 20        /* out = in0 (strided copy) */
};

/* Opaque device buffer, created and destroyed by the backend that owns it. */
typedef struct basalt_buffer basalt_buffer;

/* A tensor of a graph: up to 4 dims, ne[0] contiguous (GGUF order), byte strides nb. */
typedef struct basalt_tensor {
    uint32_t struct_size;
    basalt_dtype dtype;
    int32_t n_dims;
    int32_t reserved0;
    int64_t ne[4];
    int64_t nb[4];
    basalt_buffer* buffer; /* NULL: an intermediate the backend places itself */
    uint64_t offset;       /* byte offset into buffer */
    const char* name;      /* borrowed, for error messages and profiles */
} basalt_tensor;

#define BASALT_MAX_NODE_INPUTS 8
#define BASALT_MAX_NODE_PARAMS 8

/* One node: op(inputs) -> output, tensors referenced by index into the graph's tensor array. */
typedef struct basalt_graph_node {
    uint32_t struct_size;
    basalt_op op;
    const char* name; /* borrowed, e.g. "blk.3.attn_q"; named in unsupported-node errors */
    int32_t output;
    int32_t n_inputs;
    int32_t inputs[BASALT_MAX_NODE_INPUTS];
    int32_t iparams[BASALT_MAX_NODE_PARAMS];
    float fparams[BASALT_MAX_NODE_PARAMS];
} basalt_graph_node;

/* A graph: nodes in execution order. All arrays borrowed for the call they are passed to. */
typedef struct basalt_graph {
    uint32_t struct_size;
    uint32_t reserved0;
    size_t n_tensors;
    const basalt_tensor* const* tensors;
    size_t n_nodes;
    const basalt_graph_node* const* nodes;
} basalt_graph;

/* Device types. */
typedef int32_t basalt_device_type;
enum {
    BASALT_DEVICE_CPU = 0,
    BASALT_DEVICE_GPU_INTEGRATED = 1,
    BASALT_DEVICE_GPU_DISCRETE = 2,
    BASALT_DEVICE_GPU_VIRTUAL = 3,
    BASALT_DEVICE_SOFTWARE = 4, /* e.g. Mesa lavapipe */
    BASALT_DEVICE_OTHER = 5
};

/* Filled by device_info; the caller sets struct_size and the backend writes only what fits. */
typedef struct basalt_device_info {
    uint32_t struct_size;
    basalt_device_type type;
    const char* name;        /* owned by the backend, valid until the plugin shuts down */
    uint64_t memory_total;   /* bytes, 0 when unknown */
    uint64_t memory_free;    /* bytes, 0 when unknown */
    uint64_t max_allocation; /* largest single buffer, 0 when unlimited */
} basalt_device_info;

/* Buffer usage hints for buffer_alloc. */
enum {
    BASALT_BUFFER_WEIGHTS = 1u << 0, /* written once, read by every graph */
    BASALT_BUFFER_KV = 1u << 1,      /* the KV cache */
    BASALT_BUFFER_IO = 1u << 2       /* inputs/outputs read and written by the host each step */
};

/*
 * Interface table of a backend component. Device enumeration is thread-safe.
 * A backend instance (from create) is used by one thread at a time.
 */
typedef struct basalt_backend_iface {
    uint32_t struct_size;
    uint32_t reserved0;

    /* Sets *out_count to the number of usable devices (0 is not an error). Thread-safe. */
    basalt_status (*device_count)(const basalt_host* host, size_t* out_count);
    /* Describes device `index` into *out (caller sets out->struct_size). Thread-safe. */
    basalt_status (*device_info)(size_t index, basalt_device_info* out);
    /* Creates an instance on device `index` configured by params (e.g. "threads"); caller owns it. */
    basalt_status (*create)(const basalt_host* host, size_t device, const basalt_params* params, void** out_backend);
    /* Destroys an instance and every buffer it still owns; NULL is ignored. */
    void (*destroy)(void* backend);
    /* Allocates a device buffer of `size` bytes; owned by the backend instance, freed with buffer_free. */
    basalt_status (*buffer_alloc)(void* backend, uint64_t size, uint32_t usage, basalt_buffer** out_buffer);
    /* Frees a buffer; NULL is ignored. */
    void (*buffer_free)(void* backend, basalt_buffer* buffer);
    /* Copies `size` host bytes from src (borrowed) into the buffer at offset. */
    basalt_status (*buffer_write)(void* backend, basalt_buffer* buffer, uint64_t offset, const void* src,
                                  uint64_t size);
    /* Copies `size` bytes from the buffer at offset into dst (borrowed). */
    basalt_status (*buffer_read)(void* backend, basalt_buffer* buffer, uint64_t offset, void* dst, uint64_t size);
    /* Sets *out_supported to non-zero when the node (with its tensors' dtypes and shapes) can run here. */
    basalt_status (*supports_node)(void* backend, const basalt_graph* graph, size_t node, int32_t* out_supported);
    /* Executes every node of the graph in order; fails naming the first unsupported or failing node. */
    basalt_status (*graph_compute)(void* backend, const basalt_graph* graph);
} basalt_backend_iface;

#define BASALT_BACKEND_IFACE_MIN_SIZE (offsetof(basalt_backend_iface, graph_compute) + sizeof(void*))

BASALT_END_DECLS

#endif /* BASALT_PLUGIN_BACKEND_H */
