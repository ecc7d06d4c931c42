// The Stable Diffusion activations in afp, shared by the Vulkan shaders that apply one
// (activation.comp, gemm.comp's epilogue); included after prelude.glsl. fn codes as in
// activation.cl: 0 gelu, 1 gelu_tanh, 2 quick_gelu, 3 silu. GLSL has no erf, so GELU uses
// erfc from Numerical Recipes' Chebyshev fit (fractional error < 1.2e-7 everywhere),
// evaluated in float even in the f16-arithmetic modules (its ten-term polynomial in half
// would lose about 1e-2).
float erfc_nr(float z) {
  const float t = 1.0 / (1.0 + 0.5 * abs(z));
  const float r = t * exp(-z * z - 1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (0.09678418 +
                  t * (-0.18628806 + t * (0.27886807 + t * (-1.13520398 + t * (1.48851587 +
                  t * (-0.82215223 + t * 0.17087277)))))))));
  return z >= 0.0 ? r : 2.0 - r;
}

afp gelu(afp v) { return afp(0.5) * v * afp(erfc_nr(-float(v) * 0.70710678118654752)); }

// v sigmoid(a v). In half, exp(-a v) overflows to inf for a v < -11.1 and v / inf = -0,
// where the true value is under 2e-4 in magnitude: benign.
afp sigmoid_times(afp v, afp a) { return v / (afp(1.0) + exp(-a * v)); }

afp apply(afp v, uint fn) {
  if (fn == 0u) return gelu(v);
  if (fn == 1u) {
    // tanh(u) = 1 - 2 / (exp(2u) + 1): exact at both ends, where GLSL's tanh is loosely
    // specified (in half exp(2u) overflows for u > 5.5: 2 / inf = 0, tanh = 1, right).
    const afp u = afp(0.79788456080286536) * (v + afp(0.044715) * v * v * v);
    return afp(0.5) * v * (afp(2.0) - afp(2.0) / (exp(afp(2.0) * u) + afp(1.0)));
  }
  if (fn == 2u) return sigmoid_times(v, afp(1.702));
  return sigmoid_times(v, afp(1.0));
}

