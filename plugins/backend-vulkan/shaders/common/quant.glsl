// F32 -> F16 / BF16 with round-to-nearest-even (bit-exact with the CPU backend's conversions).
uint f32_to_f16(float f) {
    const uint x = floatBitsToUint(f);
    const uint sign = (x >> 16) & 0x8000u;
    const uint ax = x & 0x7fffffffu;
    if (ax > 0x7f800000u) return sign | 0x7e00u | ((ax >> 13) & 0x3ffu);
    if (ax >= 0x477ff000u) return sign | 0x7c00u;
    if (ax >= 0x38800000u) {
        const uint r = ax + 0xfffu + ((ax >> 13) & 1u);
        return sign | ((r - (112u << 23)) >> 13);
    }
    // Half subnormals: adding 0.5 lets the float adder round to a multiple of 2^-24.
    const float v = uintBitsToFloat(ax) + 0.5;
    return sign | (floatBitsToUint(v) - 0x3f000000u);
}

uint f32_to_bf16(float f) {
    const uint x = floatBitsToUint(f);
    if ((x & 0x7fffffffu) > 0x7f800000u) return ((x >> 16) | 0x40u) & 0xffffu;
    return ((x + 0x7fffu + ((x >> 16) & 1u)) >> 16) & 0xffffu;
}

float round_half_away(float v) {
    return sign(v) * floor(abs(v) + 0.5);
}
