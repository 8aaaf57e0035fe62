// Command-buffer recording: per graph shape a Recording (command buffer + descriptor pool) into which every
// node's dispatches are recorded with a compute->compute barrier after each; kept recordings (up to
// kMaxRecordings, least recently used evicted) are replayed as they are when a graph with the same key comes
// again, others are recorded into the scratch recording for one submission.
#include <algorithm>
#include <cstring>
#include <memory>
#include <vector>

#include "backend.hpp"
#include "common.hpp"
#include "shaders/common/push-constants.h"

namespace basalt::vk {
namespace {

constexpr size_t kMaxRecordings = 8;  // command buffers kept per backend instance (least recently used evicted)

}  // namespace

void Backend::make_recording(Recording& r, uint32_t sets) {
    const uint32_t cap = std::max<uint32_t>(sets, 256);
    VkDescriptorPoolSize ps{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, cap * kBindings};
    VkDescriptorPoolCreateInfo pi{};
    pi.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO;
    pi.maxSets = cap;
    pi.poolSizeCount = 1;
    pi.pPoolSizes = &ps;
    vk_check(a_.vkCreateDescriptorPool(dev_, &pi, nullptr, &r.pool), "vkCreateDescriptorPool");
    r.cap = cap;
    r.used = 0;
    VkCommandBufferAllocateInfo ca{};
    ca.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO;
    ca.commandPool = pool_;
    ca.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
    ca.commandBufferCount = 1;
    const VkResult res = a_.vkAllocateCommandBuffers(dev_, &ca, &r.cmd);
    if (res != VK_SUCCESS) {
        destroy_recording(r);
        vk_check(res, "vkAllocateCommandBuffers");
    }
}

void Backend::destroy_recording(Recording& r) noexcept {
    if (r.cmd != VK_NULL_HANDLE) a_.vkFreeCommandBuffers(dev_, pool_, 1, &r.cmd);
    if (r.pool != VK_NULL_HANDLE) a_.vkDestroyDescriptorPool(dev_, r.pool, nullptr);
    r = Recording{};
}

void Backend::forget_recordings() noexcept {
    for (auto& r : recorded_) destroy_recording(*r);
    recorded_.clear();
}

void Backend::split_groups(uint64_t count, uint32_t& gx, uint32_t& gz) {
    count = std::max<uint64_t>(count, 1);
    if (count <= 65535) {
        gx = static_cast<uint32_t>(count);
        gz = 1;
        return;
    }
    gz = static_cast<uint32_t>((count + 65534) / 65535);
    gx = static_cast<uint32_t>((count + gz - 1) / gz);
}

void Backend::dispatch(const NodeCtx& c, const char* shader, uint32_t wg, const std::vector<Binding>& binds,
                       const void* pc, size_t pc_bytes, uint32_t gx, uint32_t gy, uint32_t gz) {
    if (rec_ == nullptr || rec_->used >= rec_->cap) {
        c.fail(BASALT_ERR_INTERNAL,
               "descriptor pool exhausted (" + std::to_string(rec_ != nullptr ? rec_->cap : 0) + " sets)");
    }
    VkCommandBuffer cmd = rec_->cmd;
    VkPipeline p = pipeline(shader, wg);
    VkDescriptorSetAllocateInfo ai{};
    ai.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO;
    ai.descriptorPool = rec_->pool;
    ai.descriptorSetCount = 1;
    ai.pSetLayouts = &set_layout_;
    VkDescriptorSet set = VK_NULL_HANDLE;
    vk_check(a_.vkAllocateDescriptorSets(dev_, &ai, &set), "vkAllocateDescriptorSets");
    ++rec_->used;
    VkDescriptorBufferInfo info[kBindings];
    VkWriteDescriptorSet w[kBindings];
    for (uint32_t i = 0; i < kBindings; ++i) {
        const bool used = i < binds.size() && binds[i].buf != VK_NULL_HANDLE;
        info[i].buffer = used ? binds[i].buf : dummy_.buf;
        info[i].offset = used ? binds[i].offset : 0;
        info[i].range = used ? binds[i].range : dummy_.size;
        w[i] = VkWriteDescriptorSet{};
        w[i].sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET;
        w[i].dstSet = set;
        w[i].dstBinding = i;
        w[i].descriptorCount = 1;
        w[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
        w[i].pBufferInfo = &info[i];
    }
    a_.vkUpdateDescriptorSets(dev_, kBindings, w, 0, nullptr);
    uint8_t push[push::kPushBytes] = {};
    std::memcpy(push, pc, std::min(pc_bytes, sizeof(push)));
    a_.vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, p);
    a_.vkCmdBindDescriptorSets(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, layout_, 0, 1, &set, 0, nullptr);
    a_.vkCmdPushConstants(cmd, layout_, VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof(push), push);
    a_.vkCmdDispatch(cmd, gx, gy, gz);
    VkMemoryBarrier mb{};
    mb.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER;
    mb.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT;
    mb.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT;
    a_.vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0, 1, &mb,
                            0, nullptr, 0, nullptr);
}

