// The Hopper kernels' plans for a shape and its TcOptions on the current device (tc_conv.cpp):
// the one place the options' forced variant reaches wg::plan and dm::plan, for the support
// checks and for the convolution TcConv stages alike.
#pragma once

#include "convbench/shape.hpp"
#include "convbench/tc_conv.hpp"
#include "dm_plan.hpp"
#include "wg_plan.hpp"

namespace convbench::tc {

wg::Plan wg_plan(const ConvShape &s, Precision p, const TcOptions &o);
dm::Plan dm_plan(const ConvShape &s, const TcOptions &o);

} // namespace convbench::tc
