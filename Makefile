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

# moto's server is the SSM Parameter Store the real-bootstrap tests read the
# functions' secrets from (python3 -m moto.server). Installed with pip when
# missing; without it those tests fail (go test -short skips them).
MOTO_VERSION := 5.2.1

.PHONY: moto
moto: ## Install moto's server (SSM Parameter Store stand-in) with pip when python3 cannot import it
	@python3 -c 'import moto.server, flask' 2>/dev/null || \
		python3 -m pip install --quiet "moto[server]==$(MOTO_VERSION)" || \
		python3 -m pip install --quiet --break-system-packages "moto[server]==$(MOTO_VERSION)"

.PHONY: chromium
chromium: ## Install Debian's chromium for the console's browser tests (when missing; needs root)
	@command -v chromium >/dev/null || { \
		if [ "$$(id -u)" = 0 ]; then apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y chromium; \
		else echo "chromium is missing: install it with 'sudo apt-get install -y chromium' (the console's browser tests need it)"; exit 1; fi; }

.PHONY: mariadb
mariadb: ## Install Debian's mariadb-server when missing (the xxl-job import test starts its own mariadbd)
	@command -v mariadbd >/dev/null 2>&1 || test -x /usr/sbin/mariadbd || \
		(apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y mariadb-server)

.PHONY: postgres
postgres: ## Install Debian's postgresql when no initdb is on PATH nor under /usr/lib/postgresql/*/bin (the pgstore tests start their own server)
	@command -v initdb >/dev/null 2>&1 || ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || \
		(apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y postgresql)

.PHONY: haproxy
haproxy: ## Install Debian's haproxy when missing (deploy's tests check and run deploy/compose/haproxy.cfg)
	@command -v haproxy >/dev/null 2>&1 || test -x /usr/sbin/haproxy || \
		(apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y haproxy)

.PHONY: prometheus
prometheus: ## Install Debian's prometheus package (for promtool) when missing
	@command -v promtool >/dev/null 2>&1 || \
		(apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y prometheus)

# Tests that need the emulators, Chromium, MariaDB, PostgreSQL, promtool or haproxy fail when it is
# missing (one line names the make target that installs it); -short skips them.
.PHONY: test
test: emulators moto chromium mariadb postgres prometheus haproxy ## Run every test with the race detector (what CI runs)
	$(GO) vet $(PKGS)
	promtool check rules deploy/prometheus/alerts.yml
	$(GO) test -race -count=1 -parallel 8 -timeout 20m $(PKGS)

.PHONY: test-short
test-short: ## Run the tests that need nothing outside Go (go test -short: no emulators, Chromium or MariaDB)
	$(GO) test -short -count=1 $(PKGS)

# Fuzz targets: their seed corpora (f.Add, testdata/fuzz) run in `make test`;
# this runs each target for FUZZTIME on its own (go test -fuzz takes one at a time).
# TestMakeFuzzListsEveryTarget (suite_test.go) fails when this list and the
# `func Fuzz…` declarations differ.
FUZZTIME ?= 20s
FUZZ_TARGETS := .:FuzzJobJSON .:FuzzAddress ./internal/fire:FuzzRingBucket ./pkg/schedule:FuzzCron ./internal/strictjson:FuzzCheck \
	./internal/web/adminapi:FuzzExecutorRoutes ./internal/web/guard:FuzzJSONText ./internal/web/auth:FuzzSessionDecode ./internal/web/auth:FuzzParseHash ./internal/egress:FuzzLegacyIPv4 ./internal/web/adminapi:FuzzCallbackBatch ./pkg/executor:FuzzTriggerParam \
	.:FuzzDeclaration ./internal/cli:FuzzParseManifest ./internal/xxlimport:FuzzMap ./internal/xxlimport:FuzzTriggerType ./pkg/schedule:FuzzParseOnce ./pkg/schedule:FuzzParseFixDelay \
	./deploy:FuzzDockerfile ./internal/web/clientip:FuzzXForwardedFor ./pkg/protocol:FuzzDecodeCallbacks ./internal/adapter/dynamostore:FuzzOccurrenceFireTime ./internal/adapter/dynamostore:FuzzPageBody \
	./internal/adapter/mysqlstore:FuzzParseURL ./internal/target:FuzzParse ./internal/target:FuzzParseAWS \
	./internal/adapter/execclient:FuzzTriggerParamJSON ./internal/web/executorapi:FuzzPlainCallbacks ./internal/adapter/execclient:FuzzReadReply ./internal/adapter/execclient:FuzzQuickHead ./internal/app/local:FuzzParseMemoryLimit \
	./pkg/protocol:FuzzPlainCallbacksMatchJSON ./bench/cmd/xjobcost:FuzzCPUFile ./internal/testenv/awsstack:FuzzParseTemplateMemory ./internal/testenv/storebench:FuzzWALFramePages

