# syntax=docker/dockerfile:1
#
# The xjob image: one static binary on distroless, running `xjob server`
# (cluster mode on PostgreSQL or MySQL/MariaDB; see docs/cluster.md).
#
#   docker build -t xjob .                  # or: make docker
#   docker run --rm xjob version
#
# The binary is built with CGO_ENABLED=0, so it needs no libc, and with
# -tags timetzdata, which compiles the IANA time zone database into it:
# jobs' cron time zones resolve even where the image has no zoneinfo. The
# final stage is distroless static (CA certificates, /etc/passwd with the
# nonroot user 65532, no shell, no package manager). The builder runs on
# the build host's platform and cross-compiles, so a multi-platform build
# (docker buildx build --platform linux/amd64,linux/arm64) needs no emulator.

FROM --platform=$BUILDPLATFORM golang:1.26 AS build
WORKDIR /src
# Modules first, in their own layer: a source change does not download them again.
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
ARG TARGETOS TARGETARCH
# VERSION, when set, is what `xjob version` prints (make docker passes
# git describe); unset, the binary reports the module version.
ARG VERSION=""
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 GOOS=$TARGETOS GOARCH=$TARGETARCH \
    go build -trimpath -tags timetzdata \
        -ldflags "-s -w -X github.com/xjobdev/xjob/internal/cli.version=${VERSION}" \
        -o /out/xjob ./cmd/xjob

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/xjob /xjob
USER 65532:65532
# No HEALTHCHECK: the image has no shell or HTTP client to run one. Compose's
# HAProxy and Kubernetes' probes check GET /readyz and /healthz instead.
# The one listener of `xjob server` (XJOB_LISTEN, default :8080): executor
# API, /v1, console, /metrics, /healthz and /readyz.
EXPOSE 8080
ENTRYPOINT ["/xjob"]
CMD ["server"]
