# Huddle: the two commands a newcomer needs are `make demo` and `make test`.
SWIFT ?= swift
FUZZ_SECONDS ?= 6

.PHONY: nat-lab cross-version api-baseline demo test install uninstall deps large-sessions rotation-measure rotation-cpu mesh soak lint format build docs docs-preview examples-test unit-tests slow-tests simulation fuzz-smoke fuzz check-vectors protocol-vectors \
	conformance sanitize transport-bench \
	cli-latency journal-measure churn-schedule clean compare compare-smoke bench-smoke benchmarks

## Runs the in-process demonstration (no setup needed beyond `make deps`, which it runs).
demo: deps
	$(SWIFT) run -c release huddle demo

## Installs what is missing, lints, runs every test suite and a short fuzz smoke run.
test: export HUDDLE_WARNINGS_AS_ERRORS = 1
test: deps lint protocol-vectors unit-tests docs simulation bench-smoke compare-smoke conformance fuzz-smoke

## Builds `huddle` in release mode and installs it as $(PREFIX)/bin/huddle (PREFIX=/usr/local by default;
## `make install PREFIX=$$HOME/.local` needs no root). `make uninstall` removes it again.
PREFIX ?= /usr/local
install: deps
	$(SWIFT) build -c release --product huddle
	install -d "$(DESTDIR)$(PREFIX)/bin"
	install -m 0755 "$$($(SWIFT) build -c release --show-bin-path)/huddle" "$(DESTDIR)$(PREFIX)/bin/huddle"
	@echo "installed $(DESTDIR)$(PREFIX)/bin/huddle"
	@case ":$$PATH:" in *":$(PREFIX)/bin:"*) ;; *) echo "note: $(PREFIX)/bin is not on your PATH";; esac

uninstall:
	rm -f "$(DESTDIR)$(PREFIX)/bin/huddle"

## Installs libsodium-dev (and pkg-config) with apt when missing, using sudo when not root.
deps:
	@scripts/install-deps.sh

## Layering rules (sans-IO modules, import direction), formatting (swift-format, 4 spaces, 120 columns), and a
## build of every target of ours (the tests too) with each compiler warning an error (HUDDLE_WARNINGS_AS_ERRORS,
## read by Package.swift). `make test` builds the same way, so its test runs reuse this build.
lint: export HUDDLE_WARNINGS_AS_ERRORS = 1
lint: deps
	@scripts/check-layers.sh
	@scripts/check-hygiene.sh
	@scripts/check-readme.sh
	$(SWIFT) format lint --strict --recursive Package.swift Sources Tests FuzzTesting/Package.swift FuzzTesting/Sources
	@echo "format: ok"
	$(SWIFT) build --build-tests
	@echo "warnings: none (every warning in our targets is an error here)"
	@scripts/check-api.sh
	@scripts/check-tutorial.sh

## Rewrites docs/api/Huddle.txt, the listing of the Huddle module's public API that `make lint` compares against:
## run it when a public change is intended, and note the change in CHANGELOG.md.
api-baseline: deps
	$(SWIFT) build --build-tests
	scripts/check-api.sh --update

## A session between the release `huddle` of an earlier commit (CROSS_VERSION_REF, by default the baseline in
## scripts/cross-version.sh) and this tree's: each hosts while the other joins, chat both ways, an attachment each
## way (CrossVersionProcessTests). Builds the earlier one once under .build/cross-version/; not in `make test`.
CROSS_VERSION_REF ?=
cross-version: deps
	scripts/cross-version.sh $(CROSS_VERSION_REF)

## Rewrites sources in the project's format.
format:
	$(SWIFT) format format --in-place --recursive Package.swift Sources Tests FuzzTesting/Package.swift FuzzTesting/Sources

build: deps
	$(SWIFT) build

## The DocC reference and articles of the Huddle library (Sources/Huddle/Huddle.docc) with every warning an error
## (a broken symbol link fails the build). Open .build/plugins/Swift-DocC/outputs/Huddle.doccarchive with
## `make docs-preview`, or publish it with `swift package generate-documentation --transform-for-static-hosting`.
docs: deps
	$(SWIFT) package generate-documentation --target Huddle --warnings-as-errors

