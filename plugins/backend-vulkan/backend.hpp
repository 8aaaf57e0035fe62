// backend-vulkan: one backend instance = one logical device with one compute queue, its buffers (split into
// chunks that respect maxMemoryAllocationSize), pipelines from the embedded SPIR-V, and the per-graph recording
// state (descriptor pool, command buffer, arena for intermediates). The class's members are defined by concern:
// device.cpp (device, queue, limits), memory.cpp (chunks, buffers, staging, arena), pipelines.cpp (layouts,
// pipeline cache, pipelines), placement.cpp (tensor views, node checks, intermediates, bindings), recording.cpp
// (dispatches, command buffers kept and replayed), compute.cpp (graph execution), profile.cpp (timings); the
// ops are in ops-*.cpp with their table in op-table.cpp, the ABI glue in plugin.cpp.
#pragma once

#include <basalt/plugin_backend.h>
#include <basalt/sdk/graph-key.hpp>
#include <basalt/sdk/node-view.hpp>
#include <basalt/sdk/plugin.hpp>

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <unordered_set>
#include <vector>

#include "vk-api.hpp"

// The opaque ABI handle: a byte range backed by one or more device buffers. Chunks overlap by `overlap` bytes
// so that any tensor no larger than the overlap lies whole inside one chunk; host writes go to every chunk
// that covers the range.
struct basalt_buffer {
    struct Chunk {
        VkBuffer buf = VK_NULL_HANDLE;
        VkDeviceMemory mem = VK_NULL_HANDLE;
        uint64_t begin = 0;
        uint64_t size = 0;
        uint8_t* mapped = nullptr;  // non-null when the memory is host-visible (and coherent)
    };
    uint64_t size = 0;
    std::vector<Chunk> chunks;
};

namespace basalt::vk {

// A tensor's place for a shader: the bound range (aligned) and the tensor's byte offset inside it.
struct Binding {
    VkBuffer buf = VK_NULL_HANDLE;
    uint64_t offset = 0;
    uint64_t range = 0;
};

struct Placed {
    Binding bind;
    uint32_t delta = 0;  // byte offset of the tensor start inside bind
};

// A tensor as an op sees it, with its index in the graph and its block geometry.
struct TensorView : sdk::TensorLayout {
    int32_t index = -1;
    int64_t block = 1;
    int64_t block_bytes = 4;
    uint64_t extent = 0;  // bytes from the start to the end of the last row
};

class Backend;

// What an op's check and record functions see (label, fail, expect_type, expect_same_shape, ip, fp: the SDK's).
struct NodeCtx : sdk::NodeView<TensorView> {
    Backend* be = nullptr;
    const basalt_graph* graph = nullptr;
    // RMS_NORM only: the MUL by a weight row that follows it, recorded in the same dispatch (set by compute()).
    const NodeCtx* fused_mul = nullptr;
};

// An op's Vulkan implementation (op-table.cpp, generated from ops.def).
struct OpImpl {
    basalt_op op;
    int min_inputs;
    int max_inputs;
    void (*check)(const NodeCtx& c);
    void (*record)(NodeCtx& c);
};
const OpImpl* op_impl(basalt_op op) noexcept;
using sdk::op_name;
std::string type_name(basalt_dtype t);
// Whether the shaders dequantize this type (weights of MATMUL / MOE_MATMUL, sources of GET_ROWS and CAST).
bool type_readable(basalt_dtype t) noexcept;

class Backend {
  public:
    Backend(const basalt_host* host, size_t device);
    ~Backend();
    Backend(const Backend&) = delete;
    Backend& operator=(const Backend&) = delete;

    basalt_buffer* alloc(uint64_t size, bool single_chunk);
    void free(basalt_buffer* b);
    void write(basalt_buffer* b, uint64_t offset, const void* src, uint64_t size);
    void read(basalt_buffer* b, uint64_t offset, void* dst, uint64_t size);
    bool owns(basalt_buffer* b) const { return buffers_.count(b) != 0; }

