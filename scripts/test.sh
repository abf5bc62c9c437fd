#!/usr/bin/env bash
# Every test: the C++ suites through CTest (GPU tests report themselves skipped without a GPU; the
# etcd tests start a real etcd on loopback), then the analysis suite through pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -f build/build.ninja ] || bash scripts/bootstrap.sh
# every translation unit, the CUDA ones wherever nvcc is (bootstrap's first build is host-only on a
# machine without a GPU): GPU tests then report themselves skipped
cmake -S . -B build -DCONVBENCH_CUDA=AUTO ${CONVBENCH_CMAKE_ARGS:-} >/dev/null
cmake --build build -j"$(nproc)"
status=0
junit="$PWD/build/ctest-junit.xml"
rm -f "$junit"
ctest --test-dir build --output-on-failure -j2 --timeout 600 --output-junit "$junit" || status=$?
# ran / passed / failed / skipped, the skips grouped by the reason each test printed
python3 scripts/ctest_summary.py "$junit" || status=$?
python3 -m pytest -q analysis/tests || status=$?
# one C++ style (.clang-format: LLVM, 100 columns) over every tracked C, C++ and CUDA file
git ls-files '*.c' '*.h' '*.cpp' '*.hpp' '*.cu' '*.cuh' | xargs clang-format --dry-run --Werror ||
  status=$?
# one Python style: lint over every Python folder (and convbench-fleet, a Python script without
# .py); formatting over all of them but scripts/
python=(analysis bench lease profiles tests lease/tools/convbench-fleet)
ruff check "${python[@]}" scripts || status=$?
ruff format --check "${python[@]}" || status=$?
exit $status
