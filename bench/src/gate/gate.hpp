// The correctness gate: an arm's output against the cpu-f64 reference, before any timing.
#pragma once

#include "core/types.hpp"

#include <cstdint>
#include <vector>

#include <nlohmann/json.hpp>

#include "plan/arm.hpp"

namespace convbench::bench {

// bitwise: pass iff no cell differs (memcmp). tolerance: pass iff rel_l2_err <= tolerance and
// every output is finite. reference: the reference itself (pass). `ref` is the cpu-f64 reference
// as its arm outputs it, rounded to f32; every error (abs, rel L2, worst-cell rel, the allclose
// needs per floor) is taken in f64 against those f32 cells, in one pass.
GateResult gate_output(GateKind kind, double tolerance, const std::vector<float> &y,
                       const std::vector<float> &ref);

uint32_t crc32(const void *data, size_t bytes);

} // namespace convbench::bench