    // Graph entry points (throw sdk::error naming the node).
    bool supports(const basalt_graph* g, size_t node, std::string* why);
    void compute(const basalt_graph* g);

    // Used by the ops while recording.
    Placed place(const TensorView& v, uint64_t begin = 0, uint64_t bytes = UINT64_MAX) const;
    bool placeable(const TensorView& v, std::string* why) const;
    // Records one dispatch: shader by registry name, workgroup size, bindings (unused: a dummy), push constants
    // (`pc_bytes` bytes, the rest of the 128-byte block zero).
    void dispatch(const NodeCtx& c, const char* shader, uint32_t wg, const std::vector<Binding>& binds, const void* pc,
                  size_t pc_bytes, uint32_t gx, uint32_t gy, uint32_t gz);
    // Splits `count` workgroups over x (<= 65535) and z; the shader folds them back and skips the excess.
    static void split_groups(uint64_t count, uint32_t& gx, uint32_t& gz);
    uint32_t subgroup_size() const noexcept { return subgroup_; }
    uint64_t max_range() const noexcept { return max_range_; }
    // Where the chunks of a buffer larger than one allocation start (every 3/4 chunk, on 256 bytes), and the bytes
    // of which any range lies wholly within one chunk (the overlap): a GET_ROWS table larger than a chunk is read in
    // windows of that size.
    uint64_t chunk_step() const noexcept { return chunk_cap_ / 4 * 3 / 256 * 256; }
    uint64_t chunk_window() const noexcept { return chunk_cap_ - chunk_step(); }
    uint32_t row_wg() const noexcept { return row_wg_; }
    // Whether a workgroup of row_wg() invocations is exactly one subgroup (the subgroup size is fixed): the
    // matmul shaders then reduce without a barrier (their _sg variants).
    bool one_subgroup() const noexcept { return one_subgroup_; }
    // Whether ATTENTION may use lanes over keys (attention_keys.comp; BASALT_VK_ATTENTION_KEYS=0: never).
    bool attention_keys() const noexcept { return attention_keys_; }
    // Whether GATED_DELTA may take its chunked form (gated_delta_chunked.comp; BASALT_VK_DELTA_CHUNKS=0: never, the
    // recurrent form for every node, whatever the hint).
    bool delta_chunks() const noexcept { return delta_chunks_; }

  private:
    struct Pipeline {
        VkPipeline pipe = VK_NULL_HANDLE;
    };
    // A command buffer recorded for one graph shape, with the descriptor sets it binds: replayed as is when a
    // graph with the same key comes again (decode steps, equal prefill chunks).
    struct Recording {
        sdk::GraphKey key;
        VkCommandBuffer cmd = VK_NULL_HANDLE;
        VkDescriptorPool pool = VK_NULL_HANDLE;
        uint32_t cap = 0;   // descriptor sets the pool holds
        uint32_t used = 0;  // descriptor sets allocated so far
        uint64_t last_use = 0;
    };
    void make_recording(Recording& r, uint32_t sets);
    void destroy_recording(Recording& r) noexcept;
    // Drops every kept recording (a buffer or the arena they bind went away).
    void forget_recordings() noexcept;
    void record_graph(const basalt_graph* g, std::vector<NodeCtx>& ctx, const std::vector<bool>& fused, Recording& r);
    // Runs a kept recording whose key is `key` (empty: none); false when there is none.
    bool replay(const sdk::GraphKey& key);
    // Records a checked, planned graph (kept under `key` unless it is empty, else in scratch_), submits, waits.
    void record_and_submit(const basalt_graph* g, std::vector<NodeCtx>& ctx, const std::vector<bool>& fused,
                           sdk::GraphKey key);
    // Marks the nodes recorded by another node's dispatch (fused MULs) or not at all (reshaping COPYs).
    void mark_fused(const basalt_graph* g, std::vector<NodeCtx>& ctx, std::vector<bool>& fused,
                    std::vector<bool>& reshaped) const;
    // Plans the arena offsets of the graph's intermediates (inter_offset_) and grows the arena to their peak.
    void place_intermediates(const basalt_graph* g, const std::vector<NodeCtx>& ctx, const std::vector<bool>& reshaped);
    NodeCtx check_node(const basalt_graph* g, size_t i);
    TensorView make_view(const basalt_graph* g, const basalt_graph_node* n, size_t ni, int32_t index,
                         const char* role) const;
    VkPipeline pipeline(const char* shader, uint32_t wg);
    void read_limits();
    void make_layouts();
    void make_commands();
    void ensure_queries(size_t nn);
    void read_profile(const basalt_graph* g);
    void print_stats() const noexcept;
    void ensure_arena(uint64_t bytes);
    uint32_t memory_type(uint32_t bits, VkMemoryPropertyFlags want) const;
    void make_chunk(basalt_buffer::Chunk& c, uint64_t size, bool prefer_host);
    void destroy_chunk(basalt_buffer::Chunk& c);
    void submit_and_wait(VkCommandBuffer cmd);
    void begin_commands(VkCommandBuffer cmd, bool one_time);
    void load_pipeline_cache();
    void save_pipeline_cache() noexcept;
    void staging_copy(const basalt_buffer::Chunk& c, uint64_t off, uint8_t* host, uint64_t size, bool upload);

