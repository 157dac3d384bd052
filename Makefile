# The two commands of the README: `make demo` and `make test`. Each installs
# what it needs (PostgreSQL, its server dev files, pgvector, the local
# embedding model, Go modules).
GO ?= go
PKGS_RACE := ./consumer/... ./pipeline/...

.PHONY: all deps build demo serve test vet test-race test-rest test-chaos test-console console console-screenshots test-kafka bench clean

all: build

deps:
	@scripts/install-deps.sh
	@$(GO) mod download

build:
	$(GO) build -o bin/memstream ./cmd/memstream

demo: deps build
	./bin/memstream demo

serve: deps build
	./bin/memstream serve

vet:
	$(GO) vet ./...

# The race detector runs on the concurrent ingest packages; the rest runs
# without it to stay well inside CI's time limit on two cores.
# MEMSTREAM_REQUIRE_MODEL: tests of the local embedding model fail instead of
# skipping when its weights are missing, since deps has just installed them.
test-race:
	MEMSTREAM_REQUIRE_MODEL=1 $(GO) test -race -timeout 15m $(PKGS_RACE)

test-rest:
	MEMSTREAM_REQUIRE_MODEL=1 $(GO) test -timeout 20m $$($(GO) list ./... | grep -v -e /consumer -e /pipeline -e /internal/chaos)

# The bounded chaos test (internal/chaos): broker faults, a PostgreSQL
# restart, a SIGKILL of memstream, poison, a 1 MB event, retried retains.
# It prints its one summary line; on failure, its whole output.
test-chaos:
	@log=$$(mktemp); \
	if $(GO) test -count=1 -timeout 20m -v -run TestChaos ./internal/chaos/ >$$log 2>&1; then \
		grep '^chaos:' $$log; rm -f $$log; \
	else cat $$log; rm -f $$log; exit 1; fi

test: deps vet test-race test-rest test-chaos test-console

# The web console: its bundle (console/dist, embedded with go:embed and
# committed, so go build needs no Node) must be what web/ builds to, and the
# browser suite drives Debian's headless Chromium against a real
# `memstream serve` with the demo data.
test-console: deps build
	@scripts/install-browser.sh
	@scripts/check-console.sh
	MEMSTREAM_BIN=$(CURDIR)/bin/memstream $(GO) test -tags browser -count=1 -timeout 10m ./console/

# Rebuild console/dist from web/ after changing the console's sources.
console:
	@scripts/check-console.sh --write

# Refresh the screenshots in docs/console/ (the browser suite takes them).
console-screenshots: deps build
	@scripts/install-browser.sh
	MEMSTREAM_BIN=$(CURDIR)/bin/memstream MEMSTREAM_SCREENSHOTS=docs/console $(GO) test -tags browser -count=1 -timeout 10m -run TestConsole ./console/

# The real-broker suite (Apache Kafka 4.x in KRaft mode, from Maven Central
# jars): three ingester processes, kills, rebalances, rolling restarts.
test-kafka: deps
	@scripts/ci-kafka.sh

clean:
	rm -rf bin
