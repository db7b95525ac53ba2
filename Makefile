# xjob — make targets. `make help` lists them.
GO        ?= go
PKGS      := ./...
BIN       := bin

.DEFAULT_GOAL := help

.PHONY: help
help: ## List the targets
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z_-]+:.*## / {printf "  \033[36m%-12s\033[0m %s\n", $$1, $$2}' $(MAKEFILE_LIST)

EMULATORS := test/emulators

.PHONY: emulators
emulators: $(EMULATORS)/node_modules/.package-lock.json ## Install dynalite + fauxqs (DynamoDB/SQS stand-ins) from the lock file

$(EMULATORS)/node_modules/.package-lock.json: $(EMULATORS)/package-lock.json
	npm ci --prefix $(EMULATORS) --no-audit --no-fund

.PHONY: test
test: emulators ## Run every test with the race detector (what CI runs)
	$(GO) vet $(PKGS)
	CI=$${CI:-true} $(GO) test -race -count=1 -parallel 8 -timeout 20m $(PKGS)

.PHONY: lint
lint: ## gofmt and go vet
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)

.PHONY: bench
bench: ## Run the Go benchmarks of the core packages
	$(GO) test -run '^$$' -bench . -benchmem $(PKGS)

.PHONY: build
build: ## Build the xjob binary into bin/
	$(GO) build -o $(BIN)/xjob ./cmd/xjob

.PHONY: run
run: build ## Build and start xjob local with demo jobs (data in .xjob/, git-ignored)
	$(BIN)/xjob local --demo --db .xjob/xjob.db

.PHONY: clean
clean: ## Remove build output
	rm -rf $(BIN)
