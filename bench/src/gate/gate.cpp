#include "gate/gate.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <vector>

namespace convbench::bench {

uint32_t crc32(const void *data, size_t bytes) {
  static const std::array<uint32_t, 256> table = [] {
    std::array<uint32_t, 256> t{};
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k)
        c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
      t[i] = c;
    }
    return t;
  }();
  uint32_t c = 0xFFFFFFFFu;
  auto p = static_cast<const unsigned char *>(data);
  for (size_t i = 0; i < bytes; ++i)
    c = table[(c ^ p[i]) & 0xFF] ^ (c >> 8);
  return c ^ 0xFFFFFFFFu;
}

namespace {

// Folds one cell into the allclose needs: per floor, max(0, |y - ref| - floor) / |ref| (inf when
// ref is 0). Floors ascend, so a cell stops at the first floor that covers its difference.
void fold_allclose(double abs_err, double abs_ref, std::vector<double> &need) {
  for (size_t k = 0; k < need.size() && abs_err > kAllcloseFloors[k]; ++k)
    need[k] = std::max(need[k], abs_ref > 0 ? (abs_err - kAllcloseFloors[k]) / abs_ref : INFINITY);
}

} // namespace

GateResult gate_output(GateKind kind, double tolerance, const std::vector<float> &y,
                       const std::vector<float> &ref) {
  GateResult g;
  g.kind = kind;
  g.tolerance = kind == GateKind::tolerance ? tolerance : 0.0;
  g.output_crc32 = crc32(y.data(), y.size() * sizeof(float));
  if (y.size() != ref.size()) {
    g.pass = false;
    g.mismatches = int64_t(std::max(y.size(), ref.size()));
    g.max_abs_err = g.rel_l2_err = g.max_rel_err = INFINITY;
    return g;
  }
  double err2 = 0, ref2 = 0;
  bool finite = true;
  std::vector<double> need(std::size(kAllcloseFloors), 0.0);
  for (size_t i = 0; i < y.size(); ++i) {
    if (std::memcmp(&y[i], &ref[i], sizeof(float)) != 0)
      ++g.mismatches;
    double d = double(y[i]) - double(ref[i]);
    if (!std::isfinite(d))
      finite = false;
    g.max_abs_err = std::max(g.max_abs_err, std::fabs(d));
    fold_allclose(std::fabs(d), std::fabs(double(ref[i])), need);
    err2 += d * d;
    ref2 += double(ref[i]) * double(ref[i]);
  }
  g.rel_l2_err = ref2 > 0 ? std::sqrt(err2 / ref2) : (err2 > 0 ? INFINITY : 0.0);
  if (finite) {
    g.max_rel_err = need[0];
    g.allclose_rel_needed = std::move(need);
  } else {
    g.max_abs_err = g.rel_l2_err = g.max_rel_err = INFINITY;
  }
  switch (kind) {
  case GateKind::reference:
    g.pass = true;
    break;
  case GateKind::bitwise:
    g.pass = g.mismatches == 0;
    break;
  case GateKind::tolerance:
    g.pass = finite && g.rel_l2_err <= tolerance;
    break;
  case GateKind::gemm: // never compared with the reference (PreparedArm::own_check)
  case GateKind::self:
    g.pass = false;
    break;
  }
  return g;
}

} // namespace convbench::bench
