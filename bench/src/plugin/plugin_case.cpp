#include "plugin_case.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "boundary.hpp"
#include "device_staging.hpp"
#include "host_trial.hpp"
#include "plugin_arm.hpp"

namespace convbench::bench::plugin {

bool to_abi_shape(const ConvShape &s, convbench_shape *out, std::string *why_not) {
  switch (s.op) {
  case ConvOp::forward:
    out->op = CONVBENCH_OP_CONV1D;
    break;
  case ConvOp::transposed:
    out->op = CONVBENCH_OP_CONV_TRANSPOSE1D;
    break;
  default:
    *why_not = "the plugin ABI does not carry the op " + to_string(s.op);
    return false;
  }
  out->has_bias = s.bias ? 1 : 0;
  out->batch = s.batch;
  out->cin = s.cin;
  out->cout = s.cout;
  out->k = s.k;
  out->stride = s.stride;
  out->dilation = s.dilation;
  out->padding = s.padding;
  out->output_padding = s.output_padding;
  out->l_in = s.l_in;
  out->l_out = s.l_out();
  return true;
}

namespace {

int32_t abi_staging(const std::string &staging) {
  if (staging == "resident")
    return CONVBENCH_STAGING_RESIDENT;
  if (staging == "per-call")
    return CONVBENCH_STAGING_PER_CALL;
  return CONVBENCH_STAGING_HOST;
}

// One stage of the case: the problem the plugin sees and the handle it returned.
struct Stage {
  convbench_problem problem{};
  void *handle = nullptr;
  std::vector<float> host_out; // host and per-call chains: this stage's output, the next's input
#if CONVBENCH_HAVE_CUDA
  std::unique_ptr<DeviceBuffer> d_in, d_w, d_b, d_out;
#endif
};

class PluginCase final : public PreparedArm {
public:
  // trial: run in host_trial's child, which reports through the pipe, not on stderr.
  PluginCase(const PluginArm &arm, const Problem &p, const std::string &staging, int threads,
             bool trial = false)
      : arm_(arm), entry_(arm.entry()), p_(p), staging_(staging), trial_(trial) {
    const std::string where = "bench_conv: " + arm.label() + ": " + case_words(p, staging) + ": ";
    notice_prepare_ = where + "prepare";
    notice_call_ = where + "call";
    notice_output_ = where + "output";
    error_ = build(threads);
  }
  ~PluginCase() override {
    for (auto &s : stages_)
      if (s.handle)
        guarded(
            "release", notice_output_, [&] { return (entry_.release(s.handle), 0); },
            [] { return ""; });
  }
  const std::string &error() const { return error_; }

  void call() override {
    if (!error_.empty())
      return;
    std::string why = run_stages();
    if (why.empty())
      return;
    if (!gated_) { // the gate's call: refuse the case, the run goes on
      error_ = why;
      return;
    }
    throw PluginFault(arm_.label() + ": " + case_words(p_, staging_) + ": " + why, arm_.name(),
                      lost_);
  }
  void *stream_begin() const override { return stream_ptr(); }
  void *stream_end() const override { return stream_ptr(); }
  bool enqueue_only() const override { return staging_ == "resident" && error_.empty(); }
  void sync() override {
#if CONVBENCH_HAVE_CUDA
    if (stream_)
      device_check(sync_stream_status(stream_->get()), "the stream after call");
#endif
  }
  void output(float *y) override {
    const size_t n = size_t(p_.output_elems());
    gated_ = true;
    if (error_.empty()) {
      sync();
      Stage &last = stages_.back();
      error_ = guarded(
          "output", notice_output_, [&] { return entry_.output(last.handle, y); },
          [&] { return entry_.last_error(&entry_, last.handle); });
    }
    if (!error_.empty()) {
      if (!trial_)
        arm_.refuse(p_, staging_, error_);
      std::fill(y, y + n, std::numeric_limits<float>::quiet_NaN());
      return;
    }
    if (trial_)
      return;
    size_t bad = 0;
    for (size_t i = 0; i < n; ++i)
      bad += !std::isfinite(y[i]);
    if (bad)
      arm_.refuse(p_, staging_,
                  "the output holds " + std::to_string(bad) + " NaN or infinite cells of " +
                      std::to_string(n) + " (the gate fails it)");
  }
  nlohmann::json chosen() const override {
    if (!error_.empty() || !entry_.describe)
      return nullptr;
    std::string text;
    for (const auto &s : stages_) {
      char buf[512] = {0};
      const std::string why = guarded(
          "describe", notice_output_, [&] { return entry_.describe(s.handle, buf, sizeof buf); },
          [&] { return entry_.last_error(&entry_, s.handle); });
      buf[sizeof buf - 1] = 0;
      const std::string d = why.empty() ? one_line(buf, "") : "(describe failed: " + why + ")";
      if (!d.empty() && text.find(d) == std::string::npos)
        text += (text.empty() ? "" : " | ") + d;
    }
    return text.empty() ? nlohmann::json(nullptr) : nlohmann::json{{"name", text}};
  }

private:
  void *stream_ptr() const {
#if CONVBENCH_HAVE_CUDA
    return stream_ ? stream_->get() : nullptr;
#else
    return nullptr;
#endif
  }

