// The correctness gate over the plan: every case's output against the cpu-f64 reference, before
// any timing; a case that fails is never timed (its prepared arm is released). With --dump, each
// problem's inputs, parameters, reference and every arm's output are written as .npy.
#pragma once

#include <string>

#include "arm.hpp"

namespace convbench::bench {

struct Plan;

// Prepares every case (the arm keeps what it prepared for the rounds). True when every gate
// passed.
bool run_gate(Plan &plan, ArmContext &ctx, const std::string &run_id);

} // namespace convbench::bench
