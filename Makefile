.PHONY: run test build bench fuzz

run:
	go run ./cmd/chatd

build:
	CGO_ENABLED=0 go build -o bin/chatd ./cmd/chatd

test:
	bash scripts/ensure-redis.sh
	go vet ./...
	go test -race -count=1 ./...
