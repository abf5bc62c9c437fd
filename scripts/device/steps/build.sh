# shellcheck shell=bash
# h200.sh step `build` (sourced after ../common.sh: log, cap, enough, B, W, OUT).
{ nvidia-smi; nvcc --version; nproc; lscpu | grep -E "Model name"; echo "ISA flags: $(grep -m1 -ow -E 'avx2|fma|avx512f|avx512vl|avx512_fp16|avx512_bf16|amx_tile' /proc/cpuinfo | sort -u | tr '\n' ' ')"; } >"$W/logs/machine.txt" 2>&1
t0=$(date +%s)
# CLI11 (header-only) and OpenSSL's headers are not in the GPU image: where missing, the
# Debian packages' headers carried in .devdeps/ (git-ignored) are used, and the image's own
# libcrypto.so.3 is linked.
extra=()
if [ ! -e /usr/include/CLI/CLI.hpp ] && [ ! -e /usr/local/include/CLI/CLI.hpp ] && [ -d .devdeps/cli11 ]; then
  extra+=(-DCMAKE_PREFIX_PATH="$PWD/.devdeps/cli11"); echo "CLI11 from .devdeps" >>"$W/logs/machine.txt"
fi
if [ ! -e /usr/include/openssl/sha.h ] && [ -d .devdeps/openssl ]; then
  crypto=$(ldconfig -p | awk '/libcrypto\.so\.3 .*x86-64/ {print $NF; exit}')
  extra+=(-DOPENSSL_INCLUDE_DIR="$PWD/.devdeps/openssl/include" -DOPENSSL_CRYPTO_LIBRARY="$crypto")
  echo "OpenSSL headers from .devdeps, $crypto" >>"$W/logs/machine.txt"
fi
command -v ccache >/dev/null && extra+=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
cmake -S . -B "$B" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 "${extra[@]}" \
  >"$W/logs/configure.txt" 2>&1 || { log "configure FAILED"; tail -30 "$W/logs/configure.txt"; }
# BUILD_TARGETS (e.g. "bench_conv bench_unit_tests"): only those, for a call that needs no other.
# shellcheck disable=SC2086 # BUILD_TARGETS: target names, split into words
cmake --build "$B" -j16 ${BUILD_TARGETS:+--target $BUILD_TARGETS} >"$W/logs/build.txt" 2>&1 ||
  { log "build FAILED"; grep -m20 -B2 -A8 "error" "$W/logs/build.txt"; }
log "build: $(( $(date +%s) - t0 )) s"
