/*
 * Basalt plugin ABI: the steering hook component kind.
 *
 * A steering hook sees the residual stream after chosen layers. In ADD mode it
 * supplies a vector per layer that the backend adds (scaled) on the device, with
 * no round trip per token. In OBSERVE mode it receives the activations (copied
 * to the host) to build steering vectors, e.g. from contrastive prompt pairs.
 */
#ifndef BASALT_PLUGIN_STEERING_H
#define BASALT_PLUGIN_STEERING_H

#include "basalt/plugin.h"

BASALT_BEGIN_DECLS

enum {
    BASALT_STEERING_ADD = 1u << 0,    /* the hook provides vectors to add */
    BASALT_STEERING_OBSERVE = 1u << 1 /* the hook wants activations */
};

/* Residual-stream rows after one layer: n_tokens rows of n_embd floats. All borrowed for the call. */
typedef struct basalt_activations {
    uint32_t struct_size;
    uint32_t layer;
    size_t n_tokens;
    size_t n_embd;
    const float* data;
    const int32_t* positions;
    const int32_t* seq_ids;
} basalt_activations;

typedef struct basalt_steering_iface {
    uint32_t struct_size;
    uint32_t reserved0;

    /* Creates a hook for a model with n_layers and n_embd (e.g. the "vector" plugin: "file" = path, repeatable,
     * "scale" = "2.0", "layers" = "4-5"); a hook that cannot fit the model (a vector of another n_embd, a layer
     * past n_layers) is refused here, naming both figures. Caller owns *out_hook. Thread-safe. */
    basalt_status (*create)(const basalt_host* host, uint32_t n_layers, uint32_t n_embd, const basalt_params* params,
                            void** out_hook);
    /* Destroys a hook; NULL is ignored. */
    void (*destroy)(void* hook);
    /* Sets *out_mode (BASALT_STEERING_*) for `layer`; 0 means the layer is not hooked. */
    basalt_status (*layer_mode)(void* hook, uint32_t layer, uint32_t* out_mode);
    /* Optional (required for ADD). Writes the layer's vector (n_embd floats) into out and its scale; the host adds
     * scale * vector to the residual stream at the output of `layer` (counted from 0, after its feed-forward
     * residual add), for the rows of the requests that use this hook. Called when a request is admitted, not per
     * token: the host keeps the vectors on the device. */
    basalt_status (*vector)(void* hook, uint32_t layer, float* out, size_t n_embd, float* out_scale);
    /* Optional (required for OBSERVE). Receives the layer's activations. */
    basalt_status (*observe)(void* hook, const basalt_activations* activations);
} basalt_steering_iface;

#define BASALT_STEERING_IFACE_MIN_SIZE (offsetof(basalt_steering_iface, layer_mode) + sizeof(void*))

BASALT_END_DECLS

#endif /* BASALT_PLUGIN_STEERING_H */
