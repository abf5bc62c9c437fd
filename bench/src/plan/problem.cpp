#include "plan/problem.hpp"

#include <cmath>
#include <random>

#include "core/shuffle.hpp"
#include "plan/catalog.hpp"

namespace convbench::bench {

int64_t Problem::output_elems() const {
  if (causal)
    return causal->output_elems() + causal->state_elems();
  return shapes.back().output_elems();
}

double Problem::flops() const {
  if (causal)
    return causal->flops();
  double f = 0;
  for (const auto &s : shapes)
    f += s.flops();
  return f;
}

double Problem::min_bytes() const {
  if (causal)
    return causal->min_bytes();
  double b = 0;
  for (const auto &s : shapes)
    b += s.min_bytes();
  return b;
}

double Problem::host_bytes() const {
  if (causal)
    return causal->min_bytes() + 4.0 * double(causal->state_elems());
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

Problem plan_stage(const std::string &stage, int64_t frames, const Model &m) {
  if (is_causal_stage(stage)) {
    Problem p;
    p.stage = stage;
    p.causal = causal_shape(stage);
    p.frames = p.causal->length;
    return p;
  }
  std::vector<std::string> names;
  if (stage == "chain")
    for (int i = 0; i < m.stages(); ++i)
      names.push_back("up" + std::to_string(i));
  else if (stage == "generator")
    names = m.generator_order();
  else
    names = {stage};
  std::vector<ConvShape> shapes;
  for (const auto &n : names) {
    shapes.push_back(m.named_shape(n, frames));
    try {
      shapes.back().validate();
    } catch (const ShapeError &e) {
      throw DataError(stage + " at " + std::to_string(frames) + " frames: invalid shape of " + n +
                      ": " + e.what());
    }
  }
  return plan_problem(stage, frames, std::move(shapes), std::move(names));
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

void fill_causal(Problem &p, std::mt19937_64 &rng) {
  const CausalConvShape &s = *p.causal;
  fill_uniform(p.input, s.input_elems(), 1.0, rng);
  // A depthwise conv's fan_in is its width.
  const double bound = 1.0 / std::sqrt(double(s.k));
  p.weights.assign(1, {});
  p.biases.assign(1, {});
  fill_uniform(p.weights[0], s.weight_elems(), bound, rng);
  fill_uniform(p.biases[0], s.bias ? s.channels : 0, bound, rng);
  if (s.initial_state) {
    fill_uniform(p.initial_state, s.state_elems(), 1.0, rng);
    p.has_initial_state.resize(size_t(s.batch));
    for (int64_t b = 0; b < s.batch; ++b)
      p.has_initial_state[size_t(b)] = b % 2 == 0 ? 1 : 0;
  }
}
} // namespace

void fill_problem(Problem &p, uint64_t run_seed) {
  p.seed = splitmix64(run_seed ^ fnv1a64(p.stage + "/" + std::to_string(p.frames)));
  std::mt19937_64 rng(p.seed);
  if (p.causal)
    return fill_causal(p, rng);
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

namespace {
nlohmann::json conv_shape_json(const ConvShape &s, const std::string &stage) {
  return {{"stage", stage},       {"op", s.op == ConvOp::transposed ? "transposed" : "forward"},
          {"batch", s.batch},     {"cin", s.cin},
          {"cout", s.cout},       {"k", s.k},
          {"stride", s.stride},   {"dilation", s.dilation},
          {"padding", s.padding}, {"output_padding", s.output_padding},
          {"l_in", s.l_in},       {"l_out", s.l_out()},
          {"bias", s.bias}};
}
} // namespace

nlohmann::json problem_shape_json(const Problem &p) {
  if (p.causal) {
    const CausalConvShape &s = *p.causal;
    return {{"stage", p.stage},
            {"op", "causal_depthwise"},
            {"batch", s.batch},
            {"channels", s.channels},
            {"cin", s.channels},
            {"cout", s.channels},
            {"k", s.k},
            {"l_in", s.length},
            {"l_out", s.length},
            {"bias", s.bias},
            {"initial_state", s.initial_state},
            {"activation", to_string(s.activation)}};
  }
  if (!p.sequence())
    return conv_shape_json(p.shapes[0], p.stage_names[0]);
  nlohmann::json stages = nlohmann::json::array();
  for (size_t i = 0; i < p.shapes.size(); ++i)
    stages.push_back(conv_shape_json(p.shapes[i], p.stage_names[i]));
  return {{"batch", p.shapes[0].batch}, {"stages", stages}};
}

} // namespace convbench::bench
