#include "run.hpp"

int main(int argc, char **argv) { return convbench::bench::run_bench_conv(argc, argv); }
