// Host side of the tensor-core arms: which kernel family runs a shape, support, names and issued
// multiply-adds.
#include "convbench/tc_conv.hpp"

#include "dm_plan.hpp"
#include "hopper_plans.hpp"
#include "tc_plan.hpp"
#include "wg_launch.hpp"
#include "wg_plan.hpp"

namespace convbench::tc {

std::string to_string(Precision p) {
  switch (p) {
  case Precision::tf32:
    return "tf32";
  case Precision::f32x3:
    return "f32x3";
  case Precision::f64:
    break;
  }
  return "f64-dmma";
}

std::vector<DmmaTile> dmma_tiles() {
  std::vector<DmmaTile> t;
  for (const dm::TileShape &ts : dm::kTiles)
    t.push_back({ts.bm, ts.bn});
  return t;
}
int dmma_max_split() { return dm::kMaxSplit; }

bool wmma_supported(const ConvShape &s, std::string *why) {
  const std::string r = detail::unsupported_reason(s);
  if (why)
    *why = r;
  return r.empty();
}

namespace {
int chunk(Precision p) {
  return p == Precision::tf32    ? detail::kBKcTf32
         : p == Precision::f32x3 ? detail::kBKcF32x3
                                 : detail::kBKcF64;
}
// The MMA each arm issues, in words.
const char *mma_name(Precision p) {
  return p == Precision::tf32    ? "tf32 m16n16k8 f32-acc"
         : p == Precision::f32x3 ? "3xtf32 m16n16k8 f32-acc"
                                 : "f64 dmma m8n8k4 f64-acc";
}
// Tensor-core products per multiply-add of the GEMM.
int64_t terms(Precision p) { return p == Precision::f32x3 ? detail::kSplitTerms : 1; }
} // namespace

namespace {
// The plan launch_wmma_* runs with a workspace: block shape, tiling and split.
detail::Plan launched_plan(const ConvShape &s, Precision p, detail::Shape *g) {
  detail::Plan P = detail::base_plan(s);
  *g = detail::choose_shape(P);
  detail::tile_plan(P, *g, chunk(p));
  detail::set_splits(P, detail::chosen_splits(P));
  return P;
}
} // namespace

std::string wmma_kernel_name(const ConvShape &s, Precision p) {
  detail::Shape g;
  const detail::Plan P = launched_plan(s, p, &g);
  return std::string("polyphase wmma ") + mma_name(p) + " tile " + detail::shape_name(g) + " k" +
         std::to_string(chunk(p)) + " m" + std::to_string(P.m) +
         (P.splits > 1 ? " split-k " + std::to_string(P.splits) : "");
}

size_t wmma_workspace_bytes(const ConvShape &s, Precision p) {
  detail::Shape g;
  const detail::Plan P = launched_plan(s, p, &g);
  return detail::workspace_bytes(P, p == Precision::f64 ? sizeof(double) : sizeof(float));
}

int64_t wmma_issued_macs(const ConvShape &s, Precision p) {
  const detail::Plan P = detail::base_plan(s);
  return terms(p) * detail::issued_macs(P, detail::choose_shape(P), chunk(p));
}

namespace {
// Why the wgmma kernels (tf32, f32x3) or the DMMA kernels (f64) do not run s in precision p on
// this device ("" when they do).
std::string hopper_reason(const ConvShape &s, Precision p, const TcOptions &o) {
  if (o.wmma)
    return "the WMMA kernels were asked for";
  std::string why = p == Precision::f64 ? dm::unsupported_reason(s) : wg::unsupported_reason(s);
  if (why.empty())
    why = wg::device_reason();
  return why;
}
wg::Math math(Precision p) { return p == Precision::f32x3 ? wg::Math::f32x3 : wg::Math::tf32; }
} // namespace

wg::Plan wg_plan(const ConvShape &s, Precision p, const TcOptions &o) {
  const wg::Forced f{o.along, o.n, o.split, o.gpb, o.window, o.persist, o.stages};
  return wg::plan(s, math(p), device_facts(), f);
}
dm::Plan dm_plan(const ConvShape &s, const TcOptions &o) {
  return dm::plan(s, device_facts(), {o.bm, o.n, o.split});
}

namespace {
// Whether plan q is the variant o forces.
bool honours(const wg::Plan &q, const TcOptions &o) {
  return !o.bm && (!o.along || int(q.along) + 1 == o.along) && (!o.n || q.n == o.n) &&
         (!o.split || q.split == o.split) && (!o.gpb || q.gpb == o.gpb) &&
         (!o.window || (q.along == wg::Along::positions && q.wtaps == 1)) &&
         (!o.persist || (q.along == wg::Along::positions && q.persistent == (o.persist == 2))) &&
         (!o.stages || (q.along == wg::Along::positions && q.buffers == o.stages));
}
bool honours(const dm::Plan &q, const TcOptions &o) {
  return !o.along && !o.gpb && !o.window && !o.persist && !o.stages &&
         (!o.bm || q.g.row_tile == o.bm) && (!o.n || q.g.col_tile == o.n) &&
         (!o.split || q.g.split == o.split);
}
} // namespace

bool tc_supported(const ConvShape &s, Precision p, std::string *why, const TcOptions &o) {
  const std::string h = hopper_reason(s, p, o);
  if (o.forced()) { // a forced variant: the Hopper kernels exactly so, or nothing
    std::string r = h;
    if (r.empty() && p == Precision::f64) {
      const dm::Plan q = dm_plan(s, o);
      if (!honours(q, o))
        r = "the shape does not take that variant (its plan: " + dm::kernel_name(q) + ")";
    } else if (r.empty()) {
      const wg::Plan q = wg_plan(s, p, o);
      if (!honours(q, o))
        r = "the shape does not take that variant (its plan: " + wg::kernel_name(q) + ")";
    }
    if (why)
      *why = r;
    return r.empty();
  }
  if (h.empty())
    return true;
  std::string m;
  if (wmma_supported(s, &m))
    return true;
  if (why)
    *why = (p == Precision::f64 ? "DMMA: " : "wgmma: ") + h + "; WMMA: " + m;
  return false;
}

std::string tc_kernel_name(const ConvShape &s, Precision p, const TcOptions &o) {
  if (hopper_reason(s, p, o).empty())
    return p == Precision::f64 ? dm::kernel_name(dm_plan(s, o)) : wg::kernel_name(wg_plan(s, p, o));
  return wmma_kernel_name(s, p);
}

int64_t tc_issued_macs(const ConvShape &s, Precision p, const TcOptions &o) {
  if (hopper_reason(s, p, o).empty())
    return p == Precision::f64 ? dm::issued_macs(dm_plan(s, o)) : wg::issued_macs(wg_plan(s, p, o));
  return wmma_issued_macs(s, p);
}

size_t tc_extra_device_bytes(const ConvShape &s, Precision p, const TcOptions &o) {
  if (hopper_reason(s, p, o).empty()) {
    if (p == Precision::f64) {
      const dm::Plan d = dm_plan(s, o);
      return size_t(8 * (dm::packed_weight_doubles(d) + dm::workspace_doubles(d)));
    }
    const wg::Plan w = wg_plan(s, p, o);
    const int64_t planes = p == Precision::f32x3 ? 2 : 1;
    return size_t(4 * planes * (wg::packed_weight_floats(w) + wg::transposed_input_floats(w)));
  }
  return o.workspace ? wmma_workspace_bytes(s, p) : 0;
}

} // namespace convbench::tc
