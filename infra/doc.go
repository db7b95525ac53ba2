// Package infra holds xjob's infrastructure as code — infra/sam/template.yaml
// (AWS SAM) and infra/terraform (HCL) — and the offline test that keeps both
// in step with the code. It has no Go API: the package exists so that plain
// `go test ./...` parses the two descriptions (no AWS account, no sam or
// terraform binary) and compares them with internal/adapter/awsconfig (function
// names, environment, IAM actions, consumed queues) and internal/adapter/dynamostore
// (table keys, indexes, attribute types, TTL attribute). Drift between code
// and templates then fails the build instead of a deployment.
package infra
