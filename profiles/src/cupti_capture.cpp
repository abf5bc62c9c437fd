// The counter capture: CUDA 13 Range Profiler + Profiler Host API, user range + user replay
// (each pass re-runs the range, so the work must be idempotent). Compiled only when the build has
// CUDA; links libcupti and libcudart, never libcuda (the driver is reached through
// cudaGetDriverEntryPointByVersion, so the binaries still load on a machine without a driver and
// answer "unavailable").
//
// Every CUPTI and CUDA call is checked. A refusal (no device, insufficient privileges, a
// virtualised or MIG device, another profiler attached as under ncu or nsys, an unsupported
// device) becomes {"status":"unavailable","call":...,"message":...}; nothing here throws past
// open() or capture() except an exception thrown by the caller's own work, which is rethrown
// after the profiler is stopped and disabled.
#include <cuda.h> // CUcontext and CUresult types only
#include <cuda_runtime_api.h>
#include <cupti_profiler_host.h>
#include <cupti_profiler_target.h>
#include <cupti_range_profiler.h>
#include <cupti_result.h>
#include <cupti_target.h>

#include <cstdint>
#include <utility>
#include <vector>

#include "sessions.hpp"

namespace convbench::profiles {
namespace {

using nlohmann::json;

// A zero-filled CUPTI parameter struct with its size set (CUPTI versions structs by structSize).
template <class T> T zeroed(size_t struct_size) {
  T p{};
  p.structSize = struct_size;
  return p;
}

// Internal only: carries the failing call out to open()/capture(), which turn it into a block.
struct Refusal {
  std::string call;
  std::string message;
  std::string rejected_metric;
};

std::string cupti_message(CUptiResult r) {
  const char *name = nullptr;
  const char *text = nullptr;
  if (cuptiGetResultString(r, &name) != CUPTI_SUCCESS)
    name = nullptr;
  if (cuptiGetErrorMessage(r, &text) != CUPTI_SUCCESS)
    text = nullptr;
  std::string m = name ? name : "CUPTI error";
  m += " (" + std::to_string(static_cast<int>(r)) + ")";
  if (text && (!name || std::string(text) != name))
    m += std::string(": ") + text;
  return m;
}

void cupti_check(CUptiResult r, const char *call) {
  if (r != CUPTI_SUCCESS)
    throw Refusal{call, cupti_message(r), ""};
}

void cuda_check(cudaError_t e, const char *call) {
  if (e != cudaSuccess) {
    cudaGetLastError(); // clear a non-sticky error so the caller's next CUDA call starts clean
    throw Refusal{call, std::string(cudaGetErrorName(e)) + ": " + cudaGetErrorString(e), ""};
  }
}

const char *support_name(CUpti_Profiler_Support_Level l) {
  switch (l) {
  case CUPTI_PROFILER_CONFIGURATION_SUPPORTED:
    return "supported";
  case CUPTI_PROFILER_CONFIGURATION_DISABLED:
    return "disabled";
  case CUPTI_PROFILER_CONFIGURATION_UNSUPPORTED:
    return "unsupported";
  default:
    return "unknown";
  }
}

// The runtime's primary context of the current device, without linking libcuda.
CUcontext current_context() {
  using GetCurrent = CUresult (*)(CUcontext *);
  void *fn = nullptr;
  cudaDriverEntryPointQueryResult q{};
  cuda_check(cudaGetDriverEntryPointByVersion("cuCtxGetCurrent", &fn, 12000, cudaEnableDefault, &q),
             "cudaGetDriverEntryPointByVersion(cuCtxGetCurrent)");
  if (q != cudaDriverEntryPointSuccess || !fn)
    throw Refusal{"cudaGetDriverEntryPointByVersion(cuCtxGetCurrent)", "symbol not found", ""};
  CUcontext ctx = nullptr;
  if (reinterpret_cast<GetCurrent>(fn)(&ctx) != CUDA_SUCCESS || !ctx)
    throw Refusal{"cuCtxGetCurrent", "no current CUDA context after cudaFree(0)", ""};
  return ctx;
}

// cuptiProfilerInitialize / cuptiProfilerDeInitialize.
struct ProfilerInit {
  bool active = false;
  ProfilerInit() {
    auto p = zeroed<CUpti_Profiler_Initialize_Params>(CUpti_Profiler_Initialize_Params_STRUCT_SIZE);
    cupti_check(cuptiProfilerInitialize(&p), "cuptiProfilerInitialize");
    active = true;
  }
  ~ProfilerInit() {
    if (!active)
      return;
    auto p =
        zeroed<CUpti_Profiler_DeInitialize_Params>(CUpti_Profiler_DeInitialize_Params_STRUCT_SIZE);
    cuptiProfilerDeInitialize(&p);
  }
  ProfilerInit(const ProfilerInit &) = delete;
  ProfilerInit &operator=(const ProfilerInit &) = delete;
};

// cuptiProfilerHostInitialize / cuptiProfilerHostDeinitialize.
struct HostObject {
  CUpti_Profiler_Host_Object *ptr = nullptr;
  HostObject(const std::string &chip, const std::vector<uint8_t> &availability) {
    auto p = zeroed<CUpti_Profiler_Host_Initialize_Params>(
        CUpti_Profiler_Host_Initialize_Params_STRUCT_SIZE);
    p.profilerType = CUPTI_PROFILER_TYPE_RANGE_PROFILER;
    p.pChipName = chip.c_str();
    p.pCounterAvailabilityImage = availability.data();
    cupti_check(cuptiProfilerHostInitialize(&p), "cuptiProfilerHostInitialize");
    ptr = p.pHostObject;
  }
  ~HostObject() {
    if (!ptr)
      return;
    auto p = zeroed<CUpti_Profiler_Host_Deinitialize_Params>(
        CUpti_Profiler_Host_Deinitialize_Params_STRUCT_SIZE);
    p.pHostObject = ptr;
    cuptiProfilerHostDeinitialize(&p);
  }
  HostObject(const HostObject &) = delete;
  HostObject &operator=(const HostObject &) = delete;

