// Package wiring is what every xjob Lambda function shares, and nothing
// more: its typed Config read from the environment through the names in
// internal/adapter/awsconfig, the AWS SDK clients, the DynamoDB store,
// the SQS queues, the alarmer and the run-report counters (Base), the
// adapter from API Gateway HTTP API events to an http.Handler, and Main,
// the body of every function's main.
//
// Each function's own services are built by its package
// (internal/app/lambdaapp/{scanfn,ringfn,dispatchfn,callbackfn,registryfn,webfn}),
// so that a function's binary links only what it runs: the scan links no
// dispatcher, and no function but web links the console, password
// hashing or HTML templates (deps_test.go in internal/app/lambdaapp
// checks it per function).
package wiring