## Serves the documentation at http://localhost:8080/documentation/huddle (needs no network).
docs-preview: deps
	$(SWIFT) package --disable-sandbox preview-documentation --target Huddle

## The DrawTogether sample (Examples/DrawTogether, its own package on Hummingbird) in headless Chromium: two pages
## draw together, an image dropped in one appears in the other, a late joiner sees both after the author left.
## Installs chromium, chromium-driver (apt) and selenium (pip) when missing; screenshots in
## Examples/DrawTogether/.build/browser-test. Not in `make test`: building Hummingbird (over 4 minutes here) and
## installing Chromium would push CI past its 30 minutes.
examples-test: deps
	$(SWIFT) build --package-path Examples/DrawTogether
	python3 Examples/DrawTogether/Tests/browser_test.py --binary Examples/DrawTogether/.build/debug/DrawTogether

## Unit, property and known-answer tests, loopback and multi-process tests of `huddle`, and (as root) the
## network-namespace tests (debug build) and the 32-process mesh (MeshProcessTests, twice), these last on their own:
## their 20 MiB transfers between five processes and 32 processes at once would load the machine under the
## timing-sensitive loopback tests. The initiation flood (JoinFloodTests) runs alone last, for the same reason:
## 5,000 initiations/s into a node of the test process slowed the suite's other joins past their bounds, and the
## suite's load made the flooded node itself answer late (a 12 ms join took 12-25 s). The simulation suite runs
## in release mode.
unit-tests: deps
	$(SWIFT) test --skip HuddleSimulationTests --skip NetworkNamespaceTests --skip MeshProcessTests --skip JoinFloodTests
	$(SWIFT) test --skip-build --filter NetworkNamespaceTests --filter MeshProcessTests
	$(SWIFT) test --skip-build --filter JoinFloodTests

## The same with the slow cases too (HUDDLE_SLOW_TESTS=1: e.g. the 30 s join timeout).
## The unit and loopback suites under ThreadSanitizer, then AddressSanitizer, each in its own build folder
## (.build-tsan, .build-asan). Not in `make test`: each builds everything again and runs the suites several times
## slower (about 10 minutes each on 2 cores).
## HUDDLE_SANITIZER stretches the tests' wall-clock bounds (TestTiming; docs/TESTING.md); the TSan
## and ASan suppressions (false positives only, each explained) are in scripts/{tsan,asan}-suppressions.txt. Leak
## detection is off: it reports process-lifetime singletons (SwiftNIO's blocking pool) of every `huddle` the CLI
## tests start, on their standard error, at exit.
sanitize: deps
	HUDDLE_SANITIZER=thread TSAN_OPTIONS=suppressions=$(CURDIR)/scripts/tsan-suppressions.txt \
		$(SWIFT) test --scratch-path .build-tsan --sanitize=thread --skip HuddleSimulationTests --skip NetworkNamespaceTests
	HUDDLE_SANITIZER=address ASAN_OPTIONS=detect_leaks=0:suppressions=$(CURDIR)/scripts/asan-suppressions.txt \
		$(SWIFT) test --scratch-path .build-asan --sanitize=address --skip HuddleSimulationTests --skip NetworkNamespaceTests

slow-tests: deps
	HUDDLE_SLOW_TESTS=1 $(SWIFT) test --skip HuddleSimulationTests --skip NetworkNamespaceTests
	HUDDLE_SLOW_TESTS=1 $(SWIFT) test --skip-build --filter NetworkNamespaceTests

## Every simulator scenario over the committed seeds (Tests/HuddleSimulationTests/seeds.txt, 200 seeds), in release
## mode. HUDDLE_SEEDS=FIRST-LAST overrides the seed list. Deterministic hashing (Swift seeds Hasher per process) makes a
## seed do the same in the suite as in `huddle-sim`, which sets it itself.
simulation: deps
	SWIFT_DETERMINISTIC_HASHING=1 $(SWIFT) test -c release -Xswiftc -enable-testing --filter HuddleSimulationTests

