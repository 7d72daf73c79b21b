# SPDX-License-Identifier: MIT
# Developer entry points. meson/ninja do the real work; these targets only
# install dependencies, configure the right build directory and run things
# in a fixed order, so a fresh machine needs just `make demo` or `make test`.
#
#   make build         configure and build $(BUILD) (default: build/)
#   make test          build, run every test suite, print "N passed, N failed"
#   make asan          the same with clang + ASan + UBSan in $(ASAN_BUILD)
#   make tsan          clang + ThreadSanitizer in $(TSAN_BUILD): the
#                      unwinder and image tests ($(TSAN_TESTS))
#   make demo          record the bundled workload (root/perf), show a report
#   make demo-synthetic  generate a spool, check it and dump it with spulse
#   make bench         run the bench/ programs (JSON lines on stdout)
#   make fuzz          run each libFuzzer binary of $(ASAN_BUILD) briefly
#   make aarch64-test  AArch64 cross build in $(AARCH64_BUILD), its suites
#                      that need no perf_event under qemu-user (all of
#                      them: ~5 CPU-minutes; .ci/run runs it)
#   make aarch64-ci    a quick part of it: the cross-ci suite
#                      (tests/meson.build), building only what it needs
#   make aarch64-system-test  record an -O2 workload on Debian's arm64
#                      kernel under qemu-system-aarch64 (slow; not in CI)
#   make format        clang-format every C file in place
#   make format-check  fail if any C file is not formatted
#   make clean         remove the build directories and out/

BUILD ?= build
ASAN_BUILD ?= build-asan
TSAN_BUILD ?= build-tsan
MESON_OPTS ?=
FUZZ_SECONDS ?= 30
# Words put in front of the summary line (.ci/run sets it).
LABEL ?=

ASAN_MESON_OPTS = --buildtype=debug -Db_sanitize=address,undefined \
	-Db_lundef=false -Dmimalloc=disabled -Dfuzzing=true
SAN_ENV = ASAN_OPTIONS=detect_leaks=1 \
	UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
# Instrumented debug code is several times slower than the normal build.
ASAN_TEST_ARGS = --timeout-multiplier 4

# ThreadSanitizer: like ASan, clang and no mimalloc (its allocator would
# hide the heap from the sanitizer). Optimized, as TSan slows code 5-15x.
# Only the tests whose code TSan can judge: ck's inline-asm atomics give
# false reports (research/feasibility.md §6), so the symbolizer suite
# (ck_epoch) is left out unless TSAN_TESTS is overridden (TSAN_TESTS=
# runs every test). The recorder's threaded pipeline is in: under TSan
# its reader queues are built on C11 atomics (src/engine/pipeline/spsc.h).
TSAN_MESON_OPTS = --buildtype=debugoptimized -Db_sanitize=thread \
	-Db_lundef=false -Dmimalloc=disabled
TSAN_ENV = TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1
TSAN_TESTS ?= test_unwind_threads test_self_unwind test_signal_unwind \
	test_cfi_table test_cfi_rules test_unwind_bad test_image_bias \
	test_image_open test_image_real test_image_cache \
	test_merge test_reader_holds test_reader_merge test_reader_overload \
	test_pipeline_replay \
	test_pipeline_overload \
	test_rec_threads_threaded test_rec_forkexec_threaded \
	test_recorder_churn_threaded test_recorder_system \
	test_pipeline_idle test_offcpu_synth test_rec_offcpu_threaded \
	test_rec_recursion_threaded test_recorder_system_threaded \
	test_recorder_system_offcpu_threaded
TSAN_TEST_ARGS = --timeout-multiplier 4 $(TSAN_TESTS)

