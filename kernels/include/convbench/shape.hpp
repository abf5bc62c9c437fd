// The shape of one Conv1d / ConvTranspose1d problem, with torch's conventions.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

namespace convbench {

enum class ConvOp { forward, transposed };  // torch Conv1d, ConvTranspose1d

// Thrown by ConvShape::validate(); what() names the offending field.
class ShapeError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

// Weight layout is torch's: [cout, cin, k] for forward, [cin, cout, k] for transposed.
// Input [batch, cin, l_in], output [batch, cout, l_out()], bias [cout] when `bias`.
struct ConvShape {
  ConvOp op = ConvOp::transposed;
  int64_t batch = 1;
  int64_t cin = 0;
  int64_t cout = 0;
  int64_t k = 0;
  int64_t stride = 1;
  int64_t dilation = 1;
  int64_t padding = 0;
  int64_t output_padding = 0;  // transposed only; must be < stride or < dilation (torch's rule)
  int64_t l_in = 0;
  bool bias = true;

  int64_t l_out() const;  // exactly torch's formula
  int64_t input_elems() const;
  int64_t weight_elems() const;
  int64_t output_elems() const;
  // Nominal FLOPs: 2 x batch x cin x cout x k x l_in (transposed), 2 x batch x cout x cin x k x
  // l_out (forward). Counts every tap, also those that padding cuts off.
  double flops() const;
  // Multiply-adds actually performed: (output cell, tap) pairs whose input index is in range.
  int64_t valid_macs() const;
  // Fewest bytes a device kernel must move: input + weight + bias read once, output written once (f32).
  double min_bytes() const;
  void validate() const;  // throws ShapeError naming the field
};

std::string to_string(ConvOp op);

}  // namespace convbench
