#!/usr/bin/env bash
# Prepares, on the dev machine, what a device call carries (both folders are git-ignored):
#   .devdeps/  CLI11's headers and CMake config and OpenSSL's headers, copied from this machine's
#              Debian packages (libcli11-dev, libssl-dev): the GPU image has neither, and
#              scripts/h200.sh points CMake at them only where the image lacks them;
#   .whl/      the Python wheels the GPU image lacks (jsonschema and parts, ruptures, tabulate, shtab);
#   .devlibs/  Debian's Google Benchmark library, for binaries built here and carried (B=build-cuda).
# Then: run(command="bash scripts/h200.sh STEPS", carry=[".whl", ".devdeps"]).
set -euo pipefail
cd "$(dirname "$0")/.."
grep -qx '/.devdeps/' .git/info/exclude 2>/dev/null || { mkdir -p .git/info; echo /.devdeps/ >>.git/info/exclude; }
grep -qx '/.devlibs/' .git/info/exclude 2>/dev/null || echo /.devlibs/ >>.git/info/exclude
rm -rf .devlibs && mkdir -p .devlibs && cp /lib/x86_64-linux-gnu/libbenchmark.so.1debian .devlibs/
rm -rf .devdeps && mkdir -p .devdeps/cli11/include .devdeps/cli11/share/cmake .devdeps/openssl/include
cp -r /usr/include/CLI .devdeps/cli11/include/
cp -r /usr/share/cmake/CLI11 .devdeps/cli11/share/cmake/
cp -r /usr/include/openssl .devdeps/openssl/include/
cp /usr/include/x86_64-linux-gnu/openssl/* .devdeps/openssl/include/openssl/
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
  -d .whl jsonschema jsonschema-specifications referencing rpds-py ruptures tabulate shtab
du -sh .devdeps .whl .devlibs
