// Host side of the tensor-core arms: support, names and issued multiply-adds (no CUDA needed).
#include "convbench/tc_conv.hpp"

#include "tc_plan.hpp"

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

bool tc_supported(const ConvShape &s, std::string *why) {
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
// The plan launch_tc_* runs with a workspace: block shape, tiling and split.
detail::Plan launched_plan(const ConvShape &s, Precision p, detail::Shape *g) {
  detail::Plan P = detail::base_plan(s);
  *g = detail::choose_shape(P);
  detail::tile_plan(P, *g, chunk(p));
  detail::set_splits(P, detail::chosen_splits(P));
  return P;
}
} // namespace

std::string tc_kernel_name(const ConvShape &s, Precision p) {
  detail::Shape g;
  const detail::Plan P = launched_plan(s, p, &g);
  return std::string("polyphase wmma ") + mma_name(p) + " tile " + detail::shape_name(g) + " k" +
         std::to_string(chunk(p)) + " m" + std::to_string(P.m) +
         (P.splits > 1 ? " split-k " + std::to_string(P.splits) : "");
}

size_t tc_workspace_bytes(const ConvShape &s, Precision p) {
  detail::Shape g;
  const detail::Plan P = launched_plan(s, p, &g);
  return detail::workspace_bytes(P, p == Precision::f64 ? sizeof(double) : sizeof(float));
}

int64_t tc_issued_macs(const ConvShape &s, Precision p) {
  const detail::Plan P = detail::base_plan(s);
  return terms(p) * detail::issued_macs(P, detail::choose_shape(P), chunk(p));
}

} // namespace convbench::tc
