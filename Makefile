# Thin wrapper over meson for the README's commands.  The build is meson.
MESON   ?= meson
BUILD   ?= build
ASAN    ?= build-asan
TSAN    ?= build-tsan
FUZZB   ?= build-fuzz
FUZZ_SECONDS ?= 60
# `make fuzz` also runs the generated-program test (tests/gen/run.py) this
# long on the plain build; 0 leaves it out.  RELSTACK_GEN_SEED sets its base seed.
GEN_SECONDS ?= 900
# TIMED runs a command and prints how long it took.
TIMED = ./scripts/timed.sh

.PHONY: all deps deps-demo demo check check-cross test check-asan check-tsan bench fuzz install clean

# `make demo` configures the build without the tests and benchmarks (it
# installs only what the demo needs); `make all` turns them on.
all: deps $(BUILD)/build.ninja
	@$(MESON) introspect $(BUILD) --buildoptions | python3 -c \
		'import json,sys; o={x["name"]: x["value"] for x in json.load(sys.stdin)}; sys.exit(not (o["tests"] and o["benchmarks"]))' || \
		$(MESON) configure $(BUILD) -Dtests=true -Dbenchmarks=true
	ninja -C $(BUILD)

# The Debian packages: deps-demo what the demo needs, deps everything.
# (DEPS_DONE=1: a make that runs within make check, which installed them)
deps:
	@[ -n "$(DEPS_DONE)" ] || $(TIMED) "Debian packages for make check" ./scripts/install-deps.sh check

deps-demo:
	@$(TIMED) "Debian packages for make demo" ./scripts/install-deps.sh demo

$(BUILD)/build.ninja: | deps-demo
	$(MESON) setup $(BUILD) --buildtype=debugoptimized -Dwerror=true \
		$(if $(filter demo,$(MAKECMDGOALS)),-Dtests=false -Dbenchmarks=false)

$(ASAN)/build.ninja: | deps
	$(MESON) setup $(ASAN) --buildtype=debug -Dwerror=true \
		-Db_sanitize=address,undefined -Db_lundef=false -Dbenchmarks=false

$(TSAN)/build.ninja: | deps
	CC=clang $(MESON) setup $(TSAN) --buildtype=debugoptimized -Dwerror=true \
		-Db_sanitize=thread -Db_lundef=false -Dbenchmarks=false

$(FUZZB)/build.ninja: | deps
	CC=clang $(MESON) setup $(FUZZB) --buildtype=debugoptimized \
		-Dfuzz=true -Db_lundef=false -Dbenchmarks=false

# Only what the demo runs: the command, the library and the demo program
# with its plugin; `make all` and `make check` build the tests and
# benchmarks too.
DEMO_TARGETS = tools/relstack demo/relstack-demo demo/librelstack-demo-plugin.so

demo: deps-demo $(BUILD)/build.ninja
	ninja -C $(BUILD) $(DEMO_TARGETS)
	./scripts/demo.sh $(BUILD)

test: all
	$(MESON) test -C $(BUILD) --print-errorlogs --no-suite slow

# Every test: the plain build, the whole suite again under
# AddressSanitizer + UndefinedBehaviorSanitizer, the concurrency suite
# under ThreadSanitizer, and a short fuzzing run.
# Each part says how long it took.

check: all $(ASAN)/build.ninja $(TSAN)/build.ninja $(FUZZB)/build.ninja
	$(TIMED) "plain test suite" $(MESON) test -C $(BUILD) --print-errorlogs --no-suite linux
	$(TIMED) "linux kernel build and boots" $(MESON) test -C $(BUILD) --print-errorlogs --suite linux
	$(TIMED) "AddressSanitizer build" ninja -C $(ASAN)
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
		$(TIMED) "AddressSanitizer+UBSan test suite" $(MESON) test -C $(ASAN) --print-errorlogs --no-suite nosan
	$(TIMED) "ThreadSanitizer build" ninja -C $(TSAN)
	TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 \
		$(TIMED) "ThreadSanitizer concurrency suite" $(MESON) test -C $(TSAN) --print-errorlogs --suite concurrency
	$(TIMED) "fuzzing build" ninja -C $(FUZZB)
	$(TIMED) "fuzzing" $(MAKE) --no-print-directory fuzz FUZZ_SECONDS=15 GEN_SECONDS=0 DEPS_DONE=1
	$(MAKE) --no-print-directory check-cross DEPS_DONE=1

# The other architectures (scripts/cross-check.sh): build, tests, and files
# decoded across architectures.  One that cannot be built here (its
# compiler or libraries cannot be installed) is skipped with the reason.
CROSS_ARCHES ?= i386 aarch64

check-cross: all
	@failed=""; for a in $(CROSS_ARCHES); do \
		s=0; $(TIMED) "cross check $$a" ./scripts/cross-check.sh $$a $(BUILD) || s=$$?; \
		if [ $$s -eq 77 ]; then echo "== cross check $$a: skipped"; elif [ $$s -ne 0 ]; then failed="$$failed $$a"; fi; \
	done; \
	if [ -n "$$failed" ]; then echo "== cross check failed for:$$failed" >&2; exit 1; fi

bench: all
	./scripts/bench.sh $(BUILD)

fuzz: $(FUZZB)/build.ninja $(BUILD)/build.ninja
	ninja -C $(FUZZB)
	./scripts/fuzz.sh $(FUZZB) $(FUZZ_SECONDS)
	@if [ "$(GEN_SECONDS)" != 0 ]; then \
		ninja -C $(BUILD) && \
		python3 tests/gen/run.py --build $(BUILD) --seconds $(GEN_SECONDS); \
	fi

install: all
	$(MESON) install -C $(BUILD)

clean:
	rm -rf $(BUILD) $(ASAN) $(TSAN) $(FUZZB) $(CROSS_ARCHES:%=build-%) $(CROSS_ARCHES:%=build-%-sysroot)