  CUptiResult add_metrics(std::vector<const char *> &names) {
    auto p = zeroed<CUpti_Profiler_Host_ConfigAddMetrics_Params>(
        CUpti_Profiler_Host_ConfigAddMetrics_Params_STRUCT_SIZE);
    p.pHostObject = ptr;
    p.ppMetricNames = names.data();
    p.numMetrics = names.size();
    return cuptiProfilerHostConfigAddMetrics(&p);
  }
};

// The range profiler of one context, enabled for the object's lifetime. The range state (started,
// pushed) is tracked so that every exit path pops, stops and disables.
struct RangeProfiler {
  CUpti_RangeProfiler_Object *obj = nullptr;
  bool started = false;
  bool pushed = false;
  explicit RangeProfiler(CUcontext ctx) {
    auto p =
        zeroed<CUpti_RangeProfiler_Enable_Params>(CUpti_RangeProfiler_Enable_Params_STRUCT_SIZE);
    p.ctx = ctx;
    cupti_check(cuptiRangeProfilerEnable(&p), "cuptiRangeProfilerEnable");
    obj = p.pRangeProfilerObject;
  }
  ~RangeProfiler() {
    if (pushed) {
      auto p = zeroed<CUpti_RangeProfiler_PopRange_Params>(
          CUpti_RangeProfiler_PopRange_Params_STRUCT_SIZE);
      p.pRangeProfilerObject = obj;
      cuptiRangeProfilerPopRange(&p);
    }
    if (started) {
      auto p = zeroed<CUpti_RangeProfiler_Stop_Params>(CUpti_RangeProfiler_Stop_Params_STRUCT_SIZE);
      p.pRangeProfilerObject = obj;
      cuptiRangeProfilerStop(&p);
    }
    if (obj) {
      auto p = zeroed<CUpti_RangeProfiler_Disable_Params>(
          CUpti_RangeProfiler_Disable_Params_STRUCT_SIZE);
      p.pRangeProfilerObject = obj;
      cuptiRangeProfilerDisable(&p);
    }
  }
  RangeProfiler(const RangeProfiler &) = delete;
  RangeProfiler &operator=(const RangeProfiler &) = delete;
};

void check_device_supported(int device) {
  auto p = zeroed<CUpti_Profiler_DeviceSupported_Params>(
      CUpti_Profiler_DeviceSupported_Params_STRUCT_SIZE);
  p.cuDevice = device;
  p.api = CUPTI_PROFILER_RANGE_PROFILING;
  cupti_check(cuptiProfilerDeviceSupported(&p), "cuptiProfilerDeviceSupported");
  if (p.isSupported == CUPTI_PROFILER_CONFIGURATION_SUPPORTED)
    return;
  std::string why;
  auto add = [&](const char *what, CUpti_Profiler_Support_Level l) {
    if (l != CUPTI_PROFILER_CONFIGURATION_SUPPORTED)
      why += std::string(why.empty() ? "" : ", ") + what + " " + support_name(l);
  };
  add("architecture", p.architecture);
  add("sli", p.sli);
  add("vGPU", p.vGpu);
  add("confidential compute", p.confidentialCompute);
  add("cmp", p.cmp);
  add("wsl", p.wsl);
  throw Refusal{"cuptiProfilerDeviceSupported",
                "range profiling not supported on device " + std::to_string(device) + ": " +
                    (why.empty() ? support_name(p.isSupported) : why),
                ""};
}

std::string chip_name(int device) {
  auto p = zeroed<CUpti_Device_GetChipName_Params>(CUpti_Device_GetChipName_Params_STRUCT_SIZE);
  p.deviceIndex = static_cast<size_t>(device);
  cupti_check(cuptiDeviceGetChipName(&p), "cuptiDeviceGetChipName");
  return p.pChipName ? p.pChipName : "";
}

std::vector<uint8_t> counter_availability(CUcontext ctx) {
  auto p = zeroed<CUpti_Profiler_GetCounterAvailability_Params>(
      CUpti_Profiler_GetCounterAvailability_Params_STRUCT_SIZE);
  p.ctx = ctx;
  cupti_check(cuptiProfilerGetCounterAvailability(&p), "cuptiProfilerGetCounterAvailability");
  std::vector<uint8_t> image(p.counterAvailabilityImageSize);
  p.pCounterAvailabilityImage = image.data();
  cupti_check(cuptiProfilerGetCounterAvailability(&p), "cuptiProfilerGetCounterAvailability");
  return image;
}

// The config image of the metrics added to `host`, and the passes it takes.
struct ConfigImage {
  std::vector<uint8_t> image;
  size_t passes = 0;
};
ConfigImage config_image(const HostObject &host) {
  ConfigImage c;
  auto s = zeroed<CUpti_Profiler_Host_GetConfigImageSize_Params>(
      CUpti_Profiler_Host_GetConfigImageSize_Params_STRUCT_SIZE);
  s.pHostObject = host.ptr;
  cupti_check(cuptiProfilerHostGetConfigImageSize(&s), "cuptiProfilerHostGetConfigImageSize");
  c.image.resize(s.configImageSize);
  auto g = zeroed<CUpti_Profiler_Host_GetConfigImage_Params>(
      CUpti_Profiler_Host_GetConfigImage_Params_STRUCT_SIZE);
  g.pHostObject = host.ptr;
  g.configImageSize = c.image.size();
  g.pConfigImage = c.image.data();
  cupti_check(cuptiProfilerHostGetConfigImage(&g), "cuptiProfilerHostGetConfigImage");
  auto n = zeroed<CUpti_Profiler_Host_GetNumOfPasses_Params>(
      CUpti_Profiler_Host_GetNumOfPasses_Params_STRUCT_SIZE);
  n.configImageSize = c.image.size();
  n.pConfigImage = c.image.data();
  cupti_check(cuptiProfilerHostGetNumOfPasses(&n), "cuptiProfilerHostGetNumOfPasses");
  c.passes = n.numOfPasses;
  return c;
}

// The current device `device` with its primary context made current.
CUcontext device_context(int device) {
  int n = 0;
  cuda_check(cudaGetDeviceCount(&n), "cudaGetDeviceCount");
  if (device < 0 || device >= n)
    throw Refusal{"cudaGetDeviceCount",
                  "device " + std::to_string(device) + " does not exist (" + std::to_string(n) +
                      " visible)",
                  ""};
  cuda_check(cudaSetDevice(device), "cudaSetDevice");
  cuda_check(cudaFree(nullptr), "cudaFree(0) (creating the primary context)");
  return current_context();
}

class CuptiSession final : public CounterSession {
public:
  CuptiSession(const Profile &p, int device, DeviceRates rates)
      : profile_(p), device_(device), rates_(std::move(rates)) {
    ctx_ = device_context(device);
    init_ = std::make_unique<ProfilerInit>();
    check_device_supported(device_);
    chip_ = chip_name(device_);
    availability_ = counter_availability(ctx_);
    accept_metrics();
    config_ = config_image(*host_);
    // Probe the range profiler once now: another profiler attached (ncu, nsys) refuses here, so
    // the refusal is known before anything is timed rather than at the first capture.
    RangeProfiler probe(ctx_);
  }

