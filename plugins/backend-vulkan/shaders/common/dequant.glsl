// Dequantization of the GGUF block types from a byte-addressed word view (needs DECLARE_LOADS(N) first).
// deq32_N: the 32 values of unit u of a row (a 32-block; a 32-run of a K-quant super-block; or 32 plain values,
// zero past n). ldel_N: one value (slower; for gathers and conversions).
// MXFP4: twice the E2M1 value of a 4-bit code, and half the E8M0 scale 2^(e - 128) (ggml's convention: the
// doubled values times the halved scale; e = 0 and 1 are the subnormals 2^-128 and 2^-127).
float mxfp4_value(uint q) {
    const float v[8] = float[8](0.0, 1.0, 2.0, 3.0, 4.0, 6.0, 8.0, 12.0);
    return (q & 8u) != 0u ? -v[q & 7u] : v[q];
}
float e8m0_half(uint e) {
    return uintBitsToFloat(e < 2u ? 0x00200000u << e : (e - 1u) << 23);
}

#define DECLARE_DEQUANT(N)                                                                                            \
    void k4_scale_min_##N(uint sb, uint j, out float sc, out float mn) {                                              \
        const uint s = sb + 4u;                                                                                       \
        if (j < 4u) {                                                                                                 \
            sc = float(ld8_##N(s + j) & 63u);                                                                         \
            mn = float(ld8_##N(s + j + 4u) & 63u);                                                                    \
        } else {                                                                                                      \
            sc = float((ld8_##N(s + j + 4u) & 15u) | ((ld8_##N(s + j - 4u) >> 6) << 4));                              \
            mn = float((ld8_##N(s + j + 4u) >> 4) | ((ld8_##N(s + j) >> 6) << 4));                                    \
        }                                                                                                             \
    }                                                                                                                 \
    float k3_scale_##N(uint sb, uint s) {                                                                             \
        const uint lo = s < 8u ? ld8_##N(sb + 96u + s) & 15u : ld8_##N(sb + 88u + s) >> 4;                            \
        const uint hi = (ld8_##N(sb + 104u + (s & 3u)) >> (2u * (s >> 2))) & 3u;                                      \
        return float(int(lo | (hi << 4)) - 32);                                                                       \
    }                                                                                                                 \
    void deq32_##N(uint type, uint row, uint u, uint n, out float w[32]) {                                            \
        if (type == T_Q8_0) {                                                                                         \
            const uint b = row + u * 34u;                                                                             \
            const float d = ldh_##N(b);                                                                               \
            for (uint j = 0u; j < 8u; ++j) {                                                                          \
                const uint v = ld32_##N(b + 2u + 4u * j);                                                             \
                for (uint k = 0u; k < 4u; ++k) w[4u * j + k] = d * float(sext8(v >> (8u * k)));                       \
            }                                                                                                         \
        } else if (type == T_Q4_0 || type == T_Q4_1) {                                                                \
            const bool one = type == T_Q4_1;                                                                          \
            const uint b = row + u * (one ? 20u : 18u);                                                               \
            const float d = ldh_##N(b);                                                                               \
            const float m = one ? ldh_##N(b + 2u) : -8.0 * d;                                                         \
            const uint q = b + (one ? 4u : 2u);                                                                       \
            for (uint j = 0u; j < 4u; ++j) {                                                                          \
                const uint v = ld32_##N(q + 4u * j);                                                                  \
                for (uint k = 0u; k < 4u; ++k) {                                                                      \
                    w[4u * j + k] = d * float((v >> (8u * k)) & 15u) + m;                                             \
                    w[4u * j + k + 16u] = d * float((v >> (8u * k + 4u)) & 15u) + m;                                  \
                }                                                                                                     \
            }                                                                                                         \
        } else if (type == T_Q5_0 || type == T_Q5_1) {                                                                \
            const bool one = type == T_Q5_1;                                                                          \
            const uint b = row + u * (one ? 24u : 22u);                                                               \
            const float d = ldh_##N(b);                                                                               \
            const float m = one ? ldh_##N(b + 2u) : -16.0 * d;                                                        \
            const uint qh = ld32_##N(b + (one ? 4u : 2u));                                                            \
            const uint q = b + (one ? 8u : 6u);                                                                       \
            for (uint j = 0u; j < 4u; ++j) {                                                                          \
                const uint v = ld32_##N(q + 4u * j);                                                                  \
                for (uint k = 0u; k < 4u; ++k) {                                                                      \
                    const uint e = 4u * j + k;                                                                        \
                    w[e] = d * float(((v >> (8u * k)) & 15u) | (((qh >> e) & 1u) << 4)) + m;                          \
                    w[e + 16u] = d * float(((v >> (8u * k + 4u)) & 15u) | (((qh >> (e + 16u)) & 1u) << 4)) + m;       \
                }                                                                                                     \
            }                                                                                                         \
        } else if (type == T_Q2_K) {                                                                                  \
            const uint sb = row + (u >> 3) * 84u;                                                                     \
            const uint j = u & 7u;                                                                                    \
            const float d = ldh_##N(sb + 80u);                                                                        \
            const float dm = ldh_##N(sb + 82u);                                                                       \
            const uint s0 = ld8_##N(sb + 2u * j);                                                                     \
            const uint s1 = ld8_##N(sb + 2u * j + 1u);                                                                \
            const float d0 = d * float(s0 & 15u);                                                                     \
            const float d1 = d * float(s1 & 15u);                                                                     \
            const float m0 = dm * float(s0 >> 4);                                                                     \
            const float m1 = dm * float(s1 >> 4);                                                                     \
            const uint q = sb + 16u + (j >> 2) * 32u;                                                                 \
            const uint sh = (j & 3u) * 2u;                                                                            \
            for (uint i = 0u; i < 8u; ++i) {                                                                          \
                const uint v = ld32_##N(q + 4u * i);                                                                  \
                for (uint k = 0u; k < 4u; ++k) {                                                                      \
                    const uint l = 4u * i + k;                                                                        \
                    const float qv = float((v >> (8u * k + sh)) & 3u);                                                \
                    w[l] = l < 16u ? d0 * qv - m0 : d1 * qv - m1;                                                     \
                }                                                                                                     \
            }                                                                                                         \
        } else if (type == T_Q3_K) {                                                                                  \
            const uint sb = row + (u >> 3) * 110u;                                                                    \
            const uint j = u & 7u;                                                                                    \
            const float d = ldh_##N(sb + 108u);                                                                       \
            const float d0 = d * k3_scale_##N(sb, 2u * j);                                                            \
            const float d1 = d * k3_scale_##N(sb, 2u * j + 1u);                                                       \
            const uint q = sb + 32u + (j >> 2) * 32u;                                                                 \
            const uint sh = (j & 3u) * 2u;                                                                            \
            for (uint i = 0u; i < 8u; ++i) {                                                                          \
                const uint v = ld32_##N(q + 4u * i);                                                                  \
                const uint h = ld32_##N(sb + 4u * i);                                                                 \
                for (uint k = 0u; k < 4u; ++k) {                                                                      \
                    const uint l = 4u * i + k;                                                                        \
                    const int qv = int((v >> (8u * k + sh)) & 3u) - (((h >> (8u * k + j)) & 1u) != 0u ? 0 : 4);       \
                    w[l] = (l < 16u ? d0 : d1) * float(qv);                                                           \
                }                                                                                                     \
            }                                                                                                         \
        } else if (type == T_Q4_K || type == T_Q5_K) {                                                                \
            const bool five = type == T_Q5_K; /* Q5_K: Q4_K plus a high-bit plane qh[32] before the quants */         \
            const uint sb = row + (u >> 3) * (five ? 176u : 144u);                                                    \
            const uint j = u & 7u;                                                                                    \
            float sc, mn;                                                                                             \
            k4_scale_min_##N(sb, j, sc, mn);                                                                          \
            const float d = ldh_##N(sb) * sc;                                                                         \
            const float m = ldh_##N(sb + 2u) * mn;                                                                    \
            const uint q = sb + (five ? 48u : 16u) + (j >> 1) * 32u;                                                  \
            const uint sh = (j & 1u) * 4u;                                                                            \
            for (uint i = 0u; i < 8u; ++i) {                                                                          \
                const uint v = ld32_##N(q + 4u * i);                                                                  \
                const uint h = five ? ld32_##N(sb + 16u + 4u * i) : 0u;                                               \
                for (uint k = 0u; k < 4u; ++k) {                                                                      \
                    const uint hb = ((h >> (8u * k + j)) & 1u) << 4;                                                  \
                    w[4u * i + k] = d * float(((v >> (8u * k + sh)) & 15u) | hb) - m;                                 \
                }                                                                                                     \
            }                                                                                                         \
        } else if (type == T_Q6_K) {                                                                                  \
            const uint sb = row + (u >> 3) * 210u;                                                                    \
            const uint hf = (u >> 2) & 1u;                                                                            \
            const uint g = u & 3u;                                                                                    \
            const float d = ldh_##N(sb + 208u);                                                                       \
            const uint ql = sb + hf * 64u + (g & 1u) * 32u;                                                           \
            const uint qh = sb + 128u + hf * 32u;                                                                     \
            const uint sc = sb + 192u + hf * 8u + 2u * g;                                                             \
            const float d0 = d * float(sext8(ld8_##N(sc)));                                                           \
            const float d1 = d * float(sext8(ld8_##N(sc + 1u)));                                                      \
            const uint lsh = (g >> 1) * 4u;                                                                           \
            for (uint i = 0u; i < 8u; ++i) {                                                                          \
                const uint vl = ld32_##N(ql + 4u * i);                                                                \
                const uint vh = ld32_##N(qh + 4u * i);                                                                \
                for (uint k = 0u; k < 4u; ++k) {                                                                      \
                    const uint l = 4u * i + k;                                                                        \
                    const int q = int(((vl >> (8u * k + lsh)) & 15u) | (((vh >> (8u * k + 2u * g)) & 3u) << 4)) - 32; \
                    w[l] = (l < 16u ? d0 : d1) * float(q);                                                            \
                }                                                                                                     \
            }                                                                                                         \
        } else if (type == T_MXFP4) {                                                                                 \
            const uint b = row + u * 17u;                                                                             \
            const float d = e8m0_half(ld8_##N(b));                                                                    \
            for (uint j = 0u; j < 4u; ++j) {                                                                          \
                const uint v = ld32_##N(b + 1u + 4u * j);                                                             \
                for (uint k = 0u; k < 4u; ++k) {                                                                      \
                    w[4u * j + k] = d * mxfp4_value((v >> (8u * k)) & 15u);                                           \
                    w[4u * j + k + 16u] = d * mxfp4_value((v >> (8u * k + 4u)) & 15u);                                \
                }                                                                                                     \
            }                                                                                                         \
        } else {                                                                                                      \
            for (uint k = 0u; k < 32u; ++k) {                                                                         \
                const uint e = u * 32u + k;                                                                           \
                if (e >= n) {                                                                                         \
                    w[k] = 0.0;                                                                                       \
                } else if (type == T_F32) {                                                                           \
                    w[k] = uintBitsToFloat(b##N##u.d[(row >> 2) + e]);                                                \
                } else if (type == T_F16) {                                                                           \
                    w[k] = ldh_##N(row + 2u * e);                                                                     \
                } else {                                                                                              \
                    w[k] = ldbf_##N(row + 2u * e);                                                                    \
                }                                                                                                     \
            }                                                                                                         \
        }                                                                                                             \
    }                                                                                                                 \
    float ldel_##N(uint type, uint row, uint i) {                                                                     \
        if (type == T_F32) return uintBitsToFloat(b##N##u.d[(row >> 2) + i]);                                         \
        if (type == T_F16) return ldh_##N(row + 2u * i);                                                              \
        if (type == T_BF16) return ldbf_##N(row + 2u * i);                                                            \
        const uint j = i & 31u;                                                                                       \
        if (type == T_Q8_0) {                                                                                         \
            const uint b = row + (i >> 5) * 34u;                                                                      \
            return ldh_##N(b) * float(sext8(ld8_##N(b + 2u + j)));                                                    \
        }                                                                                                             \
        if (type == T_Q4_0 || type == T_Q4_1 || type == T_Q5_0 || type == T_Q5_1) {                                   \
            const bool one = type == T_Q4_1 || type == T_Q5_1;                                                        \
            const bool five = type == T_Q5_0 || type == T_Q5_1;                                                       \
            const uint bytes = (one ? 20u : 18u) + (five ? 4u : 0u);                                                  \
            const uint b = row + (i >> 5) * bytes;                                                                    \
            const float d = ldh_##N(b);                                                                               \
            const uint qs = b + (one ? 4u : 2u) + (five ? 4u : 0u);                                                   \
            uint q = (ld8_##N(qs + (j & 15u)) >> (j < 16u ? 0u : 4u)) & 15u;                                          \
            if (five) q |= ((ld32_##N(b + (one ? 4u : 2u)) >> j) & 1u) << 4;                                          \
            const float m = one ? ldh_##N(b + 2u) : (five ? -16.0 : -8.0) * d;                                        \
            return d * float(q) + m;                                                                                  \
        }                                                                                                             \
        if (type == T_Q2_K) {                                                                                         \
            const uint sb = row + (i >> 8) * 84u;                                                                     \
            const uint sub = (i & 255u) >> 5;                                                                         \
            const uint sc = ld8_##N(sb + 2u * sub + (j >> 4));                                                        \
            const uint q = (ld8_##N(sb + 16u + (sub >> 2) * 32u + j) >> ((sub & 3u) * 2u)) & 3u;                      \
            return ldh_##N(sb + 80u) * float(sc & 15u) * float(q) - ldh_##N(sb + 82u) * float(sc >> 4);               \
        }                                                                                                             \
        if (type == T_Q3_K) {                                                                                         \
            const uint sb = row + (i >> 8) * 110u;                                                                    \
            const uint sub = (i & 255u) >> 5;                                                                         \
            const uint q = (ld8_##N(sb + 32u + (sub >> 2) * 32u + j) >> ((sub & 3u) * 2u)) & 3u;                      \
            const int v = int(q) - (((ld8_##N(sb + j) >> sub) & 1u) != 0u ? 0 : 4);                                   \
            return ldh_##N(sb + 108u) * k3_scale_##N(sb, 2u * sub + (j >> 4)) * float(v);                             \
        }                                                                                                             \
        if (type == T_Q4_K || type == T_Q5_K) {                                                                       \
            const bool five = type == T_Q5_K;                                                                         \
            const uint sb = row + (i >> 8) * (five ? 176u : 144u);                                                    \
            const uint sub = (i & 255u) >> 5;                                                                         \
            float sc, mn;                                                                                             \
            k4_scale_min_##N(sb, sub, sc, mn);                                                                        \
            uint q = (ld8_##N(sb + (five ? 48u : 16u) + (sub >> 1) * 32u + j) >> ((sub & 1u) * 4u)) & 15u;            \
            if (five) q |= ((ld8_##N(sb + 16u + j) >> sub) & 1u) << 4;                                                \
            return ldh_##N(sb) * sc * float(q) - ldh_##N(sb + 2u) * mn;                                               \
        }                                                                                                             \
        if (type == T_Q6_K) {                                                                                         \
            const uint sb = row + (i >> 8) * 210u;                                                                    \
            const uint r = i & 255u;                                                                                  \
            const uint hf = r >> 7;                                                                                   \
            const uint g = (r >> 5) & 3u;                                                                             \
            const uint lo = (ld8_##N(sb + hf * 64u + (g & 1u) * 32u + j) >> ((g >> 1) * 4u)) & 15u;                   \
            const uint hi = (ld8_##N(sb + 128u + hf * 32u + j) >> (2u * g)) & 3u;                                     \
            const float sc = float(sext8(ld8_##N(sb + 192u + hf * 8u + 2u * g + (j >> 4))));                          \
            return ldh_##N(sb + 208u) * sc * float(int(lo | (hi << 4)) - 32);                                         \
        }                                                                                                             \
        if (type == T_MXFP4) {                                                                                        \
            const uint b = row + (i >> 5) * 17u;                                                                      \
            return e8m0_half(ld8_##N(b)) * mxfp4_value((ld8_##N(b + 1u + (j & 15u)) >> (j < 16u ? 0u : 4u)) & 15u);   \
        }                                                                                                             \
        return 0.0;                                                                                                   \
    }

bool type_supported(uint t) {
    return t == T_F32 || t == T_F16 || t == T_BF16 || t == T_Q8_0 || t == T_Q4_0 || t == T_Q4_1 || t == T_Q5_0 ||
           t == T_Q5_1 || t == T_Q2_K || t == T_Q3_K || t == T_Q4_K || t == T_Q5_K || t == T_Q6_K || t == T_MXFP4;
}
