# The two commands of the README: `make run` and `make test`.
GO ?= go
# The packages of both modules of the workspace (go.work): the service's
# (./...) and the Go client's with dispatchctl (./client/..., a module of
# its own that ./... does not reach).
PKGS ?= ./... ./client/...
# staticcheck at a pinned version, fetched through the module proxy (not a
# dependency of the module).
STATICCHECK ?= honnef.co/go/tools/cmd/staticcheck@v0.8.2
# kube-score at a pinned version, the same way: the Kubernetes manifests'
# linter. It fails on any CRITICAL; a waiver is a kube-score/ignore
# annotation on the object, with the reason beside it.
KUBESCORE ?= github.com/zegl/kube-score/cmd/kube-score@v1.20.0

.PHONY: run test vet bench build demo

## run: start the service on the embedded store at 127.0.0.1:8080 (DISPATCHER_* variables apply;
## DISPATCHER_ADDR=:8080 listens on every interface)
run:
	DISPATCHER_ADDR="$${DISPATCHER_ADDR:-127.0.0.1:8080}" $(GO) run ./cmd/dispatcher

## demo: the service on :8080 with a demo pool and traffic; open http://localhost:8080/ui/#/pool/demo
demo:
	$(GO) run ./cmd/dispatcher demo

## test: the whole suite of both modules: formatting, vet, and every test with the race detector
test: vet
	$(GO) test -race -count=1 -timeout 30m $(PKGS)
	@# The 2^31-pick exhaustion test skips itself under -race (10x slower): run it without.
	$(GO) test -count=1 -run 'TestWaterfillExhaustsLikeTheSeed' ./balancing/
	@# The image suite: podman builds deploy/Dockerfile and runs it as
	@# deploy/compose.yaml does (root podman and the base images: .ci/run sees
	@# to both). Minutes, once, so behind a build tag rather than in ./... .
	$(GO) test -tags image -count=1 -v -timeout 25m ./deploy/imagetest/

vet:
	@unformatted=$$(gofmt -l .); if [ -n "$$unformatted" ]; then echo "gofmt needed:"; echo "$$unformatted"; exit 1; fi
	$(GO) vet -tags image $(PKGS)
	$(GO) run $(STATICCHECK) -tags image $(PKGS)
	@out=$$($(GO) run $(KUBESCORE) score --output-format ci --kubernetes-version v1.30 \
		--enable-optional-test container-seccomp-profile deploy/k8s/*.yaml) || \
		{ echo "$$out" | grep -v '^\[OK\]'; echo "kube-score: CRITICAL findings in deploy/k8s"; exit 1; }; \
		echo "$$out" | grep -v -e '^\[OK\]' -e '^\[SKIPPED\]' || true; \
		echo "kube-score: deploy/k8s has no CRITICAL ($$(echo "$$out" | grep -c '^\[OK\]') checks OK)"

## bench: the benchmarks (figures are ratios within one run; see docs/)
bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...

## build: a static binary in bin/
build:
	CGO_ENABLED=0 $(GO) build -trimpath -o bin/dispatcher ./cmd/dispatcher

## image: the container image dispatcher:dev (deploy/Dockerfile; needs Docker with BuildKit)
.PHONY: image
image:
	docker build -f deploy/Dockerfile -t dispatcher:dev \
		--build-arg VERSION="$$(git describe --tags --always --dirty 2>/dev/null || echo dev)" \
		--build-arg REVISION="$$(git rev-parse HEAD 2>/dev/null || echo unknown)" .