  CuptiSession(const CuptiSession &) = delete; // names_ points into profile_
  CuptiSession &operator=(const CuptiSession &) = delete;

  json describe() const override {
    json d = {{"status", "ready"},
              {"profile", profile_.name},
              {"chip", chip_},
              {"passes", config_.passes}};
    if (!rejected_.empty())
      d["rejected_metrics"] = rejected_;
    return d;
  }

  json capture(const std::function<void()> &work, double best_seconds, double flops_hint) override {
    try {
      return capture_or_throw(work, best_seconds, flops_hint);
    } catch (const Refusal &r) {
      return detail::unavailable_block(profile_.name, r.call, r.message);
    }
  }

private:
  // All of the profile's metrics at once; where the profiler refuses the list, each metric alone,
  // to name the ones it refuses (the on-device layer of metric validation: the offline list
  // cannot know what this chip implements). The refused ones are left out and recorded.
  void accept_metrics() {
    std::vector<const char *> all;
    for (const auto &m : profile_.metrics)
      all.push_back(m.c_str());
    host_ = std::make_unique<HostObject>(chip_, availability_);
    const CUptiResult whole = host_->add_metrics(all);
    if (whole == CUPTI_SUCCESS) {
      names_ = all;
      return;
    }
    host_.reset();
    for (const auto &m : profile_.metrics) {
      HostObject one(chip_, availability_);
      std::vector<const char *> single = {m.c_str()};
      if (CUptiResult r = one.add_metrics(single); r != CUPTI_SUCCESS)
        rejected_[m] = cupti_message(r);
      else
        names_.push_back(m.c_str());
    }
    const std::string who = "profile '" + profile_.name + "': CUPTI on " + chip_;
    if (names_.empty())
      throw Refusal{"cuptiProfilerHostConfigAddMetrics",
                    who + " refuses every metric (" + rejected_.begin().key() + ": " +
                        rejected_.begin().value().get<std::string>() + ")",
                    rejected_.begin().key()};
    host_ = std::make_unique<HostObject>(chip_, availability_);
    if (CUptiResult r = host_->add_metrics(names_); r != CUPTI_SUCCESS)
      throw Refusal{"cuptiProfilerHostConfigAddMetrics",
                    who + " refuses the metric list as a whole" +
                        (rejected_.empty() ? std::string(" (each metric alone is accepted)")
                                           : " (without the " + std::to_string(rejected_.size()) +
                                                 " it refuses alone)") +
                        ": " + cupti_message(r),
                    ""};
  }

