// --dump: a problem's shape and parameters (problem.json) and its tensors (.npy, float32) under
// DIR/<stage>-<frames>/, so a check outside bench_conv (scripts/torch_dump_check.py) can recompute
// every case. Conv stages: input, weight and bias per stage (a sequence lists them in order in
// problem.json's "stage_files"; a stage without bias has no bias file, "bias": false in its
// shape and "bias": null in its stage_files entry), the reference output and each arm's. The causal
// op: x, weight [C, K], bias, initial state (with has_initial_state in problem.json), and y and the
// final state of the reference and of each arm.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "plan/problem.hpp"

namespace convbench::bench {

// One case whose output dump_output will add: "arm/staging" and its gate, so a check outside
// can hold the output to the same promise.
struct DumpedCase {
  std::string arm_staging;
  std::string gate; // reference, bitwise or tolerance
  double tolerance = 0;
};
// DIR/<stage>-<frames>/ of a problem.
std::string dump_dir(const std::string &root, const Problem &p);
// Before measuring: throws WriteError when the problem's dump directory exists and is not a
// directory, or holds a symlink, FIFO or device where a dump file may go (nothing is written
// through one).
void check_dump_target(const std::string &root, const Problem &p);
// Writes the problem's inputs and the reference and lists `outputs` in problem.json. Returns the
// problem's directory.
std::string dump_problem(const std::string &root, const Problem &p, const std::vector<float> &ref,
                         const std::vector<DumpedCase> &outputs, const nlohmann::json &run);
// One case's output (as the gate saw it: the causal op's y then its final state).
void dump_output(const std::string &dir, const Problem &p, const std::string &arm_staging,
                 const std::vector<float> &y);

} // namespace convbench::bench