# AArch64: the cross build runs its test programs under qemu-user (the
# cross file's exe_wrapper, no binfmt). Suites without perf_event only:
# qemu-user has no perf_event_open, no io_uring. Host tools the tests run
# on target files (strip, objcopy) are the cross binutils, first on PATH.
AARCH64_BUILD ?= build-aarch64
AARCH64_MESON_OPTS = --cross-file cross/aarch64-linux-gnu.ini -Dbench=false
AARCH64_SUITES = --suite unit --suite fuzz-replay --suite headers --suite cli
AARCH64_TOOLS = $(CURDIR)/$(AARCH64_BUILD)/cross-tools
AARCH64_ENV = PATH=$(AARCH64_TOOLS):$(PATH)
AARCH64_TEST_ARGS = --timeout-multiplier 4 $(AARCH64_SUITES)
AARCH64_CI_ARGS = --timeout-multiplier 4 --suite cross-ci
AARCH64_SYSTEM_DIR ?= $(AARCH64_BUILD)/system

FORMAT_DIRS = $(wildcard src include tools tests bench examples)
FORMAT_FILES = find $(FORMAT_DIRS) -path tests/corpus -prune -o -type f \
	\( -name '*.c' -o -name '*.h' -o -name '*.cpp' \) -print | sort

SPOOL_GEN = $(BUILD)/bench/spool_gen
SPULSE = $(BUILD)/tools/spulse/spulse
WL_LADDER = $(BUILD)/tests/workloads/wl_ladder

# $(call meson_setup,DIR,OPTIONS): first setup, or reconfigure so that
# changed options take effect. Its exit status is the setup's.
meson_setup = if [ -f $(1)/meson-private/coredata.dat ]; then \
		{ meson setup --reconfigure $(1) $(2) >$(1)/setup.log 2>&1 && \
		  echo "meson: reconfigured $(1)"; } || \
		{ cat $(1)/setup.log; false; }; \
	else \
		meson setup $(1) $(2); \
	fi

# $(call run_tests,DIR,OPTIONS,TEST_ENV,TEST_ARGS[,PART]): configure, build,
# test, then always print the summary. The old testlog goes first, so a
# failed setup or build is counted as a failure, never as stale results.
# With PART non-empty only what the selected tests need is built (by
# meson test itself), not every target.
run_tests = rm -f $(1)/meson-logs/testlog.json; status=0; \
	{ $(call meson_setup,$(1),$(2)) && $(if $(5),,ninja -C $(1) &&) \
	  $(3) meson test -C $(1) --print-errorlogs $(4); } || status=1; \
	python3 scripts/test-summary $(if $(LABEL),--label "$(LABEL)") \
		$(1)/meson-logs/testlog.json || status=1; \
	exit $$status

.PHONY: all deps build test asan tsan aarch64-tools aarch64-test aarch64-ci \
	aarch64-system-test demo \
	demo-synthetic bench fuzz format format-check clean

all: build

deps:
	@sh scripts/install-deps

build: deps
	@$(call meson_setup,$(BUILD),$(MESON_OPTS))
	@ninja -C $(BUILD)

test: deps
	@$(call run_tests,$(BUILD),$(MESON_OPTS),,)

# clang for both languages: the sanitizer runtimes must match the compiler
# that instrumented the library.
asan: deps
	@export CC=clang CXX=clang++; \
	$(call run_tests,$(ASAN_BUILD),$(ASAN_MESON_OPTS) $(MESON_OPTS),$(SAN_ENV),$(ASAN_TEST_ARGS))

tsan: deps
	@export CC=clang CXX=clang++; \
	$(call run_tests,$(TSAN_BUILD),$(TSAN_MESON_OPTS) $(MESON_OPTS),$(TSAN_ENV),$(TSAN_TEST_ARGS))

aarch64-tools:
	@sh scripts/install-deps --aarch64
	@mkdir -p $(AARCH64_TOOLS) && for t in strip objcopy; do \
		ln -sf /usr/bin/aarch64-linux-gnu-$$t $(AARCH64_TOOLS)/$$t; \
	done

aarch64-test: aarch64-tools
	@$(call run_tests,$(AARCH64_BUILD),$(AARCH64_MESON_OPTS) $(MESON_OPTS),$(AARCH64_ENV),$(AARCH64_TEST_ARGS))

