// The correctness gate: an arm's output against the cpu-f64 reference, before any timing.
#pragma once

#include <cstdint>
#include <vector>

#include <nlohmann/json.hpp>

#include "arm.hpp"

namespace convbench::bench {

struct GateResult {
  GateKind kind = GateKind::reference;
  bool pass = true;
  int64_t mismatches = 0;    // cells whose bytes differ from the reference
  double max_abs_err = 0;    // NaN/inf outputs make these non-finite and the gate fail
  double rel_l2_err = 0;     // ||y - ref|| / ||ref||
  double tolerance = 0;      // rel L2 bound (tolerance gates)
  uint32_t output_crc32 = 0; // zlib CRC-32 of the output's bytes: ties a --dump file to the run
  // The bitwise comparison with the arm's peer (Arm::bitwise_peer), when the peer ran too.
  std::string peer;            // "<arm>/<staging>" compared with; "" when none was
  int64_t peer_mismatches = 0; // cells whose bytes differ from the peer's
};

// bitwise: pass iff no cell differs (memcmp). tolerance: pass iff rel_l2_err <= tolerance and
// every output is finite. reference: the reference itself (pass).
GateResult gate_output(GateKind kind, double tolerance, const std::vector<float> &y,
                       const std::vector<float> &ref);

uint32_t crc32(const void *data, size_t bytes);

} // namespace convbench::bench