## The churn scenario under explored schedules over fresh seeds (CHURN_SEEDS, 1,000 by default, beyond the 200
## committed ones): about 2 s of one core per seed, two processes at once. Not in `make test` (over 15 minutes).
CHURN_SEEDS ?= 1001-2000
churn-schedule: deps
	$(SWIFT) build -c release --product huddle-sim
	scripts/churn-schedule.sh .build/release/huddle-sim $(CHURN_SEEDS)

## What a removal costs (issue 36): 8, 32, 128 and 256 members, 20 ms round trip, 2 % loss; the creator removes one,
## then (rotation-leave-N) one leaves instead. Prints when every member knows of it and holds the new admission key (p50/p95/last, ms) and bytes per member.
## ROTATION_SEEDS (1-3 by default; 256 members take minutes per seed).
ROTATION_SEEDS ?= 1-3
rotation-measure: deps
	$(SWIFT) build -c release --product huddle-sim
	for members in 8 32 128 256; do .build/release/huddle-sim --scenario rotation-$$members --seeds $(ROTATION_SEEDS) || exit 1; done
	for members in 8 32 128 256; do .build/release/huddle-sim --scenario rotation-leave-$$members --seeds $(ROTATION_SEEDS) || exit 1; done

## What a removal costs in instructions (issue 36): callgrind counts only the removal phase of rotation-8, -32 and -64
## (seed 1), every member's session machine and endpoint plus the simulated network; about 5 minutes.
rotation-cpu: deps
	$(SWIFT) build -c release --product huddle-sim
	for members in 8 32 64; do \
		SWIFT_DETERMINISTIC_HASHING=1 valgrind --tool=callgrind --callgrind-out-file=.build/rotation-$$members.callgrind \
			--toggle-collect='*idlePhase*' --toggle-collect='*removalPhase*' \
			.build/release/huddle-sim --scenario rotation-$$members --seeds 1 2>/dev/null | grep -E '^(PASS|FAIL)' || exit 1; \
		python3 scripts/rotation-cpu.py .build/rotation-$$members.callgrind $$members || exit 1; \
	done

## Large sessions in the simulator (issue 34): 64, 128 and 256 members on one address join in bursts, churn and
## split, checked for exactly-once delivery, one roster and a full mesh; prints join-to-mesh p50/p99/max and idle bytes
## per member per second. LARGE_SEEDS (1-1 by default). `make test` runs large-64 for one seed.
LARGE_SEEDS ?= 1-1
large-sessions: deps
	$(SWIFT) build -c release --product huddle-sim
	.build/release/huddle-sim --scenario large-64 --seeds $(LARGE_SEEDS)
	.build/release/huddle-sim --scenario large-128 --seeds $(LARGE_SEEDS)
	.build/release/huddle-sim --scenario large-256 --seeds $(LARGE_SEEDS)

## The NAT lab (docs/NAT-LAB.md): `huddle` processes behind emulated NATs (full cone, restricted, port-restricted,
## symmetric, carrier-grade, UDP blocked, hairpin) in network namespaces, each kind paired with each, in sessions of 2
## and 4, with `huddle relay` and coturn on the public side; prints whether each cell connects, how fast, and whether
## it ends direct. Needs root; about 8 minutes. NAT_LAB_ARGS passes options (--cells PATTERN, --sizes 2,4, ...).
NAT_LAB_ARGS ?=
nat-lab: deps
	$(SWIFT) build -c release --product huddle
	python3 scripts/nat_lab.py --huddle .build/release/huddle $(NAT_LAB_ARGS)

## MESH_MEMBERS `huddle` processes on loopback join one session one after another through the host's ticket and
## each hears every other's line, MESH_RUNS times (48 and 20 by default); fails unless every run forms the full mesh.
MESH_MEMBERS ?= 48
MESH_RUNS ?= 20
mesh: deps
	$(SWIFT) build -c release --product huddle
	python3 scripts/mesh.py .build/release/huddle --members $(MESH_MEMBERS) --runs $(MESH_RUNS)

