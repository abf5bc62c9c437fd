#include "core/shuffle.hpp"

#include <random>
#include <utility>

namespace convbench::bench {

uint64_t splitmix64(uint64_t x) {
  uint64_t z = x + 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

uint64_t fnv1a64(const std::string &s) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : s) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  return h;
}

uint64_t round_seed(uint64_t seed, int round) {
  return splitmix64(seed + uint64_t(round) * 0x9E3779B97F4A7C15ull);
}

std::vector<int> round_order(int n, uint64_t seed, int round) {
  std::vector<int> order(size_t(n > 0 ? n : 0));
  for (int i = 0; i < n; ++i)
    order[size_t(i)] = i;
  std::mt19937_64 rng(round_seed(seed, round));
  for (int i = n - 1; i > 0; --i) {
    // Unbiased j in [0, i]: reject draws from the incomplete top bucket.
    uint64_t range = uint64_t(i) + 1;
    uint64_t limit = UINT64_MAX - UINT64_MAX % range;
    uint64_t x;
    do
      x = rng();
    while (x >= limit);
    std::swap(order[size_t(i)], order[size_t(x % range)]);
  }
  return order;
}

} // namespace convbench::bench
