#include "plan/floors.hpp"

#include <algorithm>

namespace convbench::bench {

std::optional<CaseFloor> case_floor(const Case &c, const std::optional<DeviceFloors> &floors) {
  if (!floors || !c.arm->device())
    return std::nullopt;
  const Problem &p = *c.problem;
  CaseFloor f;
  f.fp32_fma = p.flops() / floors->fp32_fma;
  f.fp64_fma = p.flops() / floors->fp64_fma;
  f.fp64_nofma = p.flops() / floors->fp64_nofma;
  f.fp64_dmma = p.flops() / floors->fp64_dmma;
  f.memory = p.min_bytes() / floors->memory;
  f.arm_kind = c.arm->floor_kind();
  const double arith =
      f.arm_kind == "memory" ? f.memory : p.flops() / floors->rate(f.arm_kind); // throws if unknown
  f.arm = std::max(arith, f.memory);
  return f;
}

} // namespace convbench::bench
