# Thin wrapper around CMake so the README's commands stay short.
#   make test   installs what is missing (scripts/setup.sh), builds, runs every test
#   make demo   installs, builds, runs the built-in demo
BUILD      ?= build
SAN_BUILD  ?= build-san
FUZZ_BUILD ?= build-fuzz
FUZZ_SECONDS ?= 60
JOBS       ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE_ARGS ?=

.PHONY: all setup configure build test test-only hostile sanitize fuzz demo bench bench-peers install clean help

all: build

help:
	@echo "make test      install dependencies, build, run all tests"
	@echo "make demo      install dependencies, build, run the demo"
	@echo "make build     configure and build into $(BUILD)/"
	@echo "make hostile   build and run only the hostile-input suite (ctest label hostile; part of make test)"
	@echo "make sanitize  build into $(SAN_BUILD)/ with -fsanitize=address,undefined and run the tests"
	@echo "make fuzz      build the libFuzzer targets (clang) into $(FUZZ_BUILD)/, run each FUZZ_SECONDS (60)"
	@echo "make bench     run the benchmarks (never part of the tests)"
	@echo "make bench-peers  venv $(PEERS_VENV) with torch (CPU) + medical-image-std from PyPI, for LUMEN_MIS_PYTHON"
	@echo "variables: BUILD, JOBS, CMAKE_ARGS (e.g. CMAKE_ARGS=-DLUMEN_CUDA=OFF)"

setup:
	@bash scripts/setup.sh

# test builds compile the fault-injection hooks (LUMEN_TEST_HOOKS); every other build leaves them out
TEST_HOOKS ?= OFF

configure:
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release -DLUMEN_TEST_HOOKS=$(TEST_HOOKS) -DLUMEN_TESTS=ON $(CMAKE_ARGS)

build: configure
	cmake --build $(BUILD) -j $(JOBS)

test-only:
	@rc=0; ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS) --output-junit junit.xml || rc=$$?; \
	  python3 scripts/test-skips.py $(BUILD)/junit.xml; exit $$rc

hostile:
	$(MAKE) --no-print-directory build TEST_HOOKS=ON
	ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS) -L hostile

test:
	@bash scripts/setup.sh
	$(MAKE) --no-print-directory build TEST_HOOKS=ON
	$(MAKE) --no-print-directory test-only

sanitize:
	@bash scripts/setup.sh
	cmake -S . -B $(SAN_BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DLUMEN_SANITIZE=ON -DLUMEN_TEST_HOOKS=ON $(CMAKE_ARGS)
	cmake --build $(SAN_BUILD) -j $(JOBS)
	ctest --test-dir $(SAN_BUILD) --output-on-failure -j $(JOBS)

fuzz:
	@bash scripts/setup.sh
	$(MAKE) --no-print-directory build TEST_HOOKS=ON
	bash fuzz/run.sh $(BUILD) $(FUZZ_BUILD) $(FUZZ_SECONDS)

# The demo builds only the lumen program (no tests, no MPI) in its own folder, and the CUDA tier
# only where an NVIDIA driver answers: the demo in minutes on a fresh machine (issue 43 item 4).
DEMO_BUILD ?= build-demo
DEMO_CUDA  ?= $(shell nvidia-smi -L >/dev/null 2>&1 && echo ON || echo OFF)
demo:
	@bash scripts/setup.sh --demo
	@echo "demo: building the lumen program into $(DEMO_BUILD)/ (CUDA $(DEMO_CUDA): $(if $(filter ON,$(DEMO_CUDA)),an NVIDIA driver answered,no NVIDIA driver))"
	cmake -S . -B $(DEMO_BUILD) -DCMAKE_BUILD_TYPE=Release -DLUMEN_TESTS=OFF -DLUMEN_MPI=OFF \
	  -DLUMEN_CUDA=$(DEMO_CUDA) $(CMAKE_ARGS)
	cmake --build $(DEMO_BUILD) -j $(JOBS) --target lumen
	./$(DEMO_BUILD)/lumen demo

bench:
	@bash scripts/setup.sh
	$(MAKE) --no-print-directory build
	@if [ -x bench/run.sh ]; then bash bench/run.sh $(BUILD); else echo "no benchmarks yet"; fi

# The peer framework (PyPI medical-image-std over torch CPU) in its own venv, for the comparisons of
# python/tests/test_medical_image_*.py and bench/bench_*_peers.py (LUMEN_MIS_PYTHON). Needs the
# network; never part of make test.
PEERS_VENV ?= build-peers/venv
PEERS_PYTHON ?= python3
bench-peers:
	@[ -x $(PEERS_VENV)/bin/python ] || $(PEERS_PYTHON) -m venv $(PEERS_VENV)
	$(PEERS_VENV)/bin/pip install --upgrade pip
	$(PEERS_VENV)/bin/pip install --index-url https://download.pytorch.org/whl/cpu torch || \
	  $(PEERS_VENV)/bin/pip install torch   # PyPI's torch where PyTorch's own index is not reachable
	$(PEERS_VENV)/bin/pip install numpy scipy scikit-image medical-image-std
	@$(PEERS_VENV)/bin/python -c 'import torch, medical_image; print("torch", torch.__version__, "medical_image ok")'
	@echo "now: export LUMEN_MIS_PYTHON=$(abspath $(PEERS_VENV))/bin/python   (then make test, or ctest -R python)"

install: build
	cmake --install $(BUILD) $(if $(PREFIX),--prefix $(PREFIX),)

clean:
	rm -rf $(BUILD) $(SAN_BUILD) $(FUZZ_BUILD) $(DEMO_BUILD)
