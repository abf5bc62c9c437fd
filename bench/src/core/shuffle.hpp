// The interleaving: the order of the cases in round r is a pure function of (seed, r), so a run's
// recorded order can be re-derived and two runs with the same seed interleave identically.
//
//   s_r   = splitmix64(seed + (r + 1) * 0x9E3779B97F4A7C15)   (the (r+1)-th splitmix64 output)
//   order = Fisher-Yates over [0, n): for i = n-1 .. 1, j = uniform(0..i) drawn from
//           std::mt19937_64(s_r) by rejection (unbiased), swap(i, j)
// Both mt19937_64 and this shuffle are fully specified, unlike std::shuffle and
// std::uniform_int_distribution, whose algorithms differ between standard libraries.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace convbench::bench {

uint64_t splitmix64(uint64_t x); // one splitmix64 step: the mix of x + golden gamma
uint64_t fnv1a64(const std::string &s);
uint64_t round_seed(uint64_t seed, int round);
std::vector<int> round_order(int n, uint64_t seed, int round);

} // namespace convbench::bench
