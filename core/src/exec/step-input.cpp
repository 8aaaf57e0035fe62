#include "exec/step-input.hpp"

#include <algorithm>

namespace basalt {

void Step::set_rows(bool encoder_pass, size_t n, const int32_t* tokens_in, const int32_t* positions_in,
                    const int32_t* seqs_in) {
    encoder = encoder_pass;
    n_tokens = static_cast<int64_t>(n);
    tokens = tokens_in;
    positions = positions_in;
    seqs = seqs_in;
    list_of_seq.assign(state.seq_len.size(), -1);
    order.clear();
    after.assign(state.seq_len.begin(), state.seq_len.end());
    longest = 0;
    for (size_t t = 0; t < n; ++t) {
        const auto s = static_cast<size_t>(seqs[t]);
        longest = std::max<size_t>(longest, ++after[s]);
        if (list_of_seq[s] >= 0) continue;
        list_of_seq[s] = static_cast<int32_t>(order.size());
        order.push_back(seqs[t]);
    }
}

void read_io(const SessionResources& res, IoPlace at, void* dst, uint64_t bytes, const char* what) {
    const BackendInstance& be = res.backend;
    be.check(be.iface().buffer_read(be.get(), at.buffer, at.offset, dst, bytes), what);
}

}  // namespace basalt