## A soak of SOAK_MINUTES (60 by default) minutes: three `huddle` processes chat continuously, share an attachment
## every minute and restart a member every four; fails on a lost or duplicated line or on memory or descriptor
## growth after warm-up (scripts/soak.py states the bounds).
SOAK_MINUTES ?= 60
soak: deps
	$(SWIFT) build -c release --product huddle
	python3 scripts/soak.py .build/release/huddle --minutes $(SOAK_MINUTES)

## Builds the libFuzzer targets, replays FuzzTesting/FailCases and fuzzes each target for FUZZ_SECONDS (6).
fuzz-smoke: deps
	FuzzTesting/run-smoke.sh $(FUZZ_SECONDS)

## The same for longer: every target for FUZZ_LONG_SECONDS (600 by default), or for FUZZ_SECONDS when it is given
## on the command line (`make fuzz FUZZ_SECONDS=120`).
FUZZ_LONG_SECONDS ?= 600
fuzz: deps
	FuzzTesting/run-smoke.sh $(if $(filter command line,$(origin FUZZ_SECONDS)),$(FUZZ_SECONDS),$(FUZZ_LONG_SECONDS))

## Loopback bulk throughput of the UDP transport with and without GSO/GRO (prints numbers; not a test).
transport-bench: deps
	$(SWIFT) run -c release huddle-transport-bench 256 3

## Chat round trip between two `huddle` processes vs plain UDP, and join time (prints numbers; not a test).
cli-latency: deps
	$(SWIFT) build -c release --product huddle
	python3 scripts/measure-latency.py .build/release/huddle 1000

## The package-benchmark suites (crypto, wire, in-memory core, loopback API, 8-node fan-out), full length.
benchmarks: deps
	cd Benchmarks && $(SWIFT) package benchmark

## Every package-benchmark suite for a moment (HUDDLE_BENCH_SMOKE=1), to check that they build and run.
bench-smoke: deps
	cd Benchmarks && HUDDLE_BENCH_SMOKE=1 $(SWIFT) package benchmark --no-progress

## A 100 MiB attachment between `huddle` processes: times, MB/s, peak memory (prints numbers; not a test).
journal-measure: deps
	$(SWIFT) build -c release --product huddle
	python3 scripts/measure-journal.py .build/release/huddle 100

## Re-checks the committed RFC vectors against pyca/cryptography (needs `pip install cryptography`).
check-vectors:
	python3 Tests/HuddleCryptoTests/Vectors/check_rfc_vectors.py

## Regenerates docs/vectors from the independent Python reference and fails if the committed files differ (the
## Swift side is checked against them by HuddleVectorTests). Skipped, with a message, without Python and PyNaCl.
protocol-vectors:
	@if python3 -c "import nacl" >/dev/null 2>&1; then python3 scripts/vectors/generate.py --check; \
	else echo "protocol-vectors: skipped (needs python3 with PyNaCl: pip install pynacl)"; fi

## Drives a `huddle host` (the release build, else the debug one) through the protocol's happy and error paths
## from the independent Python peer of scripts/vectors, and prints a table of what the node did.
conformance:
	@if python3 -c "import nacl" >/dev/null 2>&1; then \
		huddle=.build/release/huddle; [ -x $$huddle ] || huddle=.build/debug/huddle; \
		python3 scripts/conformance/conformance.py --huddle $$huddle; \
	else echo "conformance: skipped (needs python3 with PyNaCl)"; fi

clean:
	rm -rf .build .build-* FuzzTesting/.build*

## Huddle side by side with ENet, uftp, kcptun, iperf3, aioquic and plain C UDP on loopback, 3 interleaved rounds
## (installs the tools with apt/pip, builds huddle in release mode; writes Benchmarks/results/latest.{md,svg}).
compare: deps
	python3 Benchmarks/compare/run.py

## A few seconds of the same (C ping-pong, ENet, Huddle if built); fails if a measurement that ran failed.
compare-smoke: deps
	python3 Benchmarks/compare/run.py --smoke
