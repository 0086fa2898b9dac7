.PHONY: run test build bench fuzz

run:
	go run ./cmd/chatd

build:
	CGO_ENABLED=0 go build -o bin/chatd ./cmd/chatd

test:
	bash scripts/ensure-redis.sh
	go vet ./...
	go test -race -count=1 ./...

# The load benchmark (real servers on loopback, its own redis-server; under
# 5 minutes) and the Go micro-benchmarks. docs/performance.md explains the rows.
bench:
	bash scripts/ensure-redis.sh
	go run ./bench/loadbench
	go test -run '^$$' -bench . -benchmem ./internal/blocks ./internal/elicit ./internal/api
