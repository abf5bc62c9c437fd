// The correctness gate over the plan: every case's output against the cpu-f64 reference, before
// any timing; a case that fails is never timed (its prepared arm is released). With --dump, each
// problem's inputs, parameters, reference and every arm's output are written as .npy.
#pragma once

#include <functional>
#include <string>

#include "plan/arm.hpp"

namespace convbench::bench {

struct Plan;
struct Case;

// Prepares every case (the arm keeps what it prepared for the rounds); `gated` is called after
// each case's gate. True when every gate passed.
bool run_gate(Plan &plan, ArmContext &ctx, const std::string &run_id,
              const std::function<void(const Case &)> &gated = {});

} // namespace convbench::bench
