// One problem of a run: a stage (one shape), a sequence of stages run as one case (`chain`: the
// upsample stages; `generator`: every convolution of the generator in order), or one causal
// depthwise conv1d case, with seeded random inputs, weights and biases.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "convbench/shape.hpp"

namespace convbench {
struct Model;
}

namespace convbench::bench {

struct Problem {
  std::string stage;  // "pre", "up0", "amp0.k3.d1", "post", "chain", "generator", "causal.*"
  int64_t frames = 0; // mel frames; for the causal op its length (the --frames list is not used)
  std::vector<ConvShape> shapes;                   // one, or the sequence's stages in order
  std::vector<std::string> stage_names;            // the stage name of each shape
  std::optional<CausalConvShape> causal;           // the causal op (then `shapes` is empty)
  uint64_t seed = 0;                               // the seed the data were drawn from
  std::vector<float> input;                        // input of shapes[0] (causal: x)
  std::vector<std::vector<float>> weights, biases; // per shape (causal: one [C, K] and one [C])
  std::vector<float> initial_state;                // causal with state: [B, C, K - 1]
  std::vector<uint8_t> has_initial_state;          // causal with state: per sequence

  bool sequence() const { return stage == "chain" || stage == "generator"; }
  // What an arm's output() writes and the gate compares: the last stage's output; for the
  // causal op y [B, C, L] followed by the final state [B, C, K - 1].
  int64_t output_elems() const;
  double flops() const;     // sum over shapes
  double min_bytes() const; // sum over shapes (a sequence's intermediates cross memory too)
  // Host bytes of the inputs, weights and biases plus one output per stage.
  double host_bytes() const;
};

// The shapes only (no data): cheap, for planning and the memory check.
Problem plan_problem(const std::string &stage, int64_t frames, std::vector<ConvShape> shapes,
                     std::vector<std::string> stage_names);
// The problem of one planned stage name (as expand_stages gives it) of model m at `frames`;
// every shape validated. Throws DataError naming the stage, the frames and the shape's fault.
Problem plan_stage(const std::string &stage, int64_t frames, const Model &m);
// Fills input, weights and biases from a PRNG seeded by mix(run_seed, stage, frames): uniform
// values, weights and biases in +-1/sqrt(fan_in) as torch initialises them, never all zeros.
// A causal problem's initial state is uniform too; every even sequence (0, 2, ..) has it.
void fill_problem(Problem &p, uint64_t run_seed);

// The record's "shape" of a case: one stage's shape, {batch, stages: [...]} for a sequence, the
// causal op's own fields (op "causal_depthwise").
nlohmann::json problem_shape_json(const Problem &p);

} // namespace convbench::bench
