// A record's case shape (bench_conv's "shape" object: op, batch, cin, cout, k, stride, dilation,
// padding, output_padding, l_in; bias where the record has it, else true: the vocoder's stages
// have one) read back into a ConvShape, validated. Header-only: for the tools that read records
// with nlohmann/json (counter_check, wg_cost_fit); throws nlohmann's exceptions on a missing or
// mistyped field and ShapeError on an invalid shape.
#pragma once

#include <nlohmann/json.hpp>

#include "convbench/shape.hpp"

namespace convbench {

inline ConvShape shape_from_json(const nlohmann::json &j) {
  ConvShape s;
  s.op = j.at("op") == "forward" ? ConvOp::forward : ConvOp::transposed;
  s.batch = j.at("batch");
  s.cin = j.at("cin");
  s.cout = j.at("cout");
  s.k = j.at("k");
  s.stride = j.at("stride");
  s.dilation = j.value("dilation", 1);
  s.padding = j.at("padding");
  s.output_padding = j.value("output_padding", 0);
  s.l_in = j.at("l_in");
  s.bias = j.value("bias", true);
  s.validate();
  return s;
}

} // namespace convbench
