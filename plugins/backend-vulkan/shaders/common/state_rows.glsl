// The (slot, fresh) I32 pairs per token of the recurrent ops (binding 6, words from `first`). GATED_DELTA's two forms
// pick per sequence on the device (GatedDeltaPush.chunk_from), the rule of the CPU backend: the tokens of a slot with
// `from` tokens or more in the node take the chunked form, the others the recurrent one. Include it after
// DECLARE_BINDING(6).

// Whether the slot of token t has `from` tokens or more among the node's `tokens`. Asked where a run of the slot
// starts: the scan begins there and wraps to the node's start, so a run of `from` tokens ends it after `from` reads
// (prefill) and a shorter one reads the whole node once.
bool slot_reaches(uint first, uint tokens, uint t, uint from) {
    const uint slot = b6u.d[first + 2u * t];
    uint n = 0u;
    for (uint i = 0u; i < tokens; ++i) {
        const uint u = t + i < tokens ? t + i : t + i - tokens;
        if (b6u.d[first + 2u * u] == slot && ++n >= from) return true;
    }
    return false;
}
