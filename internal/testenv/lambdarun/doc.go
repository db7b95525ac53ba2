// Package lambdarun runs a Lambda function's real bootstrap binary the way
// the Lambda service runs it on provided.al2023: a pool of execution
// environments (one child process each) that pull invocations from the
// Lambda Runtime API, which this package serves on 127.0.0.1.
//
// It exists so that tests drive the shipped mains (functions/*) — their
// environment configuration, SDK wiring and handler selection — and not
// only the handlers in-process. Only the Lambda service is played here;
// the bootstrap, the aws-lambda-go runtime client in it and the AWS SDK
// are the shipped ones.
//
// The Runtime API (version 2018-06-01) as served, per function:
//
//	GET  /2018-06-01/runtime/invocation/next          blocks until an invocation
//	                                                   is queued; body = payload,
//	                                                   headers Lambda-Runtime-Aws-Request-Id,
//	                                                   -Deadline-Ms, -Invoked-Function-Arn,
//	                                                   -Trace-Id
//	POST /2018-06-01/runtime/invocation/{id}/response  the handler's result → 202
//	POST /2018-06-01/runtime/invocation/{id}/error     the handler's error → 202
//	POST /2018-06-01/runtime/init/error                Init failed → 202; the
//	                                                   environment is discarded
//
// and, at the same address, the Extensions API (version 2020-01-01) as a
// runtime's internal extension uses it (aws-lambda-go's WithEnableSIGTERM
// registers one so that the function gets SIGTERM before it is killed):
//
//	POST /2020-01-01/extension/register    during Init (before the runtime's
//	                                        first /next; 403 after), events
//	                                        none or SHUTDOWN (INVOKE is not
//	                                        emulated: 400) → 200 with the
//	                                        Lambda-Extension-Identifier
//	GET  /2020-01-01/extension/event/next  blocks until the environment shuts
//	                                        down; then SHUTDOWN to an extension
//	                                        registered for it, nothing to the
//	                                        others (403 for an unknown id)
//
// One invocation's life:
//
//	           Invoke
//	             │ no idle environment and fewer than Max: start one
//	             ▼
//	queued ──/next──▶ running ──/response──▶ succeeded
//	                    │ ──────/error────▶ failed (Invoke returns *Error)
//	                    │ deadline passed
//	                    ▼
//	                 timed out: the environment is killed, as Lambda
//	                 kills a timed-out sandbox (its late reply is ignored)
//
// An environment serves one invocation at a time (it asks for the next
// one only after replying), so concurrency is the number of live
// environments, bounded by Function's Max, as reserved concurrency bounds
// it on AWS.
//
// Because of that, the CPU time the environment's process used between
// handing an invocation out (/next) and receiving its reply is the
// invocation's own: InvokeCPU reports it beside the response, and
// InitCPU a cold start's, read from the process's CPU clock on Linux
// (nanoseconds, every thread; elsewhere CPUMeasured is false and both
// read 0). The cost meter stretches it to Lambda's CPU share.
//
// An environment's end:
//
//	timed out, init error, Close with no extension registered
//	        ──▶ SIGKILL (nothing of the process runs after it)
//	Close with an extension registered (shutdown)
//	        ──▶ SHUTDOWN to the extensions registered for it, SIGTERM
//	            ──▶ exited within ShutdownGrace (500 ms): done
//	            ──▶ still running then: SIGKILL
//
// Close shuts all environments down at once and returns when every
// process is reaped; the runtime's pending /next is never answered
// meanwhile, as Lambda answers none during a shutdown.
package lambdarun
