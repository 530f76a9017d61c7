# Spillway — see README.md. `make run` and `make test` are all a new machine needs.
GO       ?= go
BIN      := bin/spillway
PORT     ?= 6380
DATA     ?= ./data
PKGS     := ./...

.PHONY: all build run test test-unit test-integration fuzz-corpus bench bench-full deps vet fmt clean compat compat-ci

all: build

build:
	$(GO) build -o $(BIN) ./cmd/spillway

run: build
	./$(BIN) --port $(PORT) --bind 127.0.0.1 --dir $(DATA)

# deps installs what the tests need: a real redis-server and redis-cli 7.0.
deps:
	@./scripts/ensure-redis.sh

# vet also checks that go.mod lists exactly what the code imports.
vet:
	$(GO) mod tidy -diff
	$(GO) vet $(PKGS)
	$(GO) vet -tags invariants $(PKGS)
	@test -z "$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))" || (echo "gofmt needed:"; gofmt -l .; exit 1)

# test runs every test: unit tests (with the checked-in fuzz corpora),
# then the end-to-end tests against the real binary and a real redis-server;
# then the in-process command tests and the server's with the invariants
# tag (the engine's lock and the hot tier's accounting checked after every
# command), and tiering and the front end under the race detector (less
# the two long single-threaded model tests, which the first run covers and
# which take minutes under -race). The last two add about 30s.
RACE_SKIP := ^Test(ZSets|Collections)AgainstModel$$

test: deps vet build
	$(GO) test -count=1 -timeout 20m $(PKGS)
	$(GO) test -count=1 -tags invariants ./proxy/commands/ ./proxy/server/
	$(GO) test -count=1 -tags invariants -run TestCheckInvariantsFires ./tiering/
	$(GO) test -count=1 -race -skip '$(RACE_SKIP)' ./tiering/... ./proxy/server/... ./proxy/commands/...

# bench measures Spillway against redis-server and twemproxy started on
# loopback and prints Markdown tables (about 10 minutes on 2 cores); the
# report, its figures and a chart go to bench/results/. It asserts nothing
# about time: see scripts/bench.sh. bench-full adds bigger datasets, every
# other section and the micro-benchmarks.
bench: deps build
	@./scripts/ensure-bench-tools.sh
	@GO=$(GO) SPILLWAY_BIN=$(CURDIR)/$(BIN) ./scripts/bench.sh

bench-full: deps build
	@./scripts/ensure-bench-tools.sh
	@GO=$(GO) SPILLWAY_BIN=$(CURDIR)/$(BIN) SPILLWAY_BENCH_FULL=1 ./scripts/bench.sh

# compat runs Redis 7.0.15's own test suite (from Debian's source package,
# cached outside the repository) against redis-server, embedded Spillway
# and upstream-mode Spillway, a fresh server per unit, and writes
# COMPATIBILITY.md. All units of the three targets take about 9 minutes on
# 2 cores (two units at once); a subset:
#   make compat UNITS="unit/type/list unit/multi" TARGETS="embedded"
# COMPAT_TIMEOUT caps each unit; COMPAT_JOBS runs units at once;
# COMPAT_OUT is the report written.
UNITS          ?=
TARGETS        ?= redis embedded upstream
COMPAT_TIMEOUT ?= 5m
COMPAT_JOBS    ?= 2
COMPAT_OUT     ?= COMPATIBILITY.md
COMPAT_LOGS    ?=
COMPAT_FLAGS   ?=

compat: deps build
	@$(GO) build -o bin/spillway-compat ./cmd/spillway-compat
	@suite=$$(./scripts/ensure-compat-suite.sh) && \
	  ./bin/spillway-compat -suite "$$suite" -spillway $(BIN) -units "$(UNITS)" -targets "$(TARGETS)" \
	    -timeout $(COMPAT_TIMEOUT) -jobs $(COMPAT_JOBS) -out "$(COMPAT_OUT)" -logs "$(COMPAT_LOGS)" $(COMPAT_FLAGS)

# compat-ci: five fast units on all three targets (20 to 60 seconds); it
# fails only when the harness is broken (a server that does not start, a
# unit with nothing parsed, redis-server itself failing), never because
# Spillway fails tests. It does not touch COMPATIBILITY.md.
COMPAT_CI_UNITS := unit/type/incr unit/info-command unit/protocol unit/keyspace unit/type/set
compat-ci:
	@$(MAKE) --no-print-directory compat UNITS="$(COMPAT_CI_UNITS)" COMPAT_TIMEOUT=60s COMPAT_JOBS=1 COMPAT_OUT= COMPAT_FLAGS=-check

fmt:
	gofmt -w $$(git ls-files '*.go')

clean:
	rm -rf bin