  json capture_or_throw(const std::function<void()> &work, double best_seconds, double flops_hint) {
    cuda_check(cudaSetDevice(device_), "cudaSetDevice");
    // Nothing queued before the range may land inside it.
    cuda_check(cudaDeviceSynchronize(), "cudaDeviceSynchronize (before the range)");
    RangeProfiler rp(ctx_);
    std::vector<uint8_t> data = counter_data(rp);
    set_config(rp, data);
    const size_t passes = replay(rp, work);
    const std::string got_range = decode(rp, data);
    const std::vector<double> values = evaluate(data);

    json metrics = json::object();
    for (const auto &m : profile_.metrics)
      metrics[m] = nullptr; // a refused metric stays null
    for (size_t i = 0; i < names_.size(); ++i)
      metrics[names_[i]] = values[i];
    const json derived = derive(profile_, metrics, best_seconds, flops_hint, rates_, rejected_);
    json block = {
        {"status", "collected"}, {"profile", profile_.name}, {"chip", chip_},
        {"range", got_range},    {"passes", passes},         {"passes_planned", config_.passes},
        {"metrics", metrics},    {"derived", derived},       {"units", derived_units(profile_)}};
    if (!profile_.paths.empty())
      block["paths"] = evaluate_paths(profile_, derived, best_seconds);
    if (!rejected_.empty())
      block["rejected_metrics"] = rejected_;
    return block;
  }

