// What every host arm shares: run the stage (or the chain, stage by stage through host buffers)
// with one of the kernels' host functions. A host arm's file only names itself and its function.
#pragma once

#include <cstring>
#include <vector>

#include "arms/causal_arm.hpp"
#include "convbench/cpu_conv.hpp"
#include "plan/arm.hpp"

namespace convbench::bench {

using HostConvFn = void (*)(const ConvShape &, const float *, const float *, const float *, float *,
                            ThreadPool &);

class HostPrepared final : public PreparedArm {
public:
  HostPrepared(const Problem &p, HostConvFn fn, ThreadPool &pool) : p_(p), fn_(fn), pool_(pool) {
    for (const auto &s : p.shapes)
      stage_out_.emplace_back(size_t(s.output_elems()));
  }
  void call() override {
    const float *x = p_.input.data();
    for (size_t i = 0; i < p_.shapes.size(); ++i) {
      fn_(p_.shapes[i], x, p_.weights[i].data(), p_.shapes[i].bias ? p_.biases[i].data() : nullptr,
          stage_out_[i].data(), pool_);
      x = stage_out_[i].data();
    }
  }
  void output(float *y) override {
    std::memcpy(y, stage_out_.back().data(), stage_out_.back().size() * sizeof(float));
  }

private:
  const Problem &p_;
  HostConvFn fn_;
  ThreadPool &pool_;
  std::vector<std::vector<float>> stage_out_;
};

class HostArm : public Arm {
public:
  bool device() const override { return false; }
  std::string floor_kind() const override { return ""; }
  bool available(std::string *) const override { return true; }
  // The causal depthwise op runs on the host arms that name a function for it.
  bool supports(const Problem &p, std::string *why_not) const override {
    if (p.causal && !causal_function()) {
      *why_not = "has no causal depthwise conv1d";
      return false;
    }
    return true;
  }
  std::unique_ptr<PreparedArm> prepare(const Problem &p, const std::string &,
                                       const ArmContext &ctx) const override {
    if (p.causal)
      return std::make_unique<CausalHostPrepared>(p, causal_function(), *ctx.pool);
    return std::make_unique<HostPrepared>(p, function(), *ctx.pool);
  }
  virtual HostConvFn function() const = 0;
  virtual CausalHostFn causal_function() const { return nullptr; }
};

} // namespace convbench::bench
