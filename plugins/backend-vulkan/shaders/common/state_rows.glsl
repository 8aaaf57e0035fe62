// The (slot, fresh) I32 pairs per token of the recurrent ops (binding 6, words from `first`): whether some sequence
// runs `from` tokens in the node (consecutive tokens of one slot, a fresh start opening a new run). GATED_DELTA's two
// forms ask it to pick themselves on the device (GatedDeltaPush.chunk_from), the rule of the CPU backend. Include it
// after DECLARE_BINDING(6).
bool some_run_reaches(uint first, uint tokens, uint from) {
    uint run = 0u;
    uint prev = 0xffffffffu;
    for (uint t = 0u; t < tokens; ++t) {
        const uint slot = b6u.d[first + 2u * t];
        run = slot == prev && b6u.d[first + 2u * t + 1u] == 0u ? run + 1u : 1u;
        if (run >= from) return true;
        prev = slot;
    }
    return false;
}
