// Package lambdaapp builds any of xjob's six Lambda functions by name, for
// the emulated deployment (internal/testenv/awsstack) and the end-to-end
// tests. The functions' mains do not import it: each links only its own
// package, so a binary holds only what its function runs:
//
//	scan      scanfn      EventBridge scheduled event (rate 1 minute) → one Scanner.Tick, planning ScanAdvance
//	                      ahead; a shard is leased only when it has something due, leases released at the end
//	ring      ringfn      SQS event (ring queue) → Ring.Fire per second (the records of one second merged),
//	                      concurrently; the fast lane dispatched in process (dispatch.LaneSink), the slow lane
//	                      to its queue
//	dispatch  dispatchfn  SQS event (fast/slow lanes) → Dispatcher.DispatchMany + Dispose,
//	                      or a direct invocation {"jobId","executorParam","addressList"}
//	callback  callbackfn  function URL event (the executors' admin address) → POST /api/callback,
//	                      /api/registry{,Remove} (executorapi); /api/xjob/declare forwarded to web
//	registry  registryfn  EventBridge scheduled event (rate 1 minute) → maintenance
//	web       webfn       API Gateway HTTP API event → every route: console, /v1, /metrics,
//	                      /healthz, /api/xjob/declare; / redirects to /console/
//
// Executors reach one function at their one admin address, a Lambda
// function URL, which costs only the invocation (an HTTP API request per
// result would cost more than the rest of a trigger); people and tools
// reach web through the HTTP API, for its route throttling and custom
// domain. The executor-facing function (callback) and the human-facing
// one (web) have their own reserved concurrency, so a flood of sign-ins
// or admin calls cannot delay a heartbeat or a result. Package wiring
// holds what they share: configuration, AWS clients, store, queues,
// alarmer, the HTTP API and function URL adapters and Main.
//
// SQS consumers report BatchItemFailures: a record is deleted by the event
// source mapping only when its handler succeeded; a record to retry later is
// also given its delay with ChangeMessageVisibility. Every failure is classed
// retry (reported as a batch item failure), or drop (malformed message:
// logged and deleted, since no retry can fix it).
package lambdaapp
