// A Q8_0 block (fp16 scale + 32 int8) of binding 0 read with three aligned 16-byte loads (the binding's range ends
// on 16 bytes): on lavapipe every load instruction is a loop over the lanes, so few wide loads beat many narrow
// ones. Needs the uvec4 view b0v.
layout(std430, binding = 0) buffer B0v {
    uvec4 d[];
}
b0v;

// The block at byte b: scale d and the 32 quants as 8 little-endian words.
void q8_0_load(uint b, out float d, out uint q[8]) {
    const uint v = b >> 4;
    const uvec4 a0 = b0v.d[v];
    const uvec4 a1 = b0v.d[v + 1u];
    const uvec4 a2 = b0v.d[v + 2u];
    const uint a[12] = uint[12](a0.x, a0.y, a0.z, a0.w, a1.x, a1.y, a1.z, a1.w, a2.x, a2.y, a2.z, a2.w);
    const uint sw = (b >> 2) & 3u;
    uint w[9];
    for (uint k = 0u; k < 9u; ++k) {
        w[k] = sw == 0u ? a[k] : (sw == 1u ? a[k + 1u] : (sw == 2u ? a[k + 2u] : a[k + 3u]));
    }
    // The scale and the quants are 2 bytes apart: exactly one of them starts on a word.
    const bool odd = (b & 2u) != 0u;
    d = unpackHalf2x16(odd ? (w[0] >> 16) : w[0]).x;
    for (uint j = 0u; j < 8u; ++j) q[j] = odd ? w[j + 1u] : ((w[j] >> 16) | (w[j + 1u] << 16));
}

// Four int8 of a word as floats.
vec4 i8x4(uint v) {
    return vec4(ivec4(int(v) << 24, int(v) << 16, int(v) << 8, int(v)) >> 24);
}
