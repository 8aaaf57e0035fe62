// ATTENTION ip[2] (since 1.4): sink keys at cache positions. The query is rotated back by the sinks' shift d
// (dot(q, R(d) k) = dot(R(-d) q, k)), so any stored K type works. Push constants: AttentionSinksPush's rope_mode,
// n_rot, theta_step and freq_scale (as rope.comp's). Needs common.glsl and the push constants first.

// The dim that dim d is rotated with (d itself past n_rot).
uint cp_partner(uint d) {
    const uint n_rot = pc.n_rot;
    if (d >= n_rot) return d;
    const uint half_rot = n_rot / 2u;
    if (pc.rope_mode == 1u) return d < half_rot ? d + half_rot : d - half_rot;
    return d ^ 1u;
}

// Dim d of R(-shift) q, from q[d] and q[cp_partner(d)].
float cp_shifted(uint d, float xd, float xp, int shift) {
    const uint n_rot = pc.n_rot;
    if (d >= n_rot) return xd;
    const uint half_rot = n_rot / 2u;
    const bool neox = pc.rope_mode == 1u;
    const uint j = neox ? d % half_rot : d / 2u;
    const bool first = neox ? d < half_rot : (d & 1u) == 0u;
    // theta = shift * f, reduced modulo 2 pi as rope.comp does.
    const float f = pc.freq_scale * exp2(float(j) * pc.theta_step);
    const float pos = float(shift);
    const float hi = pos * f;
    const float lo = fma(pos, f, -hi);
    const float k = floor(hi * 0.15915494309189535 + 0.5);
    const float red = (fma(-k, 6.28318548202514648, hi) - k * -1.7484556000744883e-7) + lo;
    const float c = cos(red);
    const float s = sin(red);
    return first ? xd * c + xp * s : xd * c - xp * s;
}