  // The counter data image of one range of the accepted metrics, initialised.
  std::vector<uint8_t> counter_data(const RangeProfiler &rp) {
    auto sz = zeroed<CUpti_RangeProfiler_GetCounterDataSize_Params>(
        CUpti_RangeProfiler_GetCounterDataSize_Params_STRUCT_SIZE);
    sz.pRangeProfilerObject = rp.obj;
    sz.pMetricNames = names_.data();
    sz.numMetrics = names_.size();
    sz.maxNumOfRanges = 1;
    sz.maxNumRangeTreeNodes = 1;
    cupti_check(cuptiRangeProfilerGetCounterDataSize(&sz), "cuptiRangeProfilerGetCounterDataSize");
    std::vector<uint8_t> data(sz.counterDataSize, 0);
    auto ini = zeroed<CUpti_RangeProfiler_CounterDataImage_Initialize_Params>(
        CUpti_RangeProfiler_CounterDataImage_Initialize_Params_STRUCT_SIZE);
    ini.pRangeProfilerObject = rp.obj;
    ini.counterDataSize = data.size();
    ini.pCounterData = data.data();
    cupti_check(cuptiRangeProfilerCounterDataImageInitialize(&ini),
                "cuptiRangeProfilerCounterDataImageInitialize");
    return data;
  }

  // One user range, user replay, one pass after another, counted into `data`.
  void set_config(const RangeProfiler &rp, std::vector<uint8_t> &data) {
    auto cfg = zeroed<CUpti_RangeProfiler_SetConfig_Params>(
        CUpti_RangeProfiler_SetConfig_Params_STRUCT_SIZE);
    cfg.pRangeProfilerObject = rp.obj;
    cfg.configSize = config_.image.size();
    cfg.pConfig = config_.image.data();
    cfg.counterDataImageSize = data.size();
    cfg.pCounterDataImage = data.data();
    cfg.range = CUPTI_UserRange;
    cfg.replayMode = CUPTI_UserReplay;
    cfg.maxRangesPerPass = 1;
    cfg.numNestingLevels = 1;
    cfg.minNestingLevel = 1;
    cfg.passIndex = 0;
    cfg.targetNestingLevel = 1;
    cupti_check(cuptiRangeProfilerSetConfig(&cfg), "cuptiRangeProfilerSetConfig");
  }