aarch64-ci: aarch64-tools
	@$(call run_tests,$(AARCH64_BUILD),$(AARCH64_MESON_OPTS) $(MESON_OPTS),$(AARCH64_ENV),$(AARCH64_CI_ARGS),part)

aarch64-system-test:
	@sh scripts/install-deps --aarch64-system
	@$(call meson_setup,$(AARCH64_BUILD),$(AARCH64_MESON_OPTS) $(MESON_OPTS))
	@ninja -C $(AARCH64_BUILD)
	@sh scripts/aarch64-system-test $(AARCH64_BUILD) $(AARCH64_SYSTEM_DIR)

demo: build
	@for b in $(SPULSE) $(WL_LADDER); do \
		[ -x $$b ] || { echo "make demo: $$b was not built" \
			"(is it listed in its meson.build?)" >&2; exit 1; }; \
	done
	@mkdir -p out
	$(SPULSE) record -o out/demo.spool -- $(WL_LADDER) 2
	@if $(SPULSE) help report >/dev/null 2>&1; then \
		echo "$(SPULSE) report out/demo.spool --top 15"; \
		$(SPULSE) report out/demo.spool --top 15; \
	else \
		echo "$(SPULSE) check out/demo.spool"; \
		$(SPULSE) check out/demo.spool && \
		echo "$(SPULSE) dump --limit 20 out/demo.spool" && \
		$(SPULSE) dump --limit 20 out/demo.spool; \
	fi

# The previous demo: a generated (synthetic) spool, no perf needed.
demo-synthetic: build
	@for b in $(SPOOL_GEN) $(SPULSE); do \
		[ -x $$b ] || { echo "make demo: $$b was not built" \
			"(is it listed in its meson.build?)" >&2; exit 1; }; \
	done
	@mkdir -p out
	$(SPOOL_GEN) --scenario python_kernel_mix --out out/demo-synthetic.spool
	$(SPULSE) check out/demo-synthetic.spool
	$(SPULSE) dump out/demo-synthetic.spool >out/demo-synthetic.dump
	@head -n 40 out/demo-synthetic.dump
	@echo "... (full dump in out/demo-synthetic.dump:" \
		"$$(wc -l <out/demo-synthetic.dump) lines)"

# Bench programs print one JSON object per line on stdout; the name of each
# program goes to stderr so stdout stays machine-readable.
bench: build
	@found=0; status=0; \
	for b in $(BUILD)/bench/bench_*; do \
		[ -f $$b ] && [ -x $$b ] || continue; \
		found=1; echo "# $$b" >&2; $$b || status=1; \
	done; \
	if [ $$found = 0 ]; then \
		echo "make bench: no bench programs ($(BUILD)/bench/bench_*)" \
			"built yet; is -Dbench=true?"; \
	fi; \
	exit $$status

fuzz:
	@sh scripts/run-fuzzers $(ASAN_BUILD) $(FUZZ_SECONDS)

format:
	@$(FORMAT_FILES) | xargs -r clang-format -i
	@echo "make format: formatted $$($(FORMAT_FILES) | wc -l) files"

format-check:
	@log=$$(mktemp); $(FORMAT_FILES) | \
	xargs -r -P2 -n 64 clang-format --dry-run -Werror --ferror-limit=1 \
		2>$$log; rc=$$?; \
	bad=$$(grep -o '^[^: ]*:[0-9]*:[0-9]*: error' $$log | cut -d: -f1 | \
		sort -u); \
	rm -f $$log; \
	for f in $$bad; do echo "not formatted: $$f"; done; \
	if [ $$rc != 0 ]; then \
		echo "make format-check: $$(echo $$bad | wc -w) files differ" \
			"from .clang-format (clang-format exit $$rc);" \
			"run 'make format'"; \
		exit 1; \
	fi; \
	echo "make format-check: ok"

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(TSAN_BUILD) $(AARCH64_BUILD) out