  // A CUDA error after the plugin's work: a device fault loses the context for every arm, so it
  // always ends the run, naming this arm.
  void device_check(const std::string &cuda_error, const char *where) {
#if CONVBENCH_HAVE_CUDA
    if (cuda_error.empty())
      return;
    lost_ = context_lost(cuda_error);
    throw PluginFault(
        arm_.label() + ": " + case_words(p_, staging_) + ": CUDA error in " + where + ": " +
            cuda_error + (lost_ ? " (a device fault: the CUDA context is lost for every arm)" : ""),
        arm_.name(), lost_);
#else
    (void)cuda_error;
    (void)where;
#endif
  }

  std::string build(int threads) {
    const bool resident = staging_ == "resident";
#if CONVBENCH_HAVE_CUDA
    if (resident)
      stream_ = std::make_unique<DeviceStream>();
#else
    if (resident)
      return "resident staging needs a CUDA build";
#endif
    stages_.resize(p_.shapes.size());
    for (size_t i = 0; i < stages_.size(); ++i) {
      Stage &st = stages_[i];
      const ConvShape &s = p_.shapes[i];
      convbench_problem &q = st.problem;
      q.struct_size = sizeof(convbench_problem);
      q.staging = abi_staging(staging_);
      std::string why;
      if (!to_abi_shape(s, &q.shape, &why))
        return why;
      q.input = i == 0 ? p_.input.data() : stages_[i - 1].host_out.data();
      q.weight = p_.weights[i].data();
      q.bias = s.bias ? p_.biases[i].data() : nullptr;
      q.host_threads = threads;
      if (!resident && i + 1 < stages_.size())
        st.host_out.resize(size_t(s.output_elems()));
#if CONVBENCH_HAVE_CUDA
      if (resident) {
        if (i == 0) {
          st.d_in = std::make_unique<DeviceBuffer>(size_t(s.input_elems()));
          st.d_in->upload(p_.input.data(), size_t(s.input_elems()));
        }
        st.d_w = std::make_unique<DeviceBuffer>(size_t(s.weight_elems()));
        st.d_w->upload(q.weight, size_t(s.weight_elems()));
        if (s.bias) {
          st.d_b = std::make_unique<DeviceBuffer>(size_t(s.cout));
          st.d_b->upload(q.bias, size_t(s.cout));
        }
        st.d_out = std::make_unique<DeviceBuffer>(size_t(s.output_elems()));
        q.d_input = i == 0 ? st.d_in->get() : stages_[i - 1].d_out->get();
        q.d_weight = st.d_w->get();
        q.d_bias = st.d_b ? st.d_b->get() : nullptr;
        q.d_output = st.d_out->get();
      }
#endif
      void *h = nullptr;
      why = guarded(
          "prepare", notice_prepare_, [&] { return entry_.prepare(&entry_, &q, stream_ptr(), &h); },
          [&] { return entry_.last_error(&entry_, nullptr); });
      if (why.empty() && !h)
        why = "prepare returned CONVBENCH_OK but no handle";
      if (!why.empty())
        return why;
      st.handle = h;
    }
    return "";
  }

  // Every stage's call in order; host and per-call chains hand each stage's output on.
  std::string run_stages() {
    for (size_t i = 0; i < stages_.size(); ++i) {
      Stage &st = stages_[i];
      std::string why = guarded(
          "call", notice_call_, [&] { return entry_.call(st.handle); },
          [&] { return entry_.last_error(&entry_, st.handle); });
      if (why.empty() && !st.host_out.empty())
        why = guarded(
            "output", notice_output_, [&] { return entry_.output(st.handle, st.host_out.data()); },
            [&] { return entry_.last_error(&entry_, st.handle); });
      if (!why.empty())
        return why;
#if CONVBENCH_HAVE_CUDA
      if (arm_.device())
        device_check(pending_error(), "the plugin's call");
#endif
    }
    return "";
  }

  const PluginArm &arm_;
  const convbench_arm &entry_;
  const Problem &p_;
  std::string staging_;
  std::string notice_prepare_, notice_call_, notice_output_;
  std::vector<Stage> stages_;
#if CONVBENCH_HAVE_CUDA
  std::unique_ptr<DeviceStream> stream_;
#endif
  bool trial_;
  std::string error_;
  bool gated_ = false; // output() was read once: the gate has seen this case
  bool lost_ = false;
};

// A case that never reached the plugin in this process (its trial failed): NaN output.
class RefusedCase final : public PreparedArm {
public:
  RefusedCase(size_t n) : n_(n) {}
  void call() override {}
  void output(float *y) override { std::fill(y, y + n_, std::numeric_limits<float>::quiet_NaN()); }

private:
  size_t n_;
};

} // namespace

std::unique_ptr<PreparedArm> prepare_plugin_case(const PluginArm &arm, const Problem &p,
                                                 const std::string &staging, int host_threads) {
  install_crash_notice();
  if (!arm.device()) {
    const std::string why = run_trial([&]() -> std::string {
      PluginCase trial(arm, p, staging, host_threads, true);
      if (!trial.error().empty())
        return trial.error();
      trial.call();
      if (!trial.error().empty())
        return trial.error();
      std::vector<float> y(size_t(p.output_elems()));
      trial.output(y.data());
      return trial.error();
    });
    if (!why.empty()) {
      arm.refuse(p, staging, why);
      return std::make_unique<RefusedCase>(size_t(p.output_elems()));
    }
  }
  auto c = std::make_unique<PluginCase>(arm, p, staging, host_threads);
  if (!c->error().empty())
    arm.refuse(p, staging, c->error());
  return c;
}

} // namespace convbench::bench::plugin
