#include "arm.hpp"

#include <algorithm>
#include <stdexcept>

namespace convbench::bench {

std::string to_string(GateKind g) {
  switch (g) {
  case GateKind::reference:
    return "reference";
  case GateKind::bitwise:
    return "bitwise";
  case GateKind::tolerance:
    return "tolerance";
  }
  return "?";
}

double Arm::device_bytes(const Problem &, const std::string &) const { return 0.0; }

std::vector<std::string> Arm::stagings() const {
  if (device())
    return {"per-call", "resident"};
  return {"host"};
}

namespace {
// Function-local so registration from other translation units' static initialisers is safe.
std::vector<std::unique_ptr<Arm>> &registry() {
  static std::vector<std::unique_ptr<Arm>> arms;
  return arms;
}
} // namespace

bool register_arm(std::unique_ptr<Arm> arm) {
  for (const auto &a : registry())
    if (a->name() == arm->name())
      throw std::logic_error("arm registered twice: " + arm->name());
  registry().push_back(std::move(arm));
  return true;
}

std::vector<const Arm *> registered_arms() {
  std::vector<const Arm *> out;
  for (const auto &a : registry())
    out.push_back(a.get());
  std::sort(out.begin(), out.end(), [](const Arm *a, const Arm *b) {
    bool ra = a->gate() == GateKind::reference, rb = b->gate() == GateKind::reference;
    if (ra != rb)
      return ra;
    if (a->device() != b->device())
      return !a->device();
    return a->name() < b->name();
  });
  return out;
}

const Arm *find_arm(const std::string &name) {
  for (const auto &a : registry())
    if (a->name() == name)
      return a.get();
  return nullptr;
}

const Arm &reference_arm() {
  for (const auto &a : registry())
    if (a->gate() == GateKind::reference)
      return *a;
  throw std::logic_error("no reference arm registered");
}

} // namespace convbench::bench
