// cpu-f32's tile in portable C++ (any CPU): 4 oc rows x 8 cells; a multiply
// then an add (two f32 roundings, no FMA: the root compiles with
// -ffp-contract=off), still all in f32.
#include <cstdint>
#include <utility>

#include "cpu_f32_plan.hpp"

namespace convbench::cpu_f32 {
namespace {

struct V {
  struct R {
    float v[4];
  };
  static constexpr int VL = 4;
  static R zero() { return R{{0.0f, 0.0f, 0.0f, 0.0f}}; }
  static R load(const float *p) { return R{{p[0], p[1], p[2], p[3]}}; }
  static R bcast(const float *p) { return R{{*p, *p, *p, *p}}; }
  static R fma(R a, R b, R c) {
    for (int l = 0; l < 4; ++l)
      c.v[l] = a.v[l] * b.v[l] + c.v[l];
    return c;
  }
  static R add(R a, R b) {
    for (int l = 0; l < 4; ++l)
      a.v[l] += b.v[l];
    return a;
  }
  static void store(float *p, R v) {
    for (int l = 0; l < 4; ++l)
      p[l] = v.v[l];
  }
};
constexpr int kMR = 4;
constexpr int kNV = 2;

#define CONVBENCH_CPU_F32_TILE_BODY
#include "cpu_f32_tile.hpp"

} // namespace

Block block_generic() { return {kMR, kNR}; }

void run_items_generic(const Plan &p, int64_t begin, int64_t end, float *scratch) {
  for (int64_t item = begin; item < end; ++item)
    run_item(p, item, scratch);
}

} // namespace convbench::cpu_f32