// Records every node of a checked, planned graph into r's command buffer (ended, not submitted).
void Backend::record_graph(const basalt_graph* g, std::vector<NodeCtx>& ctx, const std::vector<bool>& fused,
                           Recording& r) {
    const size_t nn = g->n_nodes;
    if (profile_) ensure_queries(nn);
    begin_commands(r.cmd, &r == &scratch_);
    rec_ = &r;
    struct Unset {
        Recording*& p;
        ~Unset() { p = nullptr; }
    } unset{rec_};
    if (profile_) a_.vkCmdResetQueryPool(r.cmd, queries_, 0, static_cast<uint32_t>(2 * nn));
    for (size_t i = 0; i < nn; ++i) {
        if (profile_) {
            a_.vkCmdWriteTimestamp(r.cmd, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, queries_, static_cast<uint32_t>(2 * i));
        }
        if (!fused[i]) op_impl(g->nodes[i]->op)->record(ctx[i]);
        if (profile_) {
            a_.vkCmdWriteTimestamp(r.cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, queries_,
                                   static_cast<uint32_t>(2 * i + 1));
        }
    }
    vk_check(a_.vkEndCommandBuffer(r.cmd), "vkEndCommandBuffer");
    ++n_recorded_;
}

bool Backend::replay(const sdk::GraphKey& key) {
    if (key.words.empty()) return false;
    for (auto& r : recorded_) {
        if (!(r->key == key)) continue;
        r->last_use = ++use_clock_;
        submit_and_wait(r->cmd);
        ++n_replayed_;
        check_validation("graph_compute");
        return true;
    }
    return false;
}

void Backend::record_and_submit(const basalt_graph* g, std::vector<NodeCtx>& ctx, const std::vector<bool>& fused,
                                sdk::GraphKey key) {
    const size_t nn = g->n_nodes;
    const auto sets = static_cast<uint32_t>(std::min<size_t>(nn * 4 + 64, 1u << 20));
    if (key.words.empty()) {
        // Not kept: the scratch recording, grown when needed.
        if (scratch_.cap < sets) {
            destroy_recording(scratch_);
            make_recording(scratch_, sets);
        } else {
            vk_check(a_.vkResetDescriptorPool(dev_, scratch_.pool, 0), "vkResetDescriptorPool");
            scratch_.used = 0;
        }
        record_graph(g, ctx, fused, scratch_);
        submit_and_wait(scratch_.cmd);
    } else {
        auto r = std::make_unique<Recording>();
        make_recording(*r, sets);
        try {
            record_graph(g, ctx, fused, *r);
        } catch (...) {
            destroy_recording(*r);
            throw;
        }
        r->key = std::move(key);
        r->last_use = ++use_clock_;
        if (recorded_.size() >= kMaxRecordings) {
            auto lru = std::min_element(recorded_.begin(), recorded_.end(),
                                        [](const auto& x, const auto& y) { return x->last_use < y->last_use; });
            destroy_recording(**lru);
            recorded_.erase(lru);
        }
        recorded_.push_back(std::move(r));
        submit_and_wait(recorded_.back()->cmd);
    }
}

}  // namespace basalt::vk
