// --dump DIR: each problem's shape and parameters (problem.json) and its input, weights, bias,
// reference and every arm's output (.npy, float32), so any of them can be checked outside.
#pragma once

#include <string>
#include <vector>

namespace convbench::bench {

struct Plan;
struct Problem;

// DIR/<stage>-<frames>; returns the directory written.
std::string dump_problem(const Plan &plan, const Problem &p, const std::vector<float> &reference,
                         const std::string &run_id);
void dump_output(const std::string &dir, const Problem &p, const std::string &arm,
                 const std::string &staging, const std::vector<float> &y);

} // namespace convbench::bench
