#include "convbench/shape.hpp"

#include <limits>

namespace convbench {

int64_t ConvShape::l_out() const {
  if (op == ConvOp::forward) {
    // torch.nn.Conv1d: floor((L_in + 2p - d(K-1) - 1) / s) + 1
    const int64_t span = l_in + 2 * padding - dilation * (k - 1) - 1;
    if (span < 0)
      return 0; // no full window: torch refuses; validate() reports it
    return span / stride + 1;
  }
  // torch.nn.ConvTranspose1d: (L_in - 1) s - 2p + d(K-1) + output_padding + 1
  return (l_in - 1) * stride - 2 * padding + dilation * (k - 1) + output_padding + 1;
}

int64_t ConvShape::input_elems() const { return batch * cin * l_in; }
int64_t ConvShape::weight_elems() const { return cin * cout * k; }
int64_t ConvShape::output_elems() const { return batch * cout * l_out(); }

double ConvShape::flops() const {
  const double per_position = 2.0 * double(batch) * double(cin) * double(cout) * double(k);
  return per_position * double(op == ConvOp::transposed ? l_in : l_out());
}

int64_t ConvShape::valid_macs() const {
  // Taps whose input index lands inside [0, l_in) (forward) or whose destination lands inside
  // [0, l_out) (transposed); the channel product multiplies every such (position, tap) pair.
  const int64_t lo = l_out();
  int64_t pairs = 0;
  for (int64_t kk = 0; kk < k; ++kk) {
    if (op == ConvOp::forward) {
      for (int64_t o = 0; o < lo; ++o) {
        const int64_t i = o * stride - padding + kk * dilation;
        pairs += (i >= 0 && i < l_in) ? 1 : 0;
      }
    } else {
      for (int64_t t = 0; t < l_in; ++t) {
        const int64_t p = t * stride - padding + kk * dilation;
        pairs += (p >= 0 && p < lo) ? 1 : 0;
      }
    }
  }
  return pairs * batch * cin * cout;
}

double ConvShape::min_bytes() const {
  const double elems = double(input_elems()) + double(weight_elems()) + double(bias ? cout : 0) +
                       double(output_elems());
  return 4.0 * elems;
}

namespace {
void require(bool ok, const char *field, const std::string &why) {
  if (!ok)
    throw ShapeError(std::string("invalid ConvShape: ") + field + " " + why);
}
} // namespace

void ConvShape::validate() const {
  require(batch >= 1, "batch", "must be >= 1, got " + std::to_string(batch));
  require(cin >= 1, "cin", "must be >= 1, got " + std::to_string(cin));
  require(cout >= 1, "cout", "must be >= 1, got " + std::to_string(cout));
  require(k >= 1, "k", "must be >= 1, got " + std::to_string(k));
  require(stride >= 1, "stride", "must be >= 1, got " + std::to_string(stride));
  require(dilation >= 1, "dilation", "must be >= 1, got " + std::to_string(dilation));
  require(padding >= 0, "padding", "must be >= 0, got " + std::to_string(padding));
  require(l_in >= 1, "l_in", "must be >= 1, got " + std::to_string(l_in));
  // Keep every element count and index comfortably inside int64 (and the f32 buffers addressable).
  const int64_t big = int64_t(1) << 40;
  require(cin <= big / cout && cin * cout <= big / k, "k",
          "makes the weight tensor too large (cin x cout x k > 2^40)");
  require(l_in <= big / batch && batch * l_in <= big / cin, "l_in",
          "makes the input tensor too large (batch x cin x l_in > 2^40)");
  require(padding <= big && stride <= big && dilation <= big && k <= big, "padding",
          "or stride/dilation/k is beyond 2^40");
  if (op == ConvOp::forward) {
    require(output_padding == 0, "output_padding",
            "must be 0 for a forward conv, got " + std::to_string(output_padding));
    require(l_in + 2 * padding >= dilation * (k - 1) + 1, "l_in",
            "is shorter than the dilated kernel: l_in + 2 padding = " +
                std::to_string(l_in + 2 * padding) +
                " < dilation (k - 1) + 1 = " + std::to_string(dilation * (k - 1) + 1));
  } else {
    require(output_padding >= 0, "output_padding",
            "must be >= 0, got " + std::to_string(output_padding));
    // torch: "output padding must be smaller than either stride or dilation"
    require(output_padding < stride || output_padding < dilation, "output_padding",
            "must be smaller than stride or dilation, got " + std::to_string(output_padding));
    require(l_out() >= 1, "padding",
            "leaves no output: l_out = " + std::to_string(l_out()) + " (must be >= 1)");
  }
  require(l_out() <= big / batch && batch * l_out() <= big / cout, "l_out",
          "makes the output tensor too large (batch x cout x l_out > 2^40)");
}

std::string to_string(ConvOp op) { return op == ConvOp::forward ? "conv1d" : "conv_transpose1d"; }

std::string to_string(Activation a) { return a == Activation::silu ? "silu" : "none"; }

double CausalConvShape::flops() const {
  return 2.0 * double(batch) * double(channels) * double(length) * double(k);
}

double CausalConvShape::min_bytes() const {
  const double elems = double(input_elems()) + double(weight_elems()) +
                       double(bias ? channels : 0) + double(initial_state ? state_elems() : 0) +
                       double(output_elems()) + double(state_elems());
  return 4.0 * elems;
}

void CausalConvShape::validate() const {
  auto need = [](bool ok, const char *field, const std::string &why) {
    if (!ok)
      throw ShapeError(std::string("invalid CausalConvShape: ") + field + " " + why);
  };
  need(batch >= 1, "batch", "must be >= 1, got " + std::to_string(batch));
  need(channels >= 1, "channels", "must be >= 1, got " + std::to_string(channels));
  // k = 1 would leave no state to carry; causal_conv1d takes widths 2..4, the reference any.
  need(k >= 2 && k <= 64, "k", "must be in [2, 64], got " + std::to_string(k));
  need(length >= 1, "length", "must be >= 1, got " + std::to_string(length));
  const int64_t big = int64_t(1) << 40;
  need(length <= big / batch && batch * length <= big / channels, "length",
       "makes the input tensor too large (batch x channels x length > 2^40)");
}

} // namespace convbench
