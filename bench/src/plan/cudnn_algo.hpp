// --cudnn-algo: the cuDNN algorithm a cuDNN case runs instead of the one cuDNN's Find picks, so
// two runs time the same kernel. Plain C++ (no cuDNN headers): parsed and checked at plan time on
// any machine; the cuDNN arm applies it when it prepares the case.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace convbench::bench {

// cuDNN's cudnnConvolutionFwdAlgo_t and cudnnConvolutionBwdDataAlgo_t counts (the cuDNN arm
// checks them against cudnn.h).
inline constexpr int kCudnnFwdAlgos = 8, kCudnnBwdDataAlgos = 6;

// One algorithm as the record spells it: "fwd_algo_N" (Conv1d) or "bwd_data_algo_N"
// (ConvTranspose1d), optionally followed by " (MATH)", MATH one of "default math",
// "tensor-op math", "tensor-op math, conversion", "fma math"; no math: the arm's own.
struct CudnnAlgo {
  bool forward = false;
  int index = 0;
  std::string math; // "" : the arm's own (cudnn-f32 fma, cudnn-tf32 tensor-op, cudnn-f64 default)
  std::string name() const;
};

// Throws UsageError naming what is wrong.
CudnnAlgo parse_cudnn_algo(const std::string &text);

// What --cudnn-algo SPEC asks: one algorithm for every cuDNN case whose op has it, or one per
// case id (CASE_ID=ALGO,... or @RECORD.json: the algorithms an earlier run's cuDNN cases chose).
struct CudnnAlgoSpec {
  std::optional<CudnnAlgo> every;
  std::map<std::string, CudnnAlgo> by_case;
  std::string record; // the record replayed; empty otherwise
};

// Throws UsageError (an unknown name, a record that is not readable or holds no cuDNN choice).
CudnnAlgoSpec parse_cudnn_algo_spec(const std::string &spec);
// The cuDNN cases of a parsed record, by id; `where` names it in errors.
std::map<std::string, CudnnAlgo> cudnn_algos_of_record(const nlohmann::json &record,
                                                       const std::string &where);

// A planned cuDNN case the spec may pin.
struct CudnnTarget {
  std::string id, arm; // arm: cudnn-f32, cudnn-tf32, cudnn-f64 (or a twin, cudnn-f32#2)
  bool forward = false;
};
// The pinned algorithm of each planned case, by id; throws UsageError for a pin that cannot
// apply (an id not planned, the other op's algorithm, tensor-op math on cudnn-f32, no case).
std::map<std::string, CudnnAlgo> pin_cudnn_cases(const CudnnAlgoSpec &spec,
                                                 const std::vector<CudnnTarget> &targets);

} // namespace convbench::bench
