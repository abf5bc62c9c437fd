#!/usr/bin/env bash
# Set-up on a fresh Debian 12 machine (the dev/CI kind): system packages, the analysis package,
# then a configured and built tree in build/. Idempotent; safe to re-run.
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

PIP_BREAK_SYSTEM_PACKAGES=1 python3 -m pip install -q --disable-pip-version-check -e analysis/ pytest ruff 2>&1 | grep -v "^WARNING: Running pip as" || true

# ccache, where installed, makes a rebuild of an unchanged tree (a second checkout) nearly free.
launcher=()
if command -v ccache >/dev/null; then
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
fi
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release "${launcher[@]}" ${CONVBENCH_CMAKE_ARGS:-} >/dev/null
cmake --build build -j"$(nproc)"
echo "bootstrap: built into build/ (binaries in build/bin)" >&2
