#include "plan.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>
#include <string>

#include "configs.hpp"
#include "convbench/fast_conv.hpp"
#include "polyphase_plan.hpp"

namespace convbench::fast {
namespace detail {

std::string unsupported_reason(const ConvShape &s) {
  const std::string why = polyphase::unsupported_reason(s);
  if (!why.empty())
    return why;
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
  static_cast<polyphase::Geometry &>(p) = polyphase::geometry(s);
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
  int64_t u_max = 0;
  for (int64_t r = 0; r < s.stride; ++r)
    u_max = std::max(u_max, polyphase::phase_cells(p.l_out, p.pad, p.s, r));
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
struct Fallback {
  Arm arm;
  FastConfig config;
};
// kTuned: the fastest correct block per vocoder stage shape and arm of the last sweep; kFallback:
// per arm the block with the best geometric mean over that sweep
// (kernels/fast/tools/fast_tuning.py).
#include "tuned_configs.inc"

} // namespace

FastConfig choose_fast_config(const ConvShape &s, bool f64, bool fused, bool *tuned) {
  const Arm arm = !f64 ? Arm::kF32 : (fused ? Arm::kF64Fma : Arm::kF64);
  if (tuned)
    *tuned = false;
  // The table's row for this stage (channels, kernel, stride, padding) at the nearest length
  // (log scale) when this length was not swept: a leave-one-out over a sweep (each frame count
  // left out in turn) put that choice closer to the best than the geomean-best block.
  const Tuned *nearest = nullptr;
  double nearest_d = 0;
  for (const Tuned &t : kTuned)
    if (t.arm == arm && t.cin == s.cin && t.cout == s.cout && t.k == s.k && t.stride == s.stride &&
        t.padding == s.padding && fast_config_unsupported_reason(s, t.config, f64).empty()) {
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
  // Other shapes: the arm's geomean-best block where it is compiled for them, else the default.
  for (const Fallback &f : kFallback)
    if (f.arm == arm && fast_config_unsupported_reason(s, f.config, f64).empty())
      return f.config;
  return default_fast_config();
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
  int n =
      std::snprintf(buf, sizeof buf, "t%d-c%d-k%d-u%d", threads, cells_per_thread, chunk, u_groups);
  if (rows_per_thread != 4 && n > 0 && n < int(sizeof buf))
    n += std::snprintf(buf + n, sizeof buf - size_t(n), "-r%d", rows_per_thread);
  if (min_blocks != 1 && n > 0 && n < int(sizeof buf))
    n += std::snprintf(buf + n, sizeof buf - size_t(n), "-b%d", min_blocks);
  if (row_major && n > 0 && n < int(sizeof buf))
    n += std::snprintf(buf + n, sizeof buf - size_t(n), "-rm");
  if (buffers != 0 && n > 0 && n < int(sizeof buf))
    n += std::snprintf(buf + n, sizeof buf - size_t(n), "-a%d", buffers);
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
    // The 8-row tiles split 2, 4 and 8. The 4 x 4 and 4 x 2 tiles (but the default and the
    // row-major control) split 2 and 4: at 96 frames the 96-position tiles' grids are about half
    // a wave, where a split of 2 fills one wave without the tile waste of the 64-position tiles.
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
  if (c.buffers != 0) {
    if (f64)
      return "block configuration " + c.name() +
             " copies f32 through cp.async: f32 only (the f64 kernels convert on the way)";
    // Its x offsets are int over a whole chunk's rows (polyphase_tile.hpp, AsyncCursor).
    if (std::max<int64_t>(s.cin, c.chunk) * s.l_in >= (int64_t{1} << 31))
      return "block configuration " + c.name() +
             ": max(cin, chunk) x l_in too large for 32-bit "
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
