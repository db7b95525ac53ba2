// Package awsstack runs xjob's AWS deployment on one machine, without AWS:
// dynalite stands in for DynamoDB and fauxqs for SQS and SNS (Node child
// processes on loopback, installed by `make emulators`), and the six
// Lambda handlers of internal/app/lambdaapp are driven the way their AWS
// triggers drive them:
//
//	EventBridge rate(1 minute) → scan      one invocation per period (the
//	                                       templates' 55 s timeout): one
//	                                       tick planning 150 s ahead, then
//	                                       the shard leases are released
//	EventBridge rate(1 minute) → registry  maintenance
//	SQS event source mappings  → ring, dispatch (the results queue):
//	                                       long-poll, batches of ≤ 10 (results:
//	                                       ≤ 1,000 over a 1 s window), delete
//	                                       what succeeded, leave the
//	                                       BatchItemFailures to come back
//	Lambda Invoke API (Event)  → dispatch  the fast and slow lanes: 202 at
//	                                       once, two retries of a failed
//	                                       invocation, then the dispatch
//	                                       dead-letter queue
//	Lambda function URL        → callback  (every request: the executor
//	                                       routes /api/callback,
//	                                       /api/registry{,Remove}, also
//	                                       under /xxl-job-admin; 404 else)
//	API Gateway HTTP API       → web       (every path; the routes are
//	                                       awsconfig's)
//
// so that an xxl-job executor talks to Deployment.ExecutorURL, and the
// admin client to Deployment.URL, exactly as they talk to `xjob local`.
// A function URL request is metered as its invocation alone (Lambda bills
// no request for the URL), an HTTP API request also as API Gateway's. It exists for the load harness
// (bench --aws) and for manual experiments; it is not a test double — the
// handlers, adapters and SDK clients are the shipped ones, only the AWS
// services are emulated.
//
// Every SDK client of a function goes through a Meter, which counts
// requests per function, service and operation, and the DynamoDB capacity
// they consumed (asked for with ReturnConsumedCapacity=TOTAL; derived from
// the request shape when the emulator reports none). Usage.Cost turns a
// metered interval into dollars per million triggers at list prices.
//
// The meter models AWS as it bills and throttles rather than the
// emulators: each concurrent invocation of a function gets an execution
// environment (an App) of its own, as Lambda scales out; a conditional
// write that loses is billed at the item's size; storage includes
// point-in-time recovery, and the items a retained table gains carry their
// eventual delete unless they carry the TTL attribute (TTL deletes are
// free); each function's log output (plus Lambda's own lines per
// invocation at the templates' system log level) is priced as CloudWatch
// Logs ingestion. Units are counted
// per item and per partition key per second (Meter.Hottest), and a request
// that would push one past DynamoDB's per-partition limits (1,000 WCU/s,
// 3,000 RCU/s) is answered with ProvisionedThroughputExceededException
// inside the SDK's retry loop, so the code's retry and back-off paths run.
// The results queue's mapping gathers a batch over a window
// (Options.ResultsWindow), as an event source mapping with
// MaximumBatchingWindowInSeconds does. A mapping's pollers are billed as
// SQS bills a long poll: one request per poll, which returns with records
// or, empty, only at the end of its wait (fauxqs answers every waiting
// poll when a record arrives; the continuations are not metered).
package awsstack
