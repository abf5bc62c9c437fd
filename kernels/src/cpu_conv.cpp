// Host arms. Each pool item owns whole output rows (batch, oc), so the sequence of additions into
// a cell never depends on the thread count.
#include "convbench/cpu_conv.hpp"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "cpu_f32_conv.hpp"
#include "cpu_f64_tile.hpp"

namespace convbench {

namespace {

using cpu_f64::Isa;
using cpu_f64::kMaxTileRows;
using cpu_f64::max_rows;
using cpu_f64::tile;

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

// One thread's scratch, kept across its items: the rows' accumulators, the tile's tap table, and
// a transposed phase's taps (k) with their input offsets (t = q + c).
struct F64Scratch {
  std::vector<double> acc;
  std::vector<int64_t> xoff;
  std::vector<double> w;
  std::vector<int64_t> ks, cs;
};

// Rows oc0 .. oc0 + rows - 1 of batch b, forward (Conv1d): bias first, then ic ascending, k
// ascending. acc[r] holds row r's l_out cells. With stride 1 the cells every tap reaches run in
// the register tile (cpu_f64_tile.hpp); the others, and every cell of a strided shape, take the
// per-tap sweep, cell range by cell range. Each cell is done entirely by one of the two.
void forward_f64_rows(Isa isa, const ConvShape &s, const float *x, const float *w,
                      const float *bias, int64_t b, int64_t oc0, int rows, F64Scratch &sc,
                      double *const *acc) {
  const int64_t lo = s.l_out();
  for (int r = 0; r < rows; ++r)
    std::fill(acc[r], acc[r] + lo, bias ? double(bias[oc0 + r]) : 0.0);
  int64_t in_lo = lo, done = lo;
  if (s.stride == 1 && max_rows(isa) > 0) {
    in_lo = std::clamp<int64_t>(s.padding, 0, lo);
    const int64_t in_hi =
        std::clamp<int64_t>(s.l_in - (s.k - 1) * s.dilation + s.padding, in_lo, lo);
    const int64_t taps = s.cin * s.k;
    sc.xoff.resize(size_t(taps));
    sc.w.resize(size_t(taps * rows));
    for (int64_t ic = 0, t = 0; ic < s.cin; ++ic)
      for (int64_t kk = 0; kk < s.k; ++kk, ++t) {
        sc.xoff[size_t(t)] = (b * s.cin + ic) * s.l_in + kk * s.dilation - s.padding;
        for (int r = 0; r < rows; ++r)
          sc.w[size_t(t * rows + r)] = double(w[((oc0 + r) * s.cin + ic) * s.k + kk]);
      }
    done = tile(isa, {sc.xoff.data(), sc.w.data(), taps, rows}, x, acc, in_lo, in_hi);
  } else {
    in_lo = done = 0; // no tile: the sweep takes every cell
  }
  // The per-tap sweep over [0, in_lo) and [done, lo).
  for (int r = 0; r < rows; ++r) {
    double *a = acc[r];
    for (int64_t ic = 0; ic < s.cin; ++ic) {
      const float *xrow = x + (b * s.cin + ic) * s.l_in;
      const float *wrow = w + ((oc0 + r) * s.cin + ic) * s.k;
      for (int64_t kk = 0; kk < s.k; ++kk) {
        const double wv = double(wrow[kk]);
        const int64_t off = kk * s.dilation - s.padding;
        const Range t = tap_range(lo, s.stride, off, s.l_in);
        for (const Range part :
             {Range{t.lo, std::min(t.hi, in_lo)}, Range{std::max(t.lo, done), t.hi}})
          for (int64_t o = part.lo; o < part.hi; ++o)
            a[o] += reference_term(xrow[o * s.stride + off], wv);
      }
    }
  }
}

// Rows oc0 .. oc0 + rows - 1 of batch b, transposed (ConvTranspose1d). The cells of a row fall
// into `stride` phases (p = q * stride + ph); a tap k reaches only the cells of one phase,
// ph = (k * dilation - padding) mod stride, from the inputs t = q + (ph - k * dilation +
// padding) / stride. acc[r] holds row r phase-major (nq cells a phase), so each tap is one
// contiguous sweep over its phase and over x; per cell the additions are the scatter's: ic
// ascending, then k descending (t ascending), bias last (added by the caller). The cells of a
// phase that every one of its taps reaches run in the register tile, the others in the sweep.
void transposed_f64_rows(Isa isa, const ConvShape &s, const float *x, const float *w, int64_t b,
                         int64_t oc0, int rows, int64_t nq, F64Scratch &sc, double *const *acc) {
  const int64_t lo = s.l_out(), st = s.stride;
  for (int r = 0; r < rows; ++r)
    std::fill(acc[r], acc[r] + st * nq, 0.0);
  for (int64_t ph = 0; ph < st; ++ph) {
    const int64_t q_cells = (lo - ph + st - 1) / st;
    // The phase's taps, k descending, and the cells all of them reach.
    std::vector<int64_t> &ks = sc.ks, &cs = sc.cs;
    ks.clear();
    cs.clear();
    int64_t in_lo = 0, in_hi = q_cells;
    for (int64_t kk = s.k - 1; kk >= 0; --kk) {
      const int64_t off = kk * s.dilation - s.padding; // p = t * stride + off
      if (((off % st) + st) % st != ph)
        continue;
      const int64_t c = (ph - off) / st; // t = q + c
      ks.push_back(kk);
      cs.push_back(c);
      in_lo = std::max<int64_t>(in_lo, -c);
      in_hi = std::min<int64_t>(in_hi, s.l_in - c);
    }
    if (ks.empty())
      continue;
    in_hi = std::max(in_hi, in_lo);
    int64_t done = in_lo;
    double *pa[kMaxTileRows];
    for (int r = 0; r < rows; ++r)
      pa[r] = acc[r] + ph * nq;
    if (max_rows(isa) > 0 && in_hi > in_lo) {
      const int64_t taps = s.cin * int64_t(ks.size());
      sc.xoff.resize(size_t(taps));
      sc.w.resize(size_t(taps * rows));
      int64_t t = 0;
      for (int64_t ic = 0; ic < s.cin; ++ic)
        for (size_t j = 0; j < ks.size(); ++j, ++t) {
          sc.xoff[size_t(t)] = (b * s.cin + ic) * s.l_in + cs[j];
          for (int r = 0; r < rows; ++r)
            sc.w[size_t(t * rows + r)] = double(w[(ic * s.cout + oc0 + r) * s.k + ks[j]]);
        }
      done = tile(isa, {sc.xoff.data(), sc.w.data(), taps, rows}, x, pa, in_lo, in_hi);
    } else {
      in_lo = in_hi = done = 0; // no tile: the sweep takes every cell
    }
    // The per-tap sweep over the phase's cells outside [in_lo, done).
    for (int r = 0; r < rows; ++r) {
      double *ar = pa[r];
      for (int64_t ic = 0; ic < s.cin; ++ic) {
        const float *xrow = x + (b * s.cin + ic) * s.l_in;
        const float *wrow = w + (ic * s.cout + oc0 + r) * s.k;
        for (size_t j = 0; j < ks.size(); ++j) {
          const double wv = double(wrow[ks[j]]);
          const int64_t c = cs[j];
          const int64_t q_lo = std::max<int64_t>(0, -c);
          const int64_t q_hi = std::min<int64_t>(q_cells, s.l_in - c);
          const float *xs = xrow + c;
          for (const Range part :
               {Range{q_lo, std::min(q_hi, in_lo)}, Range{std::max(q_lo, done), q_hi}})
            for (int64_t q = part.lo; q < part.hi; ++q)
              ar[q] += reference_term(xs[q], wv);
        }
      }
    }
  }
}

const float *bias_or_null(const ConvShape &s, const float *bias) { return s.bias ? bias : nullptr; }

} // namespace

void cpu_f64::conv(Isa isa, const ConvShape &s, const float *x, const float *w, const float *bias,
                   float *y, ThreadPool &pool) {
  s.validate();
  const float *bv = bias_or_null(s, bias);
  const int64_t lo = s.l_out(), st = s.stride, nq = (lo + st - 1) / st;
  const int64_t row_cells = s.op == ConvOp::forward ? lo : st * nq;
  // Work items: groups of up to `group` consecutive oc rows of one batch, the tile's rows, halved
  // while that leaves fewer than two items a worker (a narrow stage keeps every worker busy).
  // Each item owns its rows, so the sequence of additions into a cell depends neither on the
  // thread count nor on the grouping.
  int group = std::max(1, max_rows(isa));
  while (group > 1 && s.batch * ((s.cout + group - 1) / group) < 2 * int64_t(pool.size()))
    group /= 2;
  const int64_t per_batch = (s.cout + group - 1) / group;
  pool.parallel_for(s.batch * per_batch, [&](int64_t begin, int64_t end) {
    F64Scratch sc;
    sc.acc.resize(size_t(group * row_cells));
    double *acc[kMaxTileRows];
    for (int r = 0; r < group; ++r)
      acc[r] = sc.acc.data() + r * row_cells;
    for (int64_t item = begin; item < end; ++item) {
      const int64_t b = item / per_batch, oc0 = (item % per_batch) * group;
      const int rows = int(std::min<int64_t>(group, s.cout - oc0));
      if (s.op == ConvOp::forward) {
        forward_f64_rows(isa, s, x, w, bv, b, oc0, rows, sc, acc);
        for (int r = 0; r < rows; ++r)
          std::transform(acc[r], acc[r] + lo, y + (b * s.cout + oc0 + r) * lo,
                         [](double v) { return float(v); });
      } else {
        transposed_f64_rows(isa, s, x, w, b, oc0, rows, nq, sc, acc);
        for (int r = 0; r < rows; ++r) {
          float *y_row = y + (b * s.cout + oc0 + r) * lo;
          for (int64_t p = 0; p < lo; ++p) {
            double v = acc[r][(p % st) * nq + p / st];
            if (bv) // bias last
              v += double(bv[oc0 + r]);
            y_row[p] = float(v);
          }
        }
      }
    }
  });
}

void conv_cpu_f64(const ConvShape &s, const float *x, const float *w, const float *bias, float *y,
                  ThreadPool &pool) {
  cpu_f64::conv(cpu_f32::best_isa(), s, x, w, bias, y, pool);
}

// cpu-f32 lives in cpu_f32_conv.cpp (a register-blocked polyphase GEMM per instruction set).
void conv_cpu_f32(const ConvShape &s, const float *x, const float *w, const float *bias, float *y,
                  ThreadPool &pool) {
  cpu_f32::conv(cpu_f32::best_isa(), s, x, w, bias, y, pool);
}

const char *cpu_f32_isa() { return cpu_f32::isa_name(cpu_f32::best_isa()); }
const char *cpu_f64_isa() { return cpu_f32::isa_name(cpu_f32::best_isa()); }

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

namespace convbench::cpu_f64 {

int max_rows(Isa isa) {
  switch (isa) {
  case Isa::avx512:
    return kAvx512Rows;
  case Isa::avx2:
    return kAvx2Rows;
  default:
    return 0;
  }
}

int64_t tile(Isa isa, const TapTable &t, const float *x, double *const *acc, int64_t c_lo,
             int64_t c_hi) {
  switch (isa) {
  case Isa::avx512:
    return tile_avx512(t, x, acc, c_lo, c_hi);
  case Isa::avx2:
    return tile_avx2(t, x, acc, c_lo, c_hi);
  default:
    return c_lo;
  }
}

} // namespace convbench::cpu_f64
