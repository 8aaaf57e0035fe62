#include "exec/kv-reservation.hpp"

#include <string>

#include "exec/session-resources.hpp"
#include "graph/graph-builder.hpp"
#include "host/host-services.hpp"
#include "support/error.hpp"

namespace basalt {

void KvReservation::reserve(const SessionResources& res, size_t n, const int32_t* tokens, const int32_t* positions,
                            const int32_t* seqs) {
    const bool window = res.n_window_slots != 0;
    slots_.assign(n, -1);
    window_slots_.assign(window ? n : 0, -1);
    copies_.resize(n + 8);
    window_copies_.resize(window ? 8 : 0);
    basalt_kv_reservation r{};
    r.struct_size = sizeof(r);
    r.n_tokens = n;
    r.tokens = tokens;
    r.positions = positions;
    r.seq_ids = seqs;
    r.out_slots = slots_.data();
    r.out_window_slots = window_slots_.empty() ? nullptr : window_slots_.data();
    basalt_status st = BASALT_OK;
    for (int attempt = 0; attempt < 3; ++attempt) {  // grown once per copy array at most
        r.out_copies = copies_.data();
        r.copies_capacity = copies_.size();
        r.out_window_copies = window_copies_.empty() ? nullptr : window_copies_.data();
        r.window_copies_capacity = window_copies_.size();
        r.out_n_copies = 0;
        r.out_n_window_copies = 0;
        clear_plugin_error();
        st = res.kv.iface().reserve(res.kv.get(), &r);
        if (st != BASALT_ERR_CAPACITY) break;
        if (r.out_n_copies > copies_.size()) {
            copies_.resize(r.out_n_copies);
        } else if (r.out_n_window_copies > window_copies_.size()) {
            window_copies_.resize(r.out_n_window_copies);
        } else {
            break;  // out of slots: not a matter of array sizes
        }
    }
    if (st != BASALT_OK) {
        copies_.clear();
        window_copies_.clear();
        fail(st, "KV cache manager '{}': {}", res.kv.name(),
             plugin_error_message().empty() ? status_name(st) : plugin_error_message());
    }
    copies_.resize(r.out_n_copies);
    window_copies_.resize(window ? r.out_n_window_copies : 0);
}

void KvReservation::add_copies(GraphBuilder& g, const SessionResources& res) const {
    const ModelHparams& hp = res.hp;
    // Copy on write of the blocks (full-attention layers, or every layer without window storage), then the window
    // storage's copies (forked sequences' rings).
    for (int pass = 0; pass < 2; ++pass) {
        const auto& list = pass == 0 ? copies_ : window_copies_;
        for (const auto& cp : list) {
            for (uint32_t il = 0; il < res.cache_layers(); ++il) {
                if ((res.window_storage[il] != 0) != (pass == 1)) continue;
                if (!hp.owns_kv(il)) continue;  // its source layer's copy moves the K/V it reads
                const std::string p = "blk." + std::to_string(il) + (pass == 0 ? ".kv_copy" : ".kv_window_copy");
                for (int kv = 0; kv < 2; ++kv) {
                    basalt_buffer* buf = kv == 0 ? res.k[il].get() : res.v[il].get();
                    const uint64_t row = kv == 0 ? res.k_row_bytes[il] : res.v_row_bytes[il];
                    const basalt_dtype type = kv == 0 ? res.layout.k_type : res.layout.v_type;
                    const int64_t width = kv == 0 ? hp.n_embd_k_gqa(il) : hp.n_embd_v_gqa(il);
                    const int32_t src =
                        g.tensor(type, {width, cp.n_slots}, p, buf, row * static_cast<uint64_t>(cp.src_slot));
                    const int32_t dst =
                        g.tensor(type, {width, cp.n_slots}, p, buf, row * static_cast<uint64_t>(cp.dst_slot));
                    g.node(BASALT_OP_COPY, p, dst, {src});
                }
            }
        }
    }
}

}  // namespace basalt
