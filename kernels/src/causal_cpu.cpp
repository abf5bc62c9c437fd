// The causal depthwise conv1d on the host: the f64 reference and cpu-f32 (the device kernels'
// per-cell arithmetic). Each pool chunk owns whole rows (batch, channel).
#include <cmath>
#include <vector>

#include "causal_tile.hpp"
#include "convbench/causal_conv.hpp"

namespace convbench {

namespace {

bool row_state(const CausalConvShape &s, const CausalTensors &t, int64_t row) {
  return s.initial_state && t.has_initial_state[row / s.channels] != 0;
}

// xpad of one row: K - 1 state values (or zeros), then x.
void fill_xpad(const CausalConvShape &s, const CausalTensors &t, int64_t row,
               std::vector<float> &xp) {
  const int64_t km1 = s.k - 1;
  const bool st = row_state(s, t, row);
  for (int64_t j = 0; j < km1; ++j)
    xp[size_t(j)] = st ? t.initial_state[row * km1 + j] : 0.0f;
  const float *xr = t.x + row * s.length;
  for (int64_t j = 0; j < s.length; ++j)
    xp[size_t(km1 + j)] = xr[j];
}

void copy_final_state(const CausalConvShape &s, const CausalTensors &t, int64_t row,
                      const std::vector<float> &xp) {
  const int64_t km1 = s.k - 1;
  for (int64_t j = 0; j < km1; ++j)
    t.final_state[row * km1 + j] = xp[size_t(s.length + j)];
}

void f64_row(const CausalConvShape &s, const CausalTensors &t, int64_t row,
             std::vector<float> &xp) {
  fill_xpad(s, t, row, xp);
  const int64_t c = row % s.channels;
  const float *w = t.w + c * s.k;
  const double b = s.bias ? double(t.bias[c]) : 0.0;
  float *y = t.y + row * s.length;
  for (int64_t i = 0; i < s.length; ++i) {
    double acc = b; // bias first
    for (int64_t k = 0; k < s.k; ++k)
      acc += double(w[k]) * double(xp[size_t(i + k)]);
    if (s.activation == Activation::silu)
      acc = acc / (1.0 + std::exp(-acc));
    y[i] = float(acc);
  }
  copy_final_state(s, t, row, xp);
}

template <int K>
void f32_row(const CausalConvShape &s, const CausalTensors &t, int64_t row,
             std::vector<float> &xp) {
  fill_xpad(s, t, row, xp);
  const int64_t c = row % s.channels;
  float w[K], win[K];
  for (int k = 0; k < K; ++k)
    w[k] = t.w[c * K + k];
  const float b = s.bias ? t.bias[c] : 0.0f;
  const bool act = s.activation == Activation::silu;
  float *y = t.y + row * s.length;
  for (int64_t i = 0; i < s.length; ++i) {
    for (int k = 0; k < K; ++k)
      win[k] = xp[size_t(i + k)];
    y[i] = causal_detail::causal_cell<K>(w, win, b, act);
  }
  copy_final_state(s, t, row, xp);
}

// Other widths in the same order (the kernels are instantiated for 2..4 only).
void f32_row_any(const CausalConvShape &s, const CausalTensors &t, int64_t row,
                 std::vector<float> &xp) {
  fill_xpad(s, t, row, xp);
  const int64_t c = row % s.channels;
  const float b = s.bias ? t.bias[c] : 0.0f;
  float *y = t.y + row * s.length;
  for (int64_t i = 0; i < s.length; ++i) {
    float acc = b;
    for (int64_t k = 0; k < s.k; ++k)
      acc = causal_detail::add(acc, causal_detail::mul(t.w[c * s.k + k], xp[size_t(i + k)]));
    y[i] = s.activation == Activation::silu ? causal_detail::silu(acc) : acc;
  }
  copy_final_state(s, t, row, xp);
}

template <class RowFn> void for_rows(const CausalConvShape &s, ThreadPool &pool, RowFn fn) {
  s.validate();
  pool.parallel_for(s.batch * s.channels, [&](int64_t begin, int64_t end) {
    std::vector<float> xp(size_t(s.length + s.k - 1));
    for (int64_t row = begin; row < end; ++row)
      fn(row, xp);
  });
}

} // namespace

void causal_cpu_f64(const CausalConvShape &s, const CausalTensors &t, ThreadPool &pool) {
  for_rows(s, pool, [&](int64_t row, std::vector<float> &xp) { f64_row(s, t, row, xp); });
}

void causal_cpu_f32(const CausalConvShape &s, const CausalTensors &t, ThreadPool &pool) {
  for_rows(s, pool, [&](int64_t row, std::vector<float> &xp) {
    switch (s.k) {
    case 2:
      return f32_row<2>(s, t, row, xp);
    case 3:
      return f32_row<3>(s, t, row, xp);
    case 4:
      return f32_row<4>(s, t, row, xp);
    default:
      return f32_row_any(s, t, row, xp);
    }
  });
}

namespace cuda {

std::string to_string(CausalKernel k) { return k == CausalKernel::reg ? "register" : "tiled"; }

bool causal_supported(const CausalConvShape &s, std::string *why_not) {
  std::string why;
  try {
    s.validate();
  } catch (const ShapeError &e) {
    why = e.what();
  }
  if (why.empty() && (s.k < 2 || s.k > 4))
    why = "the causal CUDA kernels take k in {2, 3, 4}, not " + std::to_string(s.k);
  if (why.empty() && s.batch > 65535)
    why = "the tiled kernel takes at most 65535 sequences";
  if (why_not)
    *why_not = why;
  return why.empty();
}

std::string causal_kernel_name(const CausalConvShape &s, CausalKernel k, CausalOut out) {
  using namespace causal_detail;
  const std::string o = out == CausalOut::bf16 ? "bf16 out" : "f32 out";
  if (k == CausalKernel::reg)
    return "causal register k" + std::to_string(s.k) + " seg" + std::to_string(kRegSeg) + " " + o;
  int tile_c = 0, chunk = 0;
  tile_dims(tile_shape(s.length), tile_c, chunk);
  return "causal tiled k" + std::to_string(s.k) + " c" + std::to_string(tile_c) + " chunk" +
         std::to_string(chunk) + " " + o;
}

} // namespace cuda
} // namespace convbench
