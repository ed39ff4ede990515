#!/usr/bin/env bash
# The pinned llama-cpp-python's sources a CUDA build needs, in one archive that travels to a bare
# GPU machine with the tree (docs/gpu.md): the Python bindings, llama.cpp's library (src, include,
# the vendored headers) and ggml with its CPU and CUDA backends only, gguf-py, and diskcache (the
# bindings import it). Leaves out the sdist's models, docs, tools, tests and other backends.
# Usage: gpu/sources.sh PYTHON PIN OUT.tar.xz
set -euo pipefail
python=$1 pin=$2 out=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$python" -m pip download --quiet --no-deps --no-binary :all: -d "$work/sdist" "$pin"
"$python" -m pip download --quiet --no-deps --only-binary :all: -d "$work/wheels" diskcache==5.6.3
tar xzf "$work"/sdist/*.tar.gz -C "$work"
src=$(echo "$work"/llama_cpp_python-*)
cpp=$src/vendor/llama.cpp
keep=$work/keep
mkdir -p "$keep/python" "$keep/llama.cpp/ggml/src" "$keep/llama.cpp/vendor"
cp -r "$src/llama_cpp" "$cpp/gguf-py/gguf" "$keep/python/"
"$python" -m zipfile -e "$work"/wheels/diskcache-*.whl "$keep/python/"
cp -r "$cpp/CMakeLists.txt" "$cpp/LICENSE" "$cpp/cmake" "$cpp/include" "$cpp/src" "$keep/llama.cpp/"
cp -r "$cpp/ggml/CMakeLists.txt" "$cpp/ggml/cmake" "$cpp/ggml/include" "$keep/llama.cpp/ggml/"
find "$cpp/ggml/src" -maxdepth 1 -type f -exec cp {} "$keep/llama.cpp/ggml/src/" \;
cp -r "$cpp/ggml/src/ggml-cpu" "$cpp/ggml/src/ggml-cuda" "$keep/llama.cpp/ggml/src/"
for dir in "$cpp"/vendor/*; do
    [ "$(basename "$dir")" = cpp-httplib ] || cp -r "$dir" "$keep/llama.cpp/vendor/"
done
echo "${pin#*==}" > "$keep/VERSION"
mkdir -p "$(dirname "$out")"
tar cJf "$out" -C "$keep" .
