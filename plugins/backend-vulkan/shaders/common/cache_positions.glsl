// ATTENTION ip[2] (since 1.4): sink keys at cache positions. The query is rotated back by the sinks' shift d
// (dot(q, R(d) k) = dot(R(-d) q, k)), so any stored K type works. Push constants: P(27) bit 1 neox, P(28) n_rot,
// PF(29) -2 log2(freq_base) / n_rot, PF(30) freq_scale (as rope.comp's). Needs common.glsl first.

// The dim that dim d is rotated with (d itself past n_rot).
uint cp_partner(uint d) {
    const uint n_rot = P(28);
    if (d >= n_rot) return d;
    const uint half_rot = n_rot / 2u;
    if ((P(27) & 2u) != 0u) return d < half_rot ? d + half_rot : d - half_rot;
    return d ^ 1u;
}

// Dim d of R(-shift) q, from q[d] and q[cp_partner(d)].
float cp_shifted(uint d, float xd, float xp, int shift) {
    const uint n_rot = P(28);
    if (d >= n_rot) return xd;
    const uint half_rot = n_rot / 2u;
    const bool neox = (P(27) & 2u) != 0u;
    const uint j = neox ? d % half_rot : d / 2u;
    const bool first = neox ? d < half_rot : (d & 1u) == 0u;
    // theta = shift * f, reduced modulo 2 pi as rope.comp does.
    const float f = PF(30) * exp2(float(j) * PF(29));
    const float pos = float(shift);
    const float hi = pos * f;
    const float lo = fma(pos, f, -hi);
    const float k = floor(hi * 0.15915494309189535 + 0.5);
    const float red = (fma(-k, 6.28318548202514648, hi) - k * -1.7484556000744883e-7) + lo;
    const float c = cos(red);
    const float s = sin(red);
    return first ? xd * c + xp * s : xd * c - xp * s;
}
