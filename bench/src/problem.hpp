// One problem of a run: a stage (one shape) or the chain (every upsample stage in order) at one
// frame count, with seeded random inputs, weights and biases.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "convbench/shape.hpp"

namespace convbench::bench {

struct Problem {
  std::string stage; // "up0".."upN" or "chain"
  int64_t frames = 0;
  std::vector<ConvShape> shapes;                   // one, or the chain's stages in order
  std::vector<std::string> stage_names;            // "up0".. per shape
  uint64_t seed = 0;                               // the seed the data were drawn from
  std::vector<float> input;                        // input of shapes[0]
  std::vector<std::vector<float>> weights, biases; // per shape

  int64_t output_elems() const { return shapes.back().output_elems(); }
  double flops() const;     // sum over shapes
  double min_bytes() const; // sum over shapes (the chain's intermediates cross memory too)
  // Host bytes of the inputs, weights and biases plus one output per stage.
  double host_bytes() const;
};

// The shapes only (no data): cheap, for planning and the memory check.
Problem plan_problem(const std::string &stage, int64_t frames, std::vector<ConvShape> shapes,
                     std::vector<std::string> stage_names);
// Fills input, weights and biases from a PRNG seeded by mix(run_seed, stage, frames): uniform
// values, weights and biases in +-1/sqrt(fan_in) as torch initialises them, never all zeros.
void fill_problem(Problem &p, uint64_t run_seed);

} // namespace convbench::bench
