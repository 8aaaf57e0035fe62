// Activation functions shared by unary.comp and binary.comp (F32 math; arguments clamped where exp overflows).
float silu(float x) {
    return x / (1.0 + exp(-max(x, -80.0)));
}

float tanh_safe(float x) {
    const float c = clamp(x, -15.0, 15.0);
    const float e = exp(2.0 * c);
    return (e - 1.0) / (e + 1.0);
}

// 1 / (1 + e^-x): e^-x overflows to inf for very negative x, giving 0.
float sigmoid(float x) {
    return 1.0 / (1.0 + exp(-x));
}

float gelu_tanh(float x) {
    return 0.5 * x * (1.0 + tanh_safe(0.7978845608028654 * (x + 0.044715 * x * x * x)));
}

// erf with |error| < 1.2e-7 (W. J. Cody's rational approximations, evaluated in three ranges).
float erf_approx(float x) {
    const float a = abs(x);
    float r;
    if (a < 0.5) {
        const float t = a * a;
        r = a *
            ((((0.185777706184603153 * t + 3.16112374387056560) * t + 113.864154151050156) * t + 377.485237685302021) *
                 t +
             3209.37758913846947) /
            ((((t + 23.6012909523441209) * t + 244.024637934444173) * t + 1282.61652607737228) * t +
             2844.23683343917062);
    } else if (a < 4.0) {
        const float num = (((((((2.15311535474403846e-8 * a + 0.564188496988670089) * a + 8.88314979438837594) * a +
                               66.1191906371416295) *
                                  a +
                              298.635138197400131) *
                                 a +
                             881.952221241769090) *
                                a +
                            1712.04761263407058) *
                               a +
                           2051.07837782607147) *
                              a +
                          1230.33935479799725;
        const float den = (((((((a + 15.7449261107098347) * a + 117.693950891312499) * a + 537.181101862009858) * a +
                              1621.38957456669019) *
                                 a +
                             3290.79923573345963) *
                                a +
                            4362.61909014324716) *
                               a +
                           3439.36767414372164) *
                              a +
                          1230.33935480374942;
        r = 1.0 - exp(-a * a) * num / den;
    } else {
        r = 1.0;
    }
    return x < 0.0 ? -r : r;
}