.PHONY: fuzz
fuzz: ## Run every fuzz target for FUZZTIME (default 20s) each
	@for t in $(FUZZ_TARGETS); do \
		pkg=$${t%%:*}; name=$${t##*:}; echo "== $$pkg $$name"; \
		$(GO) test -run '^$$' -fuzz "^$$name\$$" -fuzztime $(FUZZTIME) $$pkg || exit 1; \
	done

.PHONY: lint
lint: ## gofmt and go vet
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)

# Infra linters are optional tools: each runs where it is installed and
# says so where it is not. Never part of make test (go test ./infra is the
# offline cross-check that always runs).
.PHONY: lint-infra
lint-infra: ## cfn-lint, the SAM transform, terraform fmt -check / validate and tflint, each only where installed
	@status=0; skipped=""; \
	if command -v cfn-lint >/dev/null 2>&1; then \
		echo "cfn-lint infra/sam/template.yaml"; cfn-lint infra/sam/template.yaml || status=1; \
	else skipped="$$skipped cfn-lint"; fi; \
	if python3 -c 'import samtranslator' >/dev/null 2>&1; then \
		python3 infra/sam/transform.py infra/sam/template.yaml || status=1; \
	else skipped="$$skipped sam-transform(pip-install-aws-sam-translator)"; fi; \
	if command -v terraform >/dev/null 2>&1; then \
		echo "terraform fmt -check -recursive infra/terraform"; terraform fmt -check -diff -recursive infra/terraform || status=1; \
		if terraform -chdir=infra/terraform init -backend=false -input=false >/dev/null 2>&1; then \
			echo "terraform validate"; terraform -chdir=infra/terraform validate || status=1; \
		else skipped="$$skipped terraform-validate(init-could-not-fetch-the-aws-provider)"; fi; \
	else skipped="$$skipped terraform-fmt terraform-validate"; fi; \
	if command -v tflint >/dev/null 2>&1; then \
		echo "tflint infra/terraform"; tflint --chdir=infra/terraform || status=1; \
	else skipped="$$skipped tflint"; fi; \
	if [ -n "$$skipped" ]; then echo "lint-infra: SKIPPED (not installed or not usable here):$$skipped"; fi; \
	exit $$status

.PHONY: lint-deploy
lint-deploy: ## kubectl kustomize deploy/kubernetes, docker compose config and haproxy -c, each only where installed
	@status=0; skipped=""; \
	if command -v kubectl >/dev/null 2>&1; then \
		echo "kubectl kustomize deploy/kubernetes"; kubectl kustomize deploy/kubernetes >/dev/null || status=1; \
	else skipped="$$skipped kubectl"; fi; \
	if docker compose version >/dev/null 2>&1; then \
		for f in compose.yaml compose.mariadb.yaml; do \
			echo "docker compose -f deploy/compose/$$f config"; \
			docker compose --env-file deploy/compose/.env.example -f deploy/compose/$$f config -q || status=1; \
		done; \
	else skipped="$$skipped docker-compose"; fi; \
	if command -v haproxy >/dev/null 2>&1; then \
		echo "haproxy -c -f deploy/compose/haproxy.cfg"; haproxy -q -c -f deploy/compose/haproxy.cfg || status=1; \
	else skipped="$$skipped haproxy"; fi; \
	if [ -n "$$skipped" ]; then echo "lint-deploy: SKIPPED (not installed):$$skipped"; fi; \
	exit $$status

# The image of `xjob server` (Dockerfile at the root). Needs a Docker engine,
# which the test machines do not have: go test ./deploy checks the
# Dockerfile and runs its build command without one (docs/cluster.md says
# what that leaves unchecked).
.PHONY: docker
docker: ## Build the xjob image (docker build -t xjob .; needs a Docker engine)
	docker build --build-arg VERSION=$$(git describe --tags --always --dirty 2>/dev/null || echo dev) -t xjob .

