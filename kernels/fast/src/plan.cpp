#include "plan.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>
#include <string>

#include "configs.hpp"
#include "convbench/fast_conv.hpp"

namespace convbench::fast {
namespace detail {

std::string unsupported_reason(const ConvShape &s) {
  try {
    s.validate();
  } catch (const ShapeError &e) {
    return std::string("invalid shape: ") + e.what();
  }
  if (s.op != ConvOp::transposed)
    return "forward Conv1d is not handled by the fast path";
  if (s.dilation != 1)
    return "dilation != 1";
  if (s.stride < 1 || s.k % s.stride != 0)
    return "K is not a multiple of the stride";
  if (s.k / s.stride > 4)
    return "more than 4 taps per phase (K / stride > 4)";
  if (s.padding < 0)
    return "negative padding";
  if (s.l_out() <= 0)
    return "empty output";
  // The kernels use 32-bit element offsets inside one input channel's rows and the weights.
  constexpr int64_t kMax = int64_t{1} << 31;
  if (s.weight_elems() >= kMax || s.cin * s.l_in >= kMax || s.l_in + s.k >= kMax)
    return "tensor too large for 32-bit offsets";
  return "";
}

Plan make_plan(const ConvShape &s) { return make_plan(s, default_fast_config()); }

Plan make_plan(const ConvShape &s, const FastConfig &c) {
  const std::string why = unsupported_reason(s);
  if (!why.empty())
    throw std::invalid_argument("fast conv: " + why);
  Plan p{};
  p.batch = s.batch;
  p.cin = s.cin;
  p.cout = s.cout;
  p.l_in = s.l_in;
  p.l_out = s.l_out();
  p.k = s.k;
  p.s = s.stride;
  p.pad = s.padding;
  p.m = static_cast<int>(s.k / s.stride);
  p.bias = s.bias;
  // Phases per thread: the largest of 4, 2, 1 dividing both s and pad % s, so that no group of
  // phases straddles the phase where c_r = ceil((pad - r) / s) steps down.
  const int64_t b = s.padding % s.stride;
  p.tr = 1;
  for (int tr : {4, 2}) {
    if (s.stride % tr == 0 && b % tr == 0) {
      p.tr = tr;
      break;
    }
  }
  p.groups = static_cast<int>(s.stride / p.tr);
  // Cells of phase r: u in [0, U_r), U_r = ceil((l_out + pad - r) / s) - c_r.
  int64_t u_max = 0;
  for (int64_t r = 0; r < s.stride; ++r) {
    const int64_t c = (s.padding - r + s.stride - 1) / s.stride;
    const int64_t hi = (p.l_out + s.padding - r + s.stride - 1) / s.stride;
    u_max = std::max(u_max, hi - c);
  }
  const int64_t bu = int64_t{c.cells_per_thread / c.rows_per_thread} * c.u_groups; // u per block
  p.u_tiles = std::max<int64_t>(1, (u_max + bu - 1) / bu);
  const int64_t bo = int64_t{c.threads / c.u_groups} * (c.rows_per_thread / p.tr); // oc per block
  p.oc_tiles = (s.cout + bo - 1) / bo;
  p.split = c.split;
  p.chunks = (s.cin + c.chunk - 1) / c.chunk;
  return p;
}

} // namespace detail

namespace {

enum class Arm { kF32, kF64, kF64Fma };
struct Tuned {
  int64_t cin, cout, k, stride, padding, l_in;
  Arm arm;
  FastConfig config;
};
// The fastest correct configuration per vocoder stage, frames count and arm on the H200
// (generated from the committed sweep; see the file's header).
constexpr Tuned kTuned[] = {
#include "tuned_configs.inc"
};

} // namespace

FastConfig choose_fast_config(const ConvShape &s, bool f64, bool fused, bool *tuned) {
  const Arm arm = !f64 ? Arm::kF32 : (fused ? Arm::kF64Fma : Arm::kF64);
  if (tuned)
    *tuned = false;
  // The table's row for this stage (channels, kernel, stride, padding) at the nearest length
  // (log scale) when this length was not swept: in a leave-one-out over the H200 sweep (each
  // frame count in turn left out, its stages given the config of the nearest swept one), that
  // config ran at 1.085 / 1.027 / 1.047x the best (geomean, f32 / f64 / f64-fma), where the
  // geomean-best fallback below ran at 1.126 / 1.029 / 1.088x (worst case 1.39 against 1.67).
  const Tuned *nearest = nullptr;
  double nearest_d = 0;
  for (const Tuned &t : kTuned)
    if (t.arm == arm && t.cin == s.cin && t.cout == s.cout && t.k == s.k &&
        t.stride == s.stride && t.padding == s.padding &&
        fast_config_unsupported_reason(s, t.config, f64).empty()) {
      if (t.l_in == s.l_in) {
        if (tuned)
          *tuned = true;
        return t.config;
      }
      const double d = std::fabs(std::log(double(t.l_in) / double(s.l_in)));
      if (!nearest || d < nearest_d) {
        nearest = &t;
        nearest_d = d;
      }
    }
  if (nearest)
    return nearest->config;
  // Other shapes: the configuration with the best geomean over the sweep's 48 cases
  // (f32 and f64: t128-c16-k16-u16, f64-fma: t128-c32-k16-u16-r8), where it is compiled.
  FastConfig c = default_fast_config();
  c.threads = 128;
  c.u_groups = 16;
  if (f64 && fused) {
    c.cells_per_thread = 32;
    c.rows_per_thread = 8;
  }
  return fast_config_unsupported_reason(s, c, f64).empty() ? c : default_fast_config();
}

int64_t fast_issued_macs(const ConvShape &s, const FastConfig &c) {
  const detail::Plan p = detail::make_plan(s, c);
  // Every thread of every block runs every chunk of its split's range (the ranges of a cluster
  // cover the chunks once): chunk channels x M taps x its cells.
  const int64_t blocks = int64_t(p.groups) * p.u_tiles * p.oc_tiles * p.batch;
  return blocks * c.threads * p.chunks * c.chunk * p.m * c.cells_per_thread;
}

std::string FastConfig::name() const {
  // snprintf, not "t" + std::to_string(..): GCC 12 at -O3 warns falsely on the latter (-Wrestrict).
  char buf[96];
  int n = std::snprintf(buf, sizeof buf, "t%d-c%d-k%d-u%d", threads, cells_per_thread, chunk,
                        u_groups);
  if (rows_per_thread != 4 && n > 0 && n < int(sizeof buf))
    n += std::snprintf(buf + n, sizeof buf - size_t(n), "-r%d", rows_per_thread);
  if (min_blocks != 1 && n > 0 && n < int(sizeof buf))
    n += std::snprintf(buf + n, sizeof buf - size_t(n), "-b%d", min_blocks);
  if (row_major && n > 0 && n < int(sizeof buf))
    n += std::snprintf(buf + n, sizeof buf - size_t(n), "-rm");
  if (stages != 0 && n > 0 && n < int(sizeof buf))
    n += std::snprintf(buf + n, sizeof buf - size_t(n), "-a%d", stages);
  if (split != 1 && n > 0 && n < int(sizeof buf))
    std::snprintf(buf + n, sizeof buf - size_t(n), "-s%d", split);
  return buf;
}

FastConfig default_fast_config() { return detail::runtime_config<detail::DefaultConfig>(); }

std::vector<FastConfig> fast_configs() {
  return std::apply(
      [](auto... cs) { return std::vector<FastConfig>{detail::runtime_config<decltype(cs)>()...}; },
      detail::CompiledConfigs{});
}

std::vector<FastConfig> fast_f32_configs() {
  std::vector<FastConfig> all = fast_configs();
  std::apply([&](auto... cs) { (all.push_back(detail::runtime_config<decltype(cs)>()), ...); },
             detail::F32OnlyConfigs{});
  const std::vector<FastConfig> blocks = all;
  for (const FastConfig &c : blocks) {
    // The 8-row tiles split 2, 4 and 8. The 4 x 4 tiles (but the default and the row-major
    // control) split 2 and 4 (session 4; the 4 x 2 tiles too, since session 7): at 96 frames their grids are
    // half a wave (512x up0/96, t192-c16-k12-u24: 192 blocks for 3 x 132 slots at 112 registers,
    // 188 us), where a split of 2 fills one wave without the 1.33x tile waste of the 64-position
    // tile that wins there today (165 us; cuDNN 152 us).
    const bool plain_4x4 = c.rows_per_thread == 4 && !c.row_major && !(c == default_fast_config());
    const int max_split = c.rows_per_thread == 8 ? 8 : plain_4x4 ? 4 : 1;
    for (int split = 2; split <= max_split; split *= 2) {
      FastConfig s = c;
      s.split = split;
      all.push_back(s);
    }
  }
  return all;
}

std::string fast_config_unsupported_reason(const ConvShape &s, const FastConfig &c, bool f64) {
  const std::string why = detail::unsupported_reason(s);
  if (!why.empty())
    return why;
  if (c.stages != 0) {
    if (f64)
      return "block configuration " + c.name() +
             " stages f32 through cp.async: f32 only (the f64 kernels convert on the way)";
    // Its x offsets are int over a whole chunk's rows (polyphase_tile.hpp, AsyncCursor).
    if (std::max<int64_t>(s.cin, c.chunk) * s.l_in >= (int64_t{1} << 31))
      return "block configuration " + c.name() + ": max(cin, chunk) x l_in too large for 32-bit "
             "offsets";
  }
  if (c.split != 1) {
    if (f64)
      return "split " + std::to_string(c.split) +
             " changes the f64 addition order (the byte-identity contract): f32 only";
    // A portable cluster has at most 8 blocks; every rank adds an equal slice of the tile.
    if (c.split < 1 || c.split > 8 || (c.threads * c.cells_per_thread) % c.split != 0)
      return "split " + std::to_string(c.split) +
             " must be 1..8 (a portable cluster) and divide the block's " +
             std::to_string(c.threads * c.cells_per_thread) + " cells";
    if (s.batch * c.split > 65535)
      return "batch x split exceeds the grid's z limit";
  }
  bool compiled = false;
  detail::with_config(c, [&](auto) { compiled = true; });
  if (!compiled)
    return "block configuration " + c.name() + " is not compiled (see fast_configs())";
  if (!(c == default_fast_config()) && s.k / s.stride != 2)
    return "block configuration " + c.name() +
           " is compiled only for K / stride == 2 taps per phase (the default handles all)";
  return "";
}

bool fast_supported(const ConvShape &s, bool /*f64*/) {
  return detail::unsupported_reason(s).empty();
}

} // namespace convbench::fast
