.PHONY: run test build bench fuzz faults screenshots

run:
	go run ./cmd/chatd

build:
	CGO_ENABLED=0 go build -o bin/chatd ./cmd/chatd

# The API suite runs every store topology under the race detector: on a busy
# two-core machine it outlasts go test's default 10-minute limit, which is a
# hang detector here, not a performance goal.
# CHATD_FRONTEND_TESTS makes the frontend protocol tests fail, rather than
# skip, when their npm packages are not installed, and the example
# processors' tests when php or node is missing.
test:
	bash scripts/ensure-redis.sh
	bash scripts/ensure-chromium.sh
	bash scripts/ensure-php.sh
	bash scripts/ensure-node-deps.sh
	go vet ./...
	CHATD_FRONTEND_TESTS=1 go test -race -count=1 -timeout 45m ./...

# The load benchmark (real servers on loopback, its own redis-server; under
# 7 minutes, rows 9a–9d included) and the Go micro-benchmarks. docs/performance.md explains the rows.
bench:
	bash scripts/ensure-redis.sh
	bash scripts/ensure-node-deps.sh
	go run ./bench/loadbench
	go test -run '^$$' -bench . -benchmem ./internal/blocks ./internal/elicit ./internal/api ./internal/processor/agent ./internal/processor/remote
	go test -run '^$$' -bench BranchedHistory -benchtime 3000x ./internal/store

# Break chatd on purpose (Redis kill -9, an instance killed, slow clients, a
# flood, a full embedded store) and print what survived; about a minute, all
# on 127.0.0.1. docs/reliability.md records a run.
faults:
	bash scripts/ensure-redis.sh
	go run ./bench/faults

# Fuzz every decoder of untrusted input for FUZZTIME each (the seed corpora
# in testdata/ already run in make test).
FUZZTIME ?= 30s
fuzz:
	go test -run '^$$' -fuzz '^FuzzDecode$$' -fuzztime $(FUZZTIME) ./internal/blocks
	go test -run '^$$' -fuzz '^FuzzParseMatchesStdlib$$' -fuzztime $(FUZZTIME) ./internal/blocks
	go test -run '^$$' -fuzz '^FuzzCheckExact$$' -fuzztime $(FUZZTIME) ./internal/blocks
	go test -run '^$$' -fuzz '^FuzzNewRequest$$' -fuzztime $(FUZZTIME) ./internal/elicit
	go test -run '^$$' -fuzz '^FuzzValidateResult$$' -fuzztime $(FUZZTIME) ./internal/elicit
	go test -run '^$$' -fuzz '^FuzzFormats$$' -fuzztime $(FUZZTIME) ./internal/elicit
	go test -run '^$$' -fuzz '^FuzzDecodeStored$$' -fuzztime $(FUZZTIME) ./internal/elicit
	go test -run '^$$' -fuzz '^FuzzCaptureSSE$$' -fuzztime $(FUZZTIME) ./internal/mcptools
	go test -run '^$$' -fuzz '^FuzzReadEvents$$' -fuzztime $(FUZZTIME) ./internal/mcptools
	go test -run '^$$' -fuzz '^FuzzProgress$$' -fuzztime $(FUZZTIME) ./internal/mcptools
	go test -run '^$$' -fuzz '^FuzzParseTurnRequest$$' -fuzztime $(FUZZTIME) ./internal/api
	go test -run '^$$' -fuzz '^FuzzThreadPatch$$' -fuzztime $(FUZZTIME) ./internal/api
	go test -run '^$$' -fuzz '^FuzzParseFile$$' -fuzztime $(FUZZTIME) ./internal/processor/agent
	go test -run '^$$' -fuzz '^FuzzToolArguments$$' -fuzztime $(FUZZTIME) ./internal/processor/agent
	go test -run '^$$' -fuzz '^FuzzChunks$$' -fuzztime $(FUZZTIME) ./internal/processor/agent
	go test -run '^$$' -fuzz '^FuzzSSEDecoder$$' -fuzztime $(FUZZTIME) ./internal/processor/agent
	go test -run '^$$' -fuzz '^FuzzNDJSON$$' -fuzztime $(FUZZTIME) ./internal/processor/remote
	go test -run '^$$' -fuzz '^FuzzPlainDelta$$' -fuzztime $(FUZZTIME) ./internal/processor/remote
	go test -run '^$$' -fuzz '^FuzzJSONDepth$$' -fuzztime $(FUZZTIME) ./internal/api
	go test -run '^$$' -fuzz '^FuzzReadUpload$$' -fuzztime $(FUZZTIME) ./internal/api
	go test -run '^$$' -fuzz '^FuzzResolve$$' -fuzztime $(FUZZTIME) ./internal/filetype
	go test -run '^$$' -fuzz '^FuzzMessage$$' -fuzztime $(FUZZTIME) ./internal/render
	go test -run '^$$' -fuzz '^FuzzEntityURL$$' -fuzztime $(FUZZTIME) ./internal/render
	go test -run '^$$' -fuzz '^FuzzDecodeRequest$$' -fuzztime $(FUZZTIME) ./internal/protocol/aisdk
	go test -run '^$$' -fuzz '^FuzzDecodeRequest$$' -fuzztime $(FUZZTIME) ./internal/protocol/agui

# Regenerate the README's screenshots of the chat page from the browser test.
screenshots:
	bash scripts/ensure-chromium.sh
	bash scripts/ensure-node-deps.sh
	CHATD_SCREENSHOTS=1 go test -count=1 -run '^(TestDemoConversation|TestDeepChat)$$' ./internal/ui
