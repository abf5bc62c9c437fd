// Host side of the tensor-core arms: support, names and issued multiply-adds (no CUDA needed).
#include "convbench/tc_conv.hpp"

#include "tc_plan.hpp"

namespace convbench::tc {

std::string to_string(Precision p) { return p == Precision::tf32 ? "tf32" : "f64-dmma"; }

bool tc_supported(const ConvShape &s, std::string *why) {
  const std::string r = detail::unsupported_reason(s);
  if (why)
    *why = r;
  return r.empty();
}

namespace {
int chunk(Precision p) { return p == Precision::tf32 ? detail::kBKcTf32 : detail::kBKcF64; }
} // namespace

std::string tc_kernel_name(const ConvShape &s, Precision p) {
  const detail::Plan P = detail::base_plan(s);
  return std::string("polyphase wmma ") +
         (p == Precision::tf32 ? "tf32 m16n16k8 f32-acc" : "f64 dmma m8n8k4 f64-acc") + " tile " +
         detail::shape_name(detail::choose_shape(P)) + " k" + std::to_string(chunk(p)) + " m" +
         std::to_string(P.m);
}

int64_t tc_issued_macs(const ConvShape &s, Precision p) {
  const detail::Plan P = detail::base_plan(s);
  return detail::issued_macs(P, detail::choose_shape(P), chunk(p));
}

} // namespace convbench::tc
