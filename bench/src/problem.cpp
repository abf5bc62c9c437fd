#include "problem.hpp"

#include <cmath>
#include <random>

#include "shuffle.hpp"

namespace convbench::bench {

double Problem::flops() const {
  double f = 0;
  for (const auto &s : shapes)
    f += s.flops();
  return f;
}

double Problem::min_bytes() const {
  double b = 0;
  for (const auto &s : shapes)
    b += s.min_bytes();
  return b;
}

double Problem::host_bytes() const {
  double n = 0;
  for (const auto &s : shapes)
    n += double(s.input_elems()) + double(s.weight_elems()) + double(s.cout) +
         double(s.output_elems());
  return 4.0 * n;
}

Problem plan_problem(const std::string &stage, int64_t frames, std::vector<ConvShape> shapes,
                     std::vector<std::string> stage_names) {
  Problem p;
  p.stage = stage;
  p.frames = frames;
  p.shapes = std::move(shapes);
  p.stage_names = std::move(stage_names);
  return p;
}

namespace {
void fill_uniform(std::vector<float> &v, int64_t n, double bound, std::mt19937_64 &rng) {
  v.resize(size_t(n));
  // 53 random bits -> [0, 1) -> [-bound, bound): fully specified, unlike
  // std::uniform_real_distribution.
  for (auto &x : v) {
    double u = double(rng() >> 11) * 0x1.0p-53;
    x = float((2.0 * u - 1.0) * bound);
  }
}
} // namespace

void fill_problem(Problem &p, uint64_t run_seed) {
  p.seed = splitmix64(run_seed ^ fnv1a64(p.stage + "/" + std::to_string(p.frames)));
  std::mt19937_64 rng(p.seed);
  fill_uniform(p.input, p.shapes[0].input_elems(), 1.0, rng);
  p.weights.resize(p.shapes.size());
  p.biases.resize(p.shapes.size());
  for (size_t i = 0; i < p.shapes.size(); ++i) {
    const auto &s = p.shapes[i];
    // torch's fan_in: weight.size(1) * k, which is cout for ConvTranspose1d, cin for Conv1d.
    double fan_in = double(s.op == ConvOp::transposed ? s.cout : s.cin) * double(s.k);
    double bound = 1.0 / std::sqrt(fan_in);
    fill_uniform(p.weights[i], s.weight_elems(), bound, rng);
    fill_uniform(p.biases[i], s.bias ? s.cout : 0, bound, rng);
  }
}

} // namespace convbench::bench
