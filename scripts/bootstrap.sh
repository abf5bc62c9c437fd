#!/usr/bin/env bash
# Set-up on a fresh Debian 12 machine (the dev/CI kind): system packages, the analysis package,
# then a configured tree in build/ with the main job's binaries built. Idempotent; safe to re-run.
set -euo pipefail
cd "$(dirname "$0")/.."

debs=(cmake ninja-build g++ libgtest-dev libbenchmark-dev nlohmann-json3-dev libcli11-dev
      libcurl4-openssl-dev libssl-dev etcd-server etcd-client stress-ng slurm-wlm munge clang-format)
missing=()
for p in "${debs[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if ((${#missing[@]})); then
  echo "bootstrap: installing ${missing[*]}" >&2
  sudo_=""; [ "$(id -u)" = 0 ] || sudo_="sudo"
  $sudo_ apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_ apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# The analysis package (editable): installed again only when its pyproject.toml changed.
mkdir -p build
pip_stamp="build/.analysis-installed"
pip_want="$(sha256sum analysis/pyproject.toml | cut -c1-16)"
if [ "$(cat "$pip_stamp" 2>/dev/null)" != "$pip_want" ] || ! python3 -c "import convbench_analysis" 2>/dev/null; then
  PIP_BREAK_SYSTEM_PACKAGES=1 python3 -m pip install -q --disable-pip-version-check -e analysis/ pytest ruff 2>&1 | grep -v "^WARNING: Running pip as" || true
  echo "$pip_want" >"$pip_stamp"
fi

# ccache, where installed, makes a rebuild of an unchanged tree (a second checkout) nearly free.
launcher=()
if command -v ccache >/dev/null; then
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
fi
# CUDA where it can run: with no GPU visible, the first configure is host-only, so the main job's
# first number comes within minutes on 2 cores. The test command compiles the CUDA parts wherever
# nvcc is; CONVBENCH_CMAKE_ARGS=-DCONVBENCH_CUDA=ON asks for them here.
cuda=()
if [ ! -f build/CMakeCache.txt ] && ! nvidia-smi -L >/dev/null 2>&1; then
  cuda=(-DCONVBENCH_CUDA=OFF)
  echo "bootstrap: no GPU visible: host-only build (the test command compiles the CUDA parts)" >&2
fi
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release "${launcher[@]}" "${cuda[@]}" ${CONVBENCH_CMAKE_ARGS:-} >/dev/null
# the main job's binaries; the test command builds everything else
cmake --build build -j"$(nproc)" --target bench_conv convlease
echo "bootstrap: built bench_conv and convlease into build/bin" >&2
