// A forward pass as a composition of step inputs (in the manner of llama.cpp's llm_graph_input_i): each input or
// output of a pass (token ids, positions, cache slots, attention lists, steering rows, logits, observed layers, ...)
// is one StepInput that sizes its region of the session's IO buffer, fills it, says what of the graph's shape it
// decides, declares its tensors when the graph is built and reads its region back. The list of them is
// make_step_inputs() (step-input-list.cpp); StepGraph runs them. Not thread-safe: one session's thread.
#pragma once

#include <basalt/plugin_backend.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "exec/session-resources.hpp"
#include "exec/session-state.hpp"

namespace basalt {

class KvReservation;
struct ForwardContext;

// Attention slot lists are padded to a multiple of this many (slot, position) pairs, so that consecutive decode
// steps build graphs of one shape, which a backend can run again from what it recorded (Vulkan replays its command
// buffer).
constexpr size_t kVisibleStep = 64;

// What one pass is about: its rows (tokens, positions, sequences), the sequences' lists, the reservation of a
// decoder step and where its outputs go. Filled by the session; the arrays are borrowed for the pass. Reused from
// pass to pass.
struct Step {
    Step(const SessionResources& r, SessionState& s) : res(r), hp(r.hp), state(s) {}

    // Sets the rows of a pass and groups them by sequence (order, list_of_seq, after, longest).
    void set_rows(bool encoder_pass, size_t n, const int32_t* tokens_in, const int32_t* positions_in,
                  const int32_t* seqs_in);
    // Whether row t's logits are wanted (a batch without want_logits: its last row only).
    bool wants_logits(size_t t) const { return want_logits == nullptr ? t + 1 == rows_left : want_logits[t] != 0; }
    size_t n_lists() const { return order.size(); }

    const SessionResources& res;
    const ModelHparams& hp;
    SessionState& state;   // read by the inputs, written by the outputs' read-backs
    bool encoder = false;  // an encoder pass over whole sources (encoder-decoder models), not a decoder step
    int64_t n_tokens = 0;  // T
    const int32_t* tokens = nullptr;
    const int32_t* positions = nullptr;
    const int32_t* seqs = nullptr;
    const int8_t* want_logits = nullptr;         // per row (nullptr: the last row of the batch only)
    size_t rows_left = 0;                        // rows of the batch from this pass's first on
    std::vector<int32_t> order;                  // sequences in list order (first appearance)
    std::vector<int32_t> list_of_seq;            // per sequence: its list, or -1
    std::vector<uint32_t> after;                 // per sequence: its length after this pass
    size_t longest = 0;                          // the longest sequence of the pass after it
    const KvReservation* reservation = nullptr;  // decoder steps
    std::vector<float>* logits = nullptr;        // decoder steps: logits of the wanted rows are appended here
    size_t n_out = 0;                            // rows appended to *logits
    // Embedding passes (encoder-only models, an encoder pass): every row's hidden state is appended to *embd; with
    // rank, the rank head's scores of each list's first row to *scores.
    std::vector<float>* embd = nullptr;
    std::vector<float>* scores = nullptr;
    bool rank = false;
};

// The region an input needs this pass. Absent: no tensor, nothing filled, bound or read back.
struct IoRegion {
    bool present = false;
    uint64_t bytes = 0;
};

// What the graph of a pass depends on besides its inputs' data. Equal keys: the graph built for one runs the other.
using GraphKey = std::vector<int64_t>;

// Where an input's region lies in the IO buffer.
struct IoPlace {
    basalt_buffer* buffer = nullptr;
    uint64_t offset = 0;
};

class StepInput {
  public:
    virtual ~StepInput() = default;
    // Outputs are read back after the pass and placed after every input.
    virtual bool output() const { return false; }
    // Prepares this pass's data (host side) and returns the region it needs; the size must follow from the key.
    virtual IoRegion prepare(const Step& step) = 0;
    // Appends what of the graph's shape this input decides beyond its region's size (e.g. pairs per list).
    virtual void key(GraphKey& /*key*/) const {}
    // Writes the whole region (inputs; `region` has the bytes prepare returned).
    virtual void fill(const Step& /*step*/, uint8_t* /*region*/) const {}
    // Declares its tensors in the graph being built, over its region.
    virtual void bind(ForwardContext& c, const Step& step, IoPlace at) const = 0;
    // Reads its region back into the session's state (outputs).
    virtual void read_back(const Step& /*step*/, IoPlace /*at*/) {}
};

// Writes entry i of an I32 region.
inline void put_i32(uint8_t* region, size_t i, int32_t value) {
    std::memcpy(region + 4 * i, &value, sizeof value);
}
// Fills n entries of an I32 region with value.
inline void fill_i32(uint8_t* region, size_t n, int32_t value) {
    for (size_t i = 0; i < n; ++i) put_i32(region, i, value);
}

// Reads bytes of the IO buffer (a read-back); fails naming `what`.
void read_io(const SessionResources& res, IoPlace at, void* dst, uint64_t bytes, const char* what);

}  // namespace basalt