  // User replay: the work runs once per pass (it must be idempotent). The passes it took.
  size_t replay(RangeProfiler &rp, const std::function<void()> &work) {
    const size_t max_passes = config_.passes + 8; // a guard against a loop that never ends
    size_t passes = 0;
    bool all_submitted = false;
    const std::string range_name = "convbench-counters";
    while (!all_submitted) {
      if (passes == max_passes)
        throw Refusal{"cuptiRangeProfilerStop",
                      "not all passes submitted after " + std::to_string(passes) + " passes (" +
                          std::to_string(config_.passes) + " planned)",
                      ""};
      auto st =
          zeroed<CUpti_RangeProfiler_Start_Params>(CUpti_RangeProfiler_Start_Params_STRUCT_SIZE);
      st.pRangeProfilerObject = rp.obj;
      cupti_check(cuptiRangeProfilerStart(&st), "cuptiRangeProfilerStart");
      rp.started = true;
      auto push = zeroed<CUpti_RangeProfiler_PushRange_Params>(
          CUpti_RangeProfiler_PushRange_Params_STRUCT_SIZE);
      push.pRangeProfilerObject = rp.obj;
      push.pRangeName = range_name.c_str();
      cupti_check(cuptiRangeProfilerPushRange(&push), "cuptiRangeProfilerPushRange");
      rp.pushed = true;

      work(); // an exception from the work itself propagates, after rp cleans up
      cuda_check(cudaDeviceSynchronize(), "cudaDeviceSynchronize (inside the range)");

      auto pop = zeroed<CUpti_RangeProfiler_PopRange_Params>(
          CUpti_RangeProfiler_PopRange_Params_STRUCT_SIZE);
      pop.pRangeProfilerObject = rp.obj;
      rp.pushed = false;
      cupti_check(cuptiRangeProfilerPopRange(&pop), "cuptiRangeProfilerPopRange");
      auto stop =
          zeroed<CUpti_RangeProfiler_Stop_Params>(CUpti_RangeProfiler_Stop_Params_STRUCT_SIZE);
      stop.pRangeProfilerObject = rp.obj;
      rp.started = false;
      cupti_check(cuptiRangeProfilerStop(&stop), "cuptiRangeProfilerStop");
      ++passes;
      all_submitted = stop.isAllPassSubmitted != 0;
    }
    return passes;
  }

  // The passes decoded into `data`; its one range's name.
  std::string decode(const RangeProfiler &rp, std::vector<uint8_t> &data) {
    auto dec = zeroed<CUpti_RangeProfiler_DecodeData_Params>(
        CUpti_RangeProfiler_DecodeData_Params_STRUCT_SIZE);
    dec.pRangeProfilerObject = rp.obj;
    cupti_check(cuptiRangeProfilerDecodeData(&dec), "cuptiRangeProfilerDecodeData");
    if (dec.numOfRangeDropped != 0)
      throw Refusal{"cuptiRangeProfilerDecodeData",
                    std::to_string(dec.numOfRangeDropped) + " range(s) dropped", ""};

    auto info = zeroed<CUpti_RangeProfiler_GetCounterDataInfo_Params>(
        CUpti_RangeProfiler_GetCounterDataInfo_Params_STRUCT_SIZE);
    info.pCounterDataImage = data.data();
    info.counterDataImageSize = data.size();
    cupti_check(cuptiRangeProfilerGetCounterDataInfo(&info),
                "cuptiRangeProfilerGetCounterDataInfo");
    if (info.numTotalRanges != 1)
      throw Refusal{"cuptiRangeProfilerGetCounterDataInfo",
                    "expected 1 range, found " + std::to_string(info.numTotalRanges), ""};

    auto ri = zeroed<CUpti_RangeProfiler_CounterData_GetRangeInfo_Params>(
        CUpti_RangeProfiler_CounterData_GetRangeInfo_Params_STRUCT_SIZE);
    ri.pCounterDataImage = data.data();
    ri.counterDataImageSize = data.size();
    ri.rangeIndex = 0;
    ri.rangeDelimiter = "/";
    cupti_check(cuptiRangeProfilerCounterDataGetRangeInfo(&ri),
                "cuptiRangeProfilerCounterDataGetRangeInfo");
    return ri.rangeName ? ri.rangeName : "";
  }

