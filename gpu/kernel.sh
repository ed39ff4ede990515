#!/usr/bin/env bash
# The paper's kernel experiment, unattended on a bare GPU machine (docs/gpu.md). llama.cpp's CUDA
# build from the carried sources (.gpu/llama-cpp-python.tar.xz, `make gpu-sources`) runs in the
# background on all cores but two while the transformers phase measures on those two (with fewer
# than 8 cores, one after the other); then the llama.cpp phase runs on the build. Each phase's
# table and plot land in OUT as each shape finishes, so a window cut short keeps what it measured.
# Needs a Python with numpy, torch and transformers ($PYTHON, default python3), CUDA's compiler
# and CMake; no network. CUDA=OFF makes it the dry run on a CPU.
# Usage: [CUDA=OFF] [PYTHON=python3] gpu/kernel.sh OUT [copyedit_lsp.bench.paper_kernel arguments]
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$1" && out=$(cd "$1" && pwd) && shift
cuda=$root/.gpu/cuda
log() { echo "$(date +%T) $*" | tee -a "$out/log.txt"; }
measure() { "$@" 2>&1 | tee -a "$out/log.txt"; }
paper_kernel=("${PYTHON:-python3}" -m copyedit_lsp.bench.paper_kernel --out "$out")

nvidia-smi > "$out/nvidia-smi.txt" 2>&1
arch=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d '.')
build() {
    local started=$SECONDS
    CUDA_ARCH=${arch:+$arch-real} "$@" "$root/gpu/build-llama.sh" "$root/.gpu/llama-cpp-python.tar.xz" "$cuda" \
        > "$out/build.log" 2>&1
    echo "exit $? after $((SECONDS - started)) s" > "$out/build.done"
}
cores=$(nproc)
if [ "$cores" -ge 8 ] && command -v taskset > /dev/null; then  # the build beside the transformers phase
    log "llama.cpp build (CUDA ${CUDA:-ON}, sm_${arch:-native}) on cores 2-$((cores - 1)), log in build.log"
    build env JOBS=$((cores - 2)) taskset -c "2-$((cores - 1))" &
    log "transformers phase on cores 0-1"
    PYTHONPATH=$root measure taskset -c 0,1 "${paper_kernel[@]}" --phases transformers --threads 2 "$@"
    wait
else  # too few cores to share: one after the other
    log "llama.cpp build (CUDA ${CUDA:-ON}, sm_${arch:-native}), log in build.log"
    build env
    log "transformers phase"
    PYTHONPATH=$root measure "${paper_kernel[@]}" --phases transformers "$@"
fi
log "llama.cpp build: $(cat "$out/build.done")"
log "llama.cpp phase"
PYTHONPATH=$root:$cuda/python LLAMA_CPP_LIB_PATH=$cuda/lib measure "${paper_kernel[@]}" --phases llama-cpp "$@"
log "done"
