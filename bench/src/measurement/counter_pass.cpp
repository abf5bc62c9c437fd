#include "measurement/counter_pass.hpp"

#include <algorithm>
#include <cstdio>

#include "core/device_gate.hpp"
#include "core/interrupt.hpp"
#include "core/nvtx_range.hpp"
#include "plan/plan.hpp"

namespace convbench::bench {

namespace {
nlohmann::json not_collected(const std::string &why) {
  return {{"status", "not-collected"}, {"reason", why}};
}
} // namespace

void run_counter_pass(Plan &plan) {
  std::unique_ptr<profiles::CounterSession> session;
  // Only when some resident device case passed its gate: opening CUPTI costs seconds.
  bool any_capture = std::any_of(plan.cases.begin(), plan.cases.end(), [](const Case &c) {
    return c.gate.pass && c.arm->device() && c.staging == "resident";
  });
  if (plan.profile && plan.gpu.present && plan.counters_off_reason.empty() && any_capture &&
      !interrupted()) {
    device_gate::enter("counter pass");
    session = profiles::CounterSession::open(
        *plan.profile, 0, plan.floors ? plan.floors->rates : profiles::DeviceRates{});
  }
  for (auto &c : plan.cases) {
    if (!c.gate.pass) {
      c.counters = not_collected("correctness gate failed");
    } else if (interrupted()) {
      c.counters = not_collected("the run was interrupted before its counter pass");
    } else if (!c.arm->device()) {
      c.counters = not_collected("host arm");
    } else if (!session) {
      c.counters =
          not_collected(plan.counters_off_reason.empty() ? "no session" : plan.counters_off_reason);
    } else if (c.staging != "resident") {
      c.counters = not_collected("counters are captured for resident staging only");
    } else if (c.samples.empty()) {
      c.counters = not_collected("no timed sample");
    } else {
      fprintf(stderr, "bench_conv: counters %s (profile %s)\n", c.id.c_str(),
              plan.profile->name.c_str());
      PreparedArm *pa = c.prepared.get();
      NvtxRange range(c.id + "/counters");
      const auto secs = c.seconds();
      const double best = *std::min_element(secs.begin(), secs.end());
      c.counters = session->capture(
          [pa] {
            pa->call();
            pa->sync();
          },
          best, c.problem->flops());
    }
  }
}

} // namespace convbench::bench