  // The accepted metrics' values in the range of `data`.
  std::vector<double> evaluate(std::vector<uint8_t> &data) {
    std::vector<double> values(names_.size(), 0.0);
    auto ev = zeroed<CUpti_Profiler_Host_EvaluateToGpuValues_Params>(
        CUpti_Profiler_Host_EvaluateToGpuValues_Params_STRUCT_SIZE);
    ev.pHostObject = host_->ptr;
    ev.pCounterDataImage = data.data();
    ev.counterDataImageSize = data.size();
    ev.rangeIndex = 0;
    ev.ppMetricNames = names_.data();
    ev.numMetrics = names_.size();
    ev.pMetricValues = values.data();
    cupti_check(cuptiProfilerHostEvaluateToGpuValues(&ev), "cuptiProfilerHostEvaluateToGpuValues");
    return values;
  }

  Profile profile_;
  int device_;
  DeviceRates rates_;
  std::vector<const char *> names_; // the accepted metrics; point into profile_.metrics
  json rejected_ = json::object();  // {metric: CUPTI's error} for the refused ones
  CUcontext ctx_ = nullptr;
  std::string chip_;
  std::vector<uint8_t> availability_;
  ConfigImage config_;
  // Declared last: destroyed first, host object before the profiler's deinitialisation.
  std::unique_ptr<ProfilerInit> init_;
  std::unique_ptr<HostObject> host_;
};

} // namespace

std::unique_ptr<CounterSession> CounterSession::open(const Profile &p, int device,
                                                     const DeviceRates &rates) {
  try {
    return std::make_unique<CuptiSession>(p, device, rates);
  } catch (const Refusal &r) {
    return detail::unavailable_session(p, r.call, r.message, r.rejected_metric);
  }
}

json probe_metrics(const std::vector<std::string> &metrics, int device) {
  try {
    const CUcontext ctx = device_context(device);
    ProfilerInit init;
    check_device_supported(device);
    const std::string chip = chip_name(device);
    const std::vector<uint8_t> availability = counter_availability(ctx);
    json out = {{"status", "probed"}, {"chip", chip}, {"metrics", json::array()}};
    std::vector<const char *> accepted;
    for (const auto &m : metrics) {
      HostObject one(chip, availability);
      std::vector<const char *> single = {m.c_str()};
      json e = {{"name", m}};
      if (CUptiResult r = one.add_metrics(single); r != CUPTI_SUCCESS) {
        e["accepted"] = false;
        e["message"] = cupti_message(r);
      } else {
        e["accepted"] = true;
        e["passes"] = config_image(one).passes;
        accepted.push_back(m.c_str());
      }
      out["metrics"].push_back(e);
    }
    out["accepted_passes"] = nullptr;
    if (!accepted.empty()) {
      HostObject all(chip, availability);
      if (CUptiResult r = all.add_metrics(accepted); r != CUPTI_SUCCESS)
        out["accepted_message"] = "the accepted metrics together: " + cupti_message(r);
      else
        out["accepted_passes"] = config_image(all).passes;
    }
    return out;
  } catch (const Refusal &r) {
    return {{"status", "unavailable"}, {"call", r.call}, {"message", r.message}};
  }
}

} // namespace convbench::profiles
