// Package lambdaapp is the shared wiring of xjob's five Lambda functions
// (functions/{scan,ring,dispatch,callback,registry}): it reads a function's
// typed Config from the environment through the names in internal/adapter/awsconfig,
// builds the DynamoDB store, the SQS queues, the SNS alarmer and the core
// services once per execution environment (New), and exposes one handler
// per function with the event types Lambda delivers:
//
//	scan      EventBridge scheduled event (rate 1 minute) → one Scanner.Tick, planning ScanAdvance
//	          ahead; a shard is leased only when it has something due, leases released at the end
//	ring      SQS event (ring queue)       → Ring.Fire per second (the records of one second merged),
//	          concurrently; the fast lane dispatched in process (dispatch.LaneSink: one batch per
//	          instant, read and claimed when the bucket arrives, called at the instant; what it
//	          cannot finish sent to the fast queue), the slow lane to its queue
//	dispatch  SQS event (fast/slow lanes)  → Dispatcher.DispatchMany + Dispose
//	          or a direct invocation {"jobId","executorParam","addressList"}
//	callback  API Gateway HTTP API event   → adminapi, /api/callback only
//	registry  API Gateway HTTP API event   → adminapi (registry, admin API)
//	          or EventBridge scheduled event → maintenance
//
// SQS consumers report BatchItemFailures: a record is deleted by the event
// source mapping only when its handler succeeded; a record to retry later is
// also given its delay with ChangeMessageVisibility. Every failure is classed
// retry (reported as a batch item failure), or drop (malformed message:
// logged and deleted, since no retry can fix it).
//
// The mains stay thin: each is one call of Main naming its function and handler.
package lambdaapp
