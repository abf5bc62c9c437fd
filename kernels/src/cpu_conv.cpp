// Host arms. Each pool chunk owns whole output rows (batch, oc), so the sequence of additions into
// a cell never depends on the thread count.
#include "convbench/cpu_conv.hpp"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "cpu_f32_conv.hpp"

namespace convbench {

namespace {

// Positions j in [0, n_pos) with 0 <= j*stride + off < limit, as a half-open range.
struct Range {
  int64_t lo, hi;
};
Range tap_range(int64_t n_pos, int64_t stride, int64_t off, int64_t limit) {
  // j*stride + off >= 0  <=>  j >= ceil(-off / stride)
  int64_t lo = off >= 0 ? 0 : (-off + stride - 1) / stride;
  // j*stride + off <= limit - 1  <=>  j <= floor((limit - 1 - off) / stride)
  const int64_t top = limit - 1 - off;
  int64_t hi = top < 0 ? 0 : top / stride + 1;
  lo = std::min(lo, n_pos);
  hi = std::clamp(hi, lo, n_pos);
  return {lo, hi};
}

// Adding -0.0 leaves every f64 value bitwise unchanged (+0 + -0 = +0, -0 + -0 = -0), so
// replacing a skipped tap's product by -0.0 is exactly "skip when x == 0.0" without a branch.
// The product is formed unconditionally so the select is a plain blend the compiler vectorises.
inline double reference_term(float xv, double wv) {
  const double product = double(xv) * wv;
  // x == 0.0 (either sign) selects -0.0: done with integer masks, which the compiler vectorises.
  const uint64_t zero = uint64_t(0) - uint64_t((std::bit_cast<uint32_t>(xv) << 1) == 0);
  const uint64_t bits = (std::bit_cast<uint64_t>(product) & ~zero) | (zero & (uint64_t(1) << 63));
  return std::bit_cast<double>(bits);
}

void forward_f64_row(const ConvShape &s, const float *x, const float *w, const float *bias,
                     int64_t b, int64_t oc, std::vector<double> &acc, float *y_row) {
  const int64_t lo = s.l_out();
  // Bias first.
  std::fill(acc.begin(), acc.end(), bias ? double(bias[oc]) : 0.0);
  double *a = acc.data();
  for (int64_t ic = 0; ic < s.cin; ++ic) {
    const float *xrow = x + (b * s.cin + ic) * s.l_in;
    const float *wrow = w + (oc * s.cin + ic) * s.k;
    for (int64_t kk = 0; kk < s.k; ++kk) {
      const double wv = double(wrow[kk]);
      const int64_t off = kk * s.dilation - s.padding;
      const Range r = tap_range(lo, s.stride, off, s.l_in);
      if (s.stride == 1) {
        const float *xs = xrow + off;
        for (int64_t o = r.lo; o < r.hi; ++o)
          a[o] += reference_term(xs[o], wv);
      } else {
        for (int64_t o = r.lo; o < r.hi; ++o)
          a[o] += reference_term(xrow[o * s.stride + off], wv);
      }
    }
  }
  for (int64_t o = 0; o < lo; ++o)
    y_row[o] = float(a[o]);
}

// The cells of a transposed row fall into `stride` phases (p = q * stride + r); a tap k reaches
// only the cells of one phase, r = (k * dilation - padding) mod stride, from the inputs
// t = q + (r - k * dilation + padding) / stride. So each tap is one contiguous sweep over its
// phase's accumulators (held phase-major in acc) and over x, which vectorises; per cell the
// additions are the same as a scatter over t: ic ascending, then k descending (t ascending),
// bias last.
void transposed_f64_row(const ConvShape &s, const float *x, const float *w, const float *bias,
                        int64_t b, int64_t oc, std::vector<double> &acc, float *y_row) {
  const int64_t lo = s.l_out(), st = s.stride;
  const int64_t nq = (lo + st - 1) / st; // cells of phase 0, the most any phase has
  acc.assign(static_cast<size_t>(st * nq), 0.0);
  double *a = acc.data();
  for (int64_t ic = 0; ic < s.cin; ++ic) {
    const float *xrow = x + (b * s.cin + ic) * s.l_in;
    const float *wrow = w + (ic * s.cout + oc) * s.k;
    for (int64_t kk = s.k - 1; kk >= 0; --kk) {
      const double wv = double(wrow[kk]);
      const int64_t off = kk * s.dilation - s.padding; // p = t * stride + off
      const int64_t r = ((off % st) + st) % st;
      const int64_t c = (r - off) / st; // t = q + c
      const int64_t q_cells = (lo - r + st - 1) / st;
      const int64_t q_lo = std::max<int64_t>(0, -c);
      const int64_t q_hi = std::min<int64_t>(q_cells, s.l_in - c);
      double *ar = a + r * nq;
      const float *xs = xrow + c;
      for (int64_t q = q_lo; q < q_hi; ++q)
        ar[q] += reference_term(xs[q], wv);
    }
  }
  const double bv = bias ? double(bias[oc]) : 0.0;
  for (int64_t p = 0; p < lo; ++p) {
    double v = a[(p % st) * nq + p / st];
    if (bias) // bias last
      v += bv;
    y_row[p] = float(v);
  }
}

const float *bias_or_null(const ConvShape &s, const float *bias) { return s.bias ? bias : nullptr; }

} // namespace

void conv_cpu_f64(const ConvShape &s, const float *x, const float *w, const float *bias, float *y,
                  ThreadPool &pool) {
  s.validate();
  const float *bv = bias_or_null(s, bias);
  const int64_t lo = s.l_out();
  pool.parallel_for(s.batch * s.cout, [&](int64_t begin, int64_t end) {
    std::vector<double> acc(static_cast<size_t>(lo));
    for (int64_t row = begin; row < end; ++row) {
      const int64_t b = row / s.cout, oc = row % s.cout;
      float *y_row = y + row * lo;
      if (s.op == ConvOp::forward)
        forward_f64_row(s, x, w, bv, b, oc, acc, y_row);
      else
        transposed_f64_row(s, x, w, bv, b, oc, acc, y_row);
    }
  });
}

// cpu-f32 lives in cpu_f32_conv.cpp (a register-blocked polyphase GEMM per instruction set).
void conv_cpu_f32(const ConvShape &s, const float *x, const float *w, const float *bias, float *y,
                  ThreadPool &pool) {
  cpu_f32::conv(cpu_f32::best_isa(), s, x, w, bias, y, pool);
}

const char *cpu_f32_isa() { return cpu_f32::isa_name(cpu_f32::best_isa()); }

namespace {
constexpr cpu_f32::Isa kIsas[] = {cpu_f32::Isa::avx512, cpu_f32::Isa::avx2, cpu_f32::Isa::generic};

cpu_f32::Isa isa_named(const char *name) {
  for (cpu_f32::Isa i : kIsas)
    if (std::string(cpu_f32::isa_name(i)) == name)
      return i;
  throw std::invalid_argument(std::string("cpu-f32: no instruction set named '") + name + "'");
}
} // namespace

const char *const *cpu_f32_isas() {
  static const char *const names[] = {cpu_f32::isa_name(kIsas[0]), cpu_f32::isa_name(kIsas[1]),
                                      cpu_f32::isa_name(kIsas[2]), nullptr};
  return names;
}

bool cpu_f32_isa_supported(const char *isa) { return cpu_f32::isa_supported(isa_named(isa)); }

void conv_cpu_f32_on(const char *isa, const ConvShape &s, const float *x, const float *w,
                     const float *bias, float *y, ThreadPool &pool) {
  cpu_f32::conv(isa_named(isa), s, x, w, bias, y, pool);
}

} // namespace convbench
