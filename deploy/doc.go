// Package deploy holds what runs xjob's cluster mode (`xjob server`) outside
// AWS — the image (the repository's Dockerfile), deploy/compose (three
// nodes, a database and HAProxy on one Docker host) and deploy/kubernetes
// (Deployment, Service, PodDisruptionBudget; kustomize) — and the offline
// tests that keep them in step with the server's interface: its probe
// paths, port, variables and drain command. It has no Go API: the package
// exists so that plain `go test ./...` checks the files without a Docker
// engine or a Kubernetes cluster. compose files are loaded by compose-go,
// the loader `docker compose` itself uses; Kubernetes manifests are decoded
// strictly into the fields this test knows; the Dockerfile's build command
// is run with the Go toolchain. What no test here can check (building the
// image, starting the containers, a real cluster) is listed in
// docs/cluster.md.
//
// The grafana and prometheus folders beside these hold the dashboard and
// the alert rules, checked by internal/metric's tests and promtool.
package deploy
