// The tensor-core arms' accuracy contracts, shared by the emulation test and the GPU test.
// Host-only.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

namespace convbench::tc::testing {

// cuda-tf32: relative L2 against cpu-f64, the bound cudnn-tf32 is gated at. Each operand
// rounded to tf32 (10 explicit mantissa bits) carries up to 2^-11 relative error, so a product
// up to ~1e-3, random in sign: the sum's relative L2 lands near 3e-4 (measured in the emulation:
// see tc_emulation_test.cpp), a 10x margin under 5e-3.
constexpr double kTf32RelL2 = 5e-3;
// ... and the floor that proves tensor-op math ran: f32 FMA math would give ~1e-7, tf32 ~3e-4.
constexpr double kTf32MinRelL2 = 1e-5;

// cuda-f32x3: relative L2 against cpu-f64, cuda-f32's bound. Split into hi and lo tf32 parts, each
// operand keeps ~22 of its 24 bits; with lo*lo (~2^-22 of a product) dropped, the products
// carry ~1e-7 relative error, the f32 accumulator's own level, so the error is cuda-f32's kind.
// The split must also buy its gain: on the same data at least 10x below plain tf32's relative
// L2 (the emulation measures up to 7e-7 against tf32's 2.7e-4 on the vocoder stages, a gain
// near 400x; with one cross term left out the error is ~1.8e-4, a gain under 1.5x).
constexpr double kF32x3RelL2 = 1e-4;
constexpr double kF32x3MinGain = 10.0;
// cuda-f32x3 against cuda-f32 (FFMA) on the same data: at most this factor above it (the sums
// run in another order, so a small factor either way is noise, not a lost split term).
constexpr double kF32x3VsF32 = 2.0;
// ... or at most this: the dropped lo*lo term is up to 2^-22 (2.4e-7) of each product, which on
// short reductions (a few channels and taps, H200: 1.1e-7 to 3.8e-7 on the random odd shapes,
// where cuda-f32 is 4e-8 to 1.2e-7) is the whole error.
constexpr double kF32x3Floor = 5e-7;

// cuda-f64-dmma: the products of f32 values are exact in f64; only the addition order differs
// from the reference, an error near 1e-16 x sqrt(terms) x |partial sums| (about 1e-13 absolute
// on these O(1) data). Both then round to f32 once. A cell therefore equals the reference or,
// when the exact sum sits within that tiny error of an f32 rounding midpoint (odds ~1e-6 per
// cell), differs by exactly one f32 ulp. A 1e-12 relative-L2 bound does NOT hold: one such cell
// in up0's 590k cells alone gives about 1e-10. So the per-cell contract is "equal, or one f32
// ulp apart (or 1e-10 absolute, for results so near 0 that an ulp is below the f64 noise)",
// and the tensor-wide gate is relative L2 <= 1e-9, as cudnn-f64's (reached only if ~1e-4 of the
// cells differ by an ulp; an f32 accumulator or a tf32 operand lands at 1e-7 .. 1e-4).
constexpr double kF64RelL2 = 1e-9;
constexpr double kF64AbsSlack = 1e-10;
constexpr double kF64MaxDifferingFraction = 1e-3;

struct F64Check {
  int64_t differing = 0;  // cells whose bytes differ from the reference
  int64_t beyond_ulp = 0; // cells more than one f32 ulp (and kF64AbsSlack) away
  double rel_l2 = 0.0;
  std::string first_bad; // "cell i: y vs ref"
  bool ok(size_t cells) const {
    return beyond_ulp == 0 && rel_l2 <= kF64RelL2 &&
           double(differing) <= kF64MaxDifferingFraction * double(cells) + 1.0;
  }
};

inline double relative_l2(const std::vector<float> &a, const std::vector<float> &ref) {
  double num = 0.0, den = 0.0;
  for (size_t i = 0; i < ref.size(); ++i) {
    const double d = double(a[i]) - double(ref[i]);
    num += d * d;
    den += double(ref[i]) * double(ref[i]);
  }
  if (den == 0.0)
    return num == 0.0 ? 0.0 : INFINITY;
  return std::sqrt(num / den); // NaN in `a` gives NaN: every <= bound then fails
}

inline F64Check check_f64(const std::vector<float> &y, const std::vector<float> &ref) {
  F64Check c;
  c.rel_l2 = relative_l2(y, ref);
  for (size_t i = 0; i < ref.size(); ++i) {
    if (std::memcmp(&y[i], &ref[i], sizeof(float)) == 0)
      continue;
    ++c.differing;
    const float a = std::fabs(ref[i]);
    const double ulp = double(std::nextafter(a, std::numeric_limits<float>::infinity())) - a;
    const double d = std::fabs(double(y[i]) - double(ref[i]));
    if (!(d <= ulp || d <= kF64AbsSlack)) { // NaN fails too
      if (c.beyond_ulp++ == 0)
        c.first_bad = "cell " + std::to_string(i) + ": " + std::to_string(y[i]) + " vs " +
                      std::to_string(ref[i]);
    }
  }
  return c;
}

// What __float_to_tf32 (cvt.rna.tf32.f32) does: round to 10 explicit mantissa bits, to nearest,
// ties away from zero; the low 13 bits become 0. Inf and NaN pass through.
inline float tf32_round(float v) {
  uint32_t u;
  std::memcpy(&u, &v, 4);
  if ((u & 0x7f800000u) != 0x7f800000u) {
    u += 0x1000u;
    u &= 0xffffe000u;
  }
  std::memcpy(&v, &u, 4);
  return v;
}

} // namespace convbench::tc::testing