.PHONY: bench
bench: ## Load and fault harness against xjob local, then bench-cluster (~30 min; BENCH_FLAGS='--quick --baseline-rev REV' etc.; a baseline by default, see bench/README.md)
	$(GO) run ./bench/cmd/xjobbench $(BENCH_FLAGS)
	$(MAKE) bench-cluster

# The cluster bench takes --quick from BENCH_FLAGS; its other flags go in
# CLUSTER_FLAGS.
CLUSTER_FLAGS ?= $(filter --quick,$(BENCH_FLAGS))

.PHONY: bench-cluster
bench-cluster: postgres mariadb ## Three xjob server nodes on private PostgreSQL and MariaDB servers: steady, scaling, failover, DB and rolling restarts (~20 min; CLUSTER_FLAGS='--quick', see bench/README.md)
	$(GO) run ./bench/cmd/xjobcluster $(CLUSTER_FLAGS)

.PHONY: cost
cost: emulators ## Price W1-W4 and W7 (HTTP jobs) per million triggers, W5 and an idle deployment per month and W6's DynamoDB hot spots on the emulated AWS stack (~17 min; COST_FLAGS=-only W7 for one)
	$(GO) run ./bench/cmd/xjobcost $(COST_FLAGS)

.PHONY: bench-go
bench-go: ## Run the Go micro-benchmarks of the core packages
	$(GO) test -run '^$$' -bench . -benchmem $(PKGS)

# The golden files' generators are committed Java programs run on Debian's
# JDK 17 (and, for the cron cases, Debian's Quartz 2.3.2); the files they
# write are committed, and the tests replay them offline.
.PHONY: quartz-golden
quartz-golden: ## Regenerate pkg/schedule/testdata/quartz_golden*.json from the real Quartz (Debian libquartz2-java, JDK 17)
	@command -v javac >/dev/null || { apt-get update && apt-get install -y openjdk-17-jdk-headless; }
	@test -f /usr/share/java/quartz2.jar || { apt-get update && apt-get install -y libquartz2-java; }
	@tmp=$$(mktemp -d) && javac -d $$tmp -cp /usr/share/java/quartz2.jar pkg/schedule/testdata/quartzgen/QuartzGolden.java && \
	  for f in quartz_golden quartz_golden_nw; do \
	    java -cp /usr/share/java/quartz2.jar:$$tmp QuartzGolden pkg/schedule/testdata/$$f.tsv > pkg/schedule/testdata/$$f.json || exit 1; \
	  done; rm -rf $$tmp

.PHONY: hash-golden
hash-golden: ## Regenerate internal/scheduler/route/testdata/hash_golden.json with xxl-job's CONSISTENT_HASH in Java (JDK 17)
	@command -v javac >/dev/null || { apt-get update && apt-get install -y openjdk-17-jdk-headless; }
	@tmp=$$(mktemp -d) && javac -encoding UTF-8 -d $$tmp internal/scheduler/route/testdata/hashgen/HashGolden.java && \
	  java -cp $$tmp HashGolden > internal/scheduler/route/testdata/hash_golden.json && rm -rf $$tmp

.PHONY: build
build: build-cli build-lambda ## Build bin/xjob and the Lambda zips in dist/

.PHONY: build-cli
build-cli: ## Build the xjob binary into bin/
	$(GO) build -o $(BIN)/xjob ./cmd/xjob

# Lambda functions: one bootstrap per function for provided.al2023 on arm64,
# zipped to dist/<name>.zip (by a tiny Go tool, so zip(1) is not needed).
FUNCTIONS := scan ring dispatch callback registry web
DIST      := dist

.PHONY: build-lambda
build-lambda: ## Build dist/<function>.zip for each Lambda function (arm64, provided.al2023)
	@mkdir -p $(DIST)
	@for f in $(FUNCTIONS); do \
		GOOS=linux GOARCH=arm64 CGO_ENABLED=0 $(GO) build -trimpath -tags lambda.norpc -ldflags "-s -w" \
			-o $(DIST)/$$f/bootstrap ./functions/$$f || exit 1; \
		$(GO) run ./internal/tools/zip $(DIST)/$$f.zip $(DIST)/$$f/bootstrap || exit 1; \
		printf "  %-9s bootstrap %6d KiB   zip %6d KiB\n" $$f $$(( $$(wc -c < $(DIST)/$$f/bootstrap) / 1024 )) $$(( $$(wc -c < $(DIST)/$$f.zip) / 1024 )); \
	done

