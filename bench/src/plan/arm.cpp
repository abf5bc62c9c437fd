#include "plan/arm.hpp"

#include <fnmatch.h>

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
  case GateKind::gemm:
    return "gemm";
  case GateKind::self:
    return "self";
  }
  return "?";
}

std::string to_string(ArmPrecision p) {
  switch (p) {
  case ArmPrecision::f64:
    return "f64";
  case ArmPrecision::f32:
    return "f32";
  case ArmPrecision::f32x3:
    return "f32x3";
  case ArmPrecision::tf32:
    return "tf32";
  case ArmPrecision::bf16:
    return "bf16";
  }
  return "?";
}

std::string to_string(ArmRole r) {
  switch (r) {
  case ArmRole::reference:
    return "reference";
  case ArmRole::candidate:
    return "candidate";
  case ArmRole::peer:
    return "peer";
  case ArmRole::ceiling:
    return "ceiling";
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
    if (!a->hidden())
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

std::vector<const Arm *> every_arm() {
  std::vector<const Arm *> out;
  for (const auto &a : registry())
    out.push_back(a.get());
  return out;
}

const Arm *find_arm(const std::string &name) {
  for (const auto &a : registry())
    if (a->name() == name)
      return a.get();
  return nullptr;
}

std::vector<std::string> expand_arm_patterns(const std::vector<std::string> &names) {
  std::vector<std::string> out;
  for (const auto &name : names) {
    if (name.find_first_of("*?[") == std::string::npos) {
      out.push_back(name);
      continue;
    }
    std::vector<std::string> matched, available;
    for (const auto &a : registry())
      if (fnmatch(name.c_str(), a->name().c_str(), 0) == 0) {
        matched.push_back(a->name());
        if (std::string why; a->available(&why))
          available.push_back(a->name());
      }
    // The arms this machine runs; when it runs none, all of them, so the run refuses naming why.
    if (!available.empty())
      matched = available;
    std::sort(matched.begin(), matched.end());
    if (matched.empty())
      matched.push_back(name);
    out.insert(out.end(), matched.begin(), matched.end());
  }
  return out;
}

const Arm &reference_arm() {
  for (const auto &a : registry())
    if (a->gate() == GateKind::reference)
      return *a;
  throw std::logic_error("no reference arm registered");
}

namespace {
class TwinArm final : public Arm {
public:
  TwinArm(const Arm &a, int n) : a_(a), name_(a.name() + "#" + std::to_string(n)) {}
  std::string name() const override { return name_; }
  bool device() const override { return a_.device(); }
  GateKind gate() const override { return a_.gate(); }
  double tolerance() const override { return a_.tolerance(); }
  std::string floor_kind() const override { return a_.floor_kind(); }
  bool available(std::string *why_not) const override { return a_.available(why_not); }
  ArmFacts facts() const override { return a_.facts(); }
  double device_bytes(const Problem &p, const std::string &staging) const override {
    return a_.device_bytes(p, staging);
  }
  std::unique_ptr<PreparedArm> prepare(const Problem &p, const std::string &staging,
                                       const ArmContext &ctx) const override {
    return a_.prepare(p, staging, ctx);
  }
  nlohmann::json describe(const Problem &p) const override { return a_.describe(p); }
  std::vector<std::string> stagings() const override { return a_.stagings(); }
  bool supports(const Problem &p, std::string *why_not) const override {
    return a_.supports(p, why_not);
  }
  bool hidden() const override { return a_.hidden(); }

private:
  const Arm &a_;
  std::string name_;
};
} // namespace

const Arm *twin_arm(const Arm &arm, int n) {
  static std::vector<std::unique_ptr<TwinArm>> twins;
  const std::string name = arm.name() + "#" + std::to_string(n);
  for (auto &t : twins)
    if (t->name() == name)
      return t.get();
  twins.push_back(std::make_unique<TwinArm>(arm, n));
  return twins.back().get();
}

} // namespace convbench::bench