    const basalt_host* host_;
    Api& a_;
    const DeviceDesc& desc_;
    VkDevice dev_ = VK_NULL_HANDLE;
    VkQueue queue_ = VK_NULL_HANDLE;
    VkPhysicalDeviceMemoryProperties mem_{};
    uint64_t max_alloc_ = 0;
    uint64_t max_range_ = 0;
    uint64_t chunk_cap_ = 0;
    uint64_t offset_align_ = 16;
    uint32_t subgroup_ = 8;
    uint32_t row_wg_ = 32;
    bool one_subgroup_ = false;
    bool attention_keys_ = true;
    bool delta_chunks_ = true;
    bool fusion_ = true;       // fuse RMS_NORM -> MUL chains (BASALT_VK_FUSE=0 turns it off)
    std::string cache_path_;   // VkPipelineCache file ("" when there is no cache directory)
    size_t cache_loaded_ = 0;  // pipelines_ size when the cache was loaded or last saved
    VkDescriptorSetLayout set_layout_ = VK_NULL_HANDLE;
    VkPipelineLayout layout_ = VK_NULL_HANDLE;
    VkPipelineCache cache_ = VK_NULL_HANDLE;
    std::map<std::pair<std::string, uint32_t>, VkPipeline> pipelines_;
    VkCommandPool pool_ = VK_NULL_HANDLE;
    VkCommandBuffer cmd_ = VK_NULL_HANDLE;
    VkFence fence_ = VK_NULL_HANDLE;
    Recording scratch_;                                 // graphs that are not kept (profiling, reuse off, unkeyable)
    Recording* rec_ = nullptr;                          // where dispatch() records
    std::vector<std::unique_ptr<Recording>> recorded_;  // kept, least recently used evicted past kMaxRecordings
    uint64_t use_clock_ = 0;
    bool reuse_ = true;        // BASALT_VK_REUSE=0: record every graph afresh
    bool stats_ = false;       // BASALT_VK_STATS=1: print recording counts when destroyed
    uint64_t n_graphs_ = 0;    // graph_compute calls
    uint64_t n_recorded_ = 0;  // command buffers recorded (kept or not)
    uint64_t n_replayed_ = 0;  // graphs run from a kept command buffer
    basalt_buffer::Chunk staging_;
    basalt_buffer::Chunk dummy_;
    basalt_buffer::Chunk arena_;
    std::unordered_set<basalt_buffer*> buffers_;
    // Per-graph state while recording.
    std::vector<uint64_t> inter_offset_;
    std::vector<const basalt_graph_node*> profile_nodes_;
    bool profile_ = false;
    VkQueryPool queries_ = VK_NULL_HANDLE;
    uint32_t query_cap_ = 0;
    std::map<std::string, std::pair<double, int>> profile_totals_;
    uint64_t profile_graphs_ = 0;
};

}  // namespace basalt::vk
