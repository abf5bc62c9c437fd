// The timed rounds: in each round every gated case takes one sample, in an order shuffled from
// (seed, round), so drift and neighbours spread evenly over the arms. The lease is verified
// before the first sample and after the last, and each sample is shown to its observation.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "convbench/lease/run_lease.hpp"

namespace convbench::bench {

struct Plan;
class SampleTaker;

struct RoundOrder {
  int round = 0;
  uint64_t seed = 0;
  std::vector<std::string> cases; // ids, in the order they were sampled
};

std::vector<RoundOrder> run_rounds(Plan &plan, SampleTaker &taker, lease::RunLease &lease);

} // namespace convbench::bench
