# The two commands of the README: `make demo` and `make test`. Each installs
# what it needs (PostgreSQL, its server dev files, pgvector, the local
# embedding model, Go modules).
GO ?= go
PKGS_RACE := ./consumer/... ./pipeline/...

.PHONY: all deps build demo serve test vet test-race test-rest test-kafka bench clean

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
	MEMSTREAM_REQUIRE_MODEL=1 $(GO) test -timeout 20m $$($(GO) list ./... | grep -v -e /consumer -e /pipeline)

test: deps vet test-race test-rest

# The real-broker suite (Apache Kafka 4.x in KRaft mode, from Maven Central
# jars): three ingester processes, kills, rebalances, rolling restarts.
test-kafka: deps
	@scripts/ci-kafka.sh

clean:
	rm -rf bin
