// The shape of one Conv1d / ConvTranspose1d problem, with torch's conventions, and of one causal
// depthwise conv1d problem (a sibling type: its tensors are not a Conv1d's).
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

namespace convbench {

enum class ConvOp { forward, transposed }; // torch Conv1d, ConvTranspose1d

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
  int64_t output_padding = 0; // transposed only; must be < stride or < dilation (torch's rule)
  int64_t l_in = 0;
  bool bias = true;

  int64_t l_out() const; // exactly torch's formula
  int64_t input_elems() const;
  int64_t weight_elems() const;
  int64_t output_elems() const;
  // Nominal FLOPs: 2 x batch x cin x cout x k x l_in (transposed), 2 x batch x cout x cin x k x
  // l_out (forward). Counts every tap, also those that padding cuts off.
  double flops() const;
  // Multiply-adds actually performed: (output cell, tap) pairs whose input index is in range.
  int64_t valid_macs() const;
  // Fewest bytes a device kernel must move: input + weight + bias read once, output written once
  // (f32).
  double min_bytes() const;
  void validate() const; // throws ShapeError naming the field
};

std::string to_string(ConvOp op);

enum class Activation { none, silu }; // SiLU: v / (1 + exp(-v))
std::string to_string(Activation a);

// Causal depthwise conv1d (causal_conv1d_fwd): x [batch, channels, length], weight [channels, k],
// bias [channels], optional initial state [batch, channels, k - 1] used by the sequences whose
// has_initial_state flag is set, output y [batch, channels, length] and final state
// [batch, channels, k - 1]:
//   y[b,c,t] = act(bias[c] + sum_k w[c,k] * xpad[b,c,t+k]),  xpad = initial state (or zeros), x
//   final_state[b,c,j] = xpad[b,c,length + j]  (the last k - 1 values of xpad)
// Its own type rather than a ConvOp value: code that switches on ConvOp (forward or transposed)
// cannot then take it for one of those by falling through.
struct CausalConvShape {
  int64_t batch = 1;
  int64_t channels = 0;
  int64_t k = 4;
  int64_t length = 0;
  bool bias = true;
  bool initial_state = false; // an initial state tensor (and has_initial_state flags) is given
  Activation activation = Activation::silu;

  int64_t input_elems() const { return batch * channels * length; }
  int64_t weight_elems() const { return channels * k; }
  int64_t state_elems() const { return batch * channels * (k - 1); }
  int64_t output_elems() const { return batch * channels * length; }
  // Nominal FLOPs: 2 x batch x channels x length x k (the activation is not counted).
  double flops() const;
  // Fewest bytes a device kernel must move (f32): x, weight, bias and the initial state read once,
  // y and the final state written once.
  double min_bytes() const;
  void validate() const; // throws ShapeError naming the field
};

} // namespace convbench