.PHONY: run
run: build-cli ## Build and start xjob local with demo jobs served by the examples/httpexecutor handlers (data in .xjob/, git-ignored)
	$(BIN)/xjob local --demo --db .xjob/xjob.db

.PHONY: clean
clean: ## Remove build output
	rm -rf $(BIN) $(DIST)

# Deploying to AWS (needs credentials; see docs/aws.md). The tokens live in SSM
# Parameter Store (SecureString) under SECRETS; make secrets puts them there from
# XJOB_ACCESS_TOKEN (executors) and XJOB_ADMIN_TOKEN (/v1 API, >= 16 chars), with
# a random console session key. The stacks get the parameters' names only.
STACK   ?= xjob
SHARDS  ?= 4
SECRETS ?= /$(STACK)
# RESERVED=true reserves concurrency (24 in all; the account needs 124 available).
RESERVED ?= false
# RING_MEMORY is the ring function's memory in MB, 128-3008 (docs/aws.md#ring-memory).
RING_MEMORY ?= 256
# LOG_PAGES is the trigger log pages a fire second has, 1, 2, 4, 8 or 16 and a multiple
# of SHARDS when SHARDS divides 16 (docs/aws.md#sparse-deployments); never change it
# after the first job.
LOG_PAGES ?= 16

.PHONY: secrets
secrets: ## Put the tokens (XJOB_ACCESS_TOKEN, XJOB_ADMIN_TOKEN) and a session key into SSM SecureString parameters under SECRETS
	@test -n "$$XJOB_ACCESS_TOKEN" && test -n "$$XJOB_ADMIN_TOKEN" || { echo "set XJOB_ACCESS_TOKEN and XJOB_ADMIN_TOKEN"; exit 1; }
	@test $${#XJOB_ADMIN_TOKEN} -ge 16 || { echo "XJOB_ADMIN_TOKEN must be at least 16 characters"; exit 1; }
	aws ssm put-parameter --overwrite --type SecureString --name $(SECRETS)/access-token --value "$$XJOB_ACCESS_TOKEN" >/dev/null
	aws ssm put-parameter --overwrite --type SecureString --name $(SECRETS)/admin-token --value "$$XJOB_ADMIN_TOKEN" >/dev/null
	@aws ssm get-parameter --name $(SECRETS)/session-key >/dev/null 2>&1 || \
		aws ssm put-parameter --type SecureString --name $(SECRETS)/session-key --value "$$(head -c 32 /dev/urandom | base64)" >/dev/null

.PHONY: deploy-sam
deploy-sam: build-lambda ## Deploy infra/sam/template.yaml with `sam deploy` (STACK, SHARDS, SECRETS, RESERVED, RING_MEMORY, LOG_PAGES; run make secrets first)
	infra/check-concurrency.sh $(RESERVED) $(STACK)
	sam deploy --template-file infra/sam/template.yaml --stack-name $(STACK) \
		--resolve-s3 --capabilities CAPABILITY_IAM CAPABILITY_AUTO_EXPAND \
		--no-fail-on-empty-changeset \
		--parameter-overrides TablePrefix=$(STACK) Shards=$(SHARDS) \
			AccessTokenParameter=$(SECRETS)/access-token AdminTokenParameter=$(SECRETS)/admin-token \
			SessionKeyParameter=$(SECRETS)/session-key ReservedConcurrency=$(RESERVED) \
			RingMemorySize=$(RING_MEMORY) LogPages=$(LOG_PAGES)

.PHONY: deploy-tf
deploy-tf: build-lambda ## Deploy infra/terraform with `terraform apply` (STACK, SHARDS, SECRETS, RESERVED, RING_MEMORY, LOG_PAGES; run make secrets first)
	infra/check-concurrency.sh $(RESERVED) $(STACK)
	terraform -chdir=infra/terraform init -input=false
	terraform -chdir=infra/terraform apply -input=false \
		-var name=$(STACK) -var table_prefix=$(STACK) -var shards=$(SHARDS) \
		-var access_token_parameter=$(SECRETS)/access-token -var admin_token_parameter=$(SECRETS)/admin-token \
		-var session_key_parameter=$(SECRETS)/session-key -var reserved_concurrency=$(RESERVED) \
		-var ring_memory_size=$(RING_MEMORY) -var log_pages=$(LOG_PAGES)
