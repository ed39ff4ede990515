#!/usr/bin/env bash
# Build llama.cpp with CUDA from the archive gpu/sources.sh made, into DEST: DEST/lib (libllama
# and ggml's libraries, RUNPATH $ORIGIN) and DEST/python (the bindings, gguf and diskcache), used
# by PYTHONPATH=DEST/python LLAMA_CPP_LIB_PATH=DEST/lib. CUDA_ARCH: the GPU's compute capability
# without the dot (90 for H100 and H200), or "native" for the GPU this machine has (the default);
# CUDA=OFF builds for the CPU only (the check that the archive holds every source the build needs);
# CMAKE_ARGS adds CMake arguments.
# Usage: [CUDA_ARCH=90] [CUDA=ON] [JOBS=n] [CMAKE_ARGS=...] gpu/build-llama.sh ARCHIVE DEST
set -euo pipefail
archive=$1 dest=$2
cuda=${CUDA:-ON} arch=${CUDA_ARCH:-native} jobs=${JOBS:-$(nproc)}
rm -rf "$dest" && mkdir -p "$dest/src"
"${PYTHON:-python3}" -m tarfile -e "$archive" "$dest/src"  # Python's lzma: no xz binary needed
generator=()
command -v ninja > /dev/null && generator=(-G Ninja)
eval "extra=(${CMAKE_ARGS:-})"  # the Makefile's flags for this CPU (quoted words)
cmake -S "$dest/src/llama.cpp" -B "$dest/build" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release \
    -DBUILD_SHARED_LIBS=ON -DCMAKE_BUILD_RPATH_USE_ORIGIN=ON -DGGML_CUDA="$cuda" \
    -DCMAKE_CUDA_ARCHITECTURES="$arch" -DLLAMA_BUILD_COMMON=OFF -DLLAMA_BUILD_TESTS=OFF \
    -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_TOOLS=OFF -DLLAMA_BUILD_SERVER=OFF -DLLAMA_BUILD_APP=OFF \
    -DLLAMA_OPENSSL=OFF "${extra[@]}"
cmake --build "$dest/build" --target llama --parallel "$jobs"
mkdir -p "$dest/lib"
cp -P "$dest"/build/bin/lib*.so* "$dest/lib/"
mv "$dest/src/python" "$dest/python"
rm -rf "$dest/src" "$dest/build"
