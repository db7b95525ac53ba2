// Package lambdaexec serves an executor.Executor's handlers from an AWS
// Lambda function URL (events.LambdaFunctionURLRequest), so the same
// handler code runs on ECS/EC2 (executor.ListenAndServe) or on Lambda.
//
// It lives apart from package executor so that the core SDK does not
// import aws-lambda-go.
//
//	e, _ := executor.New(executor.Config{AdminAddresses: ..., AccessToken: ...})
//	e.Register("demoJobHandler", demo)
//	lambda.Start(lambdaexec.StreamingHandler(e)) // or lambdaexec.Handler(e), see below
//
// Register the function URL (with a trailing "/") as the address of an
// executor group with a manual address list, in xjob or in an xxl-job
// admin. A Lambda function cannot heartbeat between invocations, so do not
// set AppName-based automatic registration for it.
//
// # Two handlers: streaming (recommended) and buffered
//
// Every /run executes the trigger inside its own invocation, because an
// execution environment is frozen as soon as its invocation ends. The
// admin, however, waits only briefly for the /run reply: xjob's dispatcher
// (package execclient) 3 s to connect plus 3 s to read, an xxl-job 2.x
// admin 3 s per read. The two handlers differ in when that reply leaves.
//
// StreamingHandler, for a function URL with InvokeMode RESPONSE_STREAM:
//
//	client ── POST /run ──▶ invocation starts
//	                         check method, token, body, handler
//	client ◀── {"code":200} ─ accepted (refusals get their 500 reply and end here)
//	(dispatcher stops reading,  run the job (≤ executorTimeout and
//	 records the trigger)        ≤ remaining time − InlineReserve)
//	admin  ◀── /api/callback ── result (spooled to /tmp if no admin accepts)
//	                         end of stream ─▶ invocation ends
//
// The reply is streamed as soon as the trigger is accepted, as xxl-job's
// executor replies once the trigger is queued; the invocation keeps
// running the job and only ends the response stream after the callback
// was sent. Lambda does not stop a streaming invocation when the client
// disconnects, so the dispatcher may close the connection after the reply.
// xjob's dispatcher reads the reply's JSON value and returns, so jobs of
// any length up to the function timeout are recorded correctly.
// Configure:
//
//   - the function URL's invoke mode: InvokeMode: RESPONSE_STREAM
//     (AWS::Lambda::Url / aws_lambda_function_url invoke_mode);
//   - the runtime: provided.al2023 with a bootstrap built with
//     -tags lambda.norpc (aws-lambda-go streams only through the runtime
//     API, not in the old go1.x RPC mode);
//   - the function timeout: at least the longest executorTimeout of the
//     jobs it runs plus Config.InlineReserve (default 2 s, the time kept to
//     send the callback; raise it to about AdminTimeout × the number of
//     admin addresses if the first admin may be down). A job without
//     executorTimeout is stopped at the function timeout less the reserve
//     and reported as 502 "job execute timeout ".
//
// Handler, for a function URL in the default BUFFERED mode, for those who
// cannot use streaming: the reply leaves only when the invocation returns,
// i.e. after the job and its callback finished. A run that outlasts the
// admin's read timeout is recorded as a failed trigger — and retried if
// the job has fail retries left, running it twice — while the invocation
// keeps running; its callback later adds the run's result to that failed
// trigger's log. With Handler only jobs that finish well within 3 s are
// safe; the function timeout rule above applies as well.
//
// Against an xxl-job admin neither handler lifts the 3 s limit: its client
// reads the reply to the end of the body with a 3 s read timeout, so it
// waits for the end of the stream too. Run longer jobs for an xxl-job
// admin on an ECS/EC2 executor.
//
// # What each endpoint means on Lambda
//
// Every request is one invocation, and concurrent invocations run in
// separate execution environments that share nothing. Hence:
//
//   - /run executes the trigger inside the invocation, bounded by the job's
//     executorTimeout and by the invocation's remaining time less
//     Config.InlineReserve, whichever is earlier; hitting either reports
//     502 "job execute timeout ". The callback is sent to the admin before
//     the invocation ends, so a result is never left behind in a frozen
//     environment. The outcome travels by callback as usual. If no admin
//     accepts the callback it is spooled to /tmp and re-sent after the next
//     successful callback from the same environment — best effort only,
//     because Lambda may discard the environment at any time. The function
//     is busy (one unit of concurrency) for the whole run.
//   - /beat answers 200 whenever the function can be invoked, which is
//     what FAILOVER routing needs.
//   - /idleBeat always answers 200: a new invocation gets an idle
//     environment, so an environment is never "busy" from the caller's
//     point of view (BUSYOVER routing degenerates to FIRST).
//   - /kill answers 200 "job thread already killed.": the invocation that
//     runs the job cannot be reached from another invocation. Use the job's
//     timeout to bound runs instead.
//   - /log reads the per-run log only if the request happens to reach the
//     environment that ran the job, and normally answers
//     "readLog fail, logFile not exists" (isEnd true). Set
//     Config.JobLogMirror = os.Stdout to have every job log line in
//     CloudWatch Logs.
//
// # Block strategies
//
// Block strategies are per executor process in xxl-job. On Lambda each
// trigger may run in its own environment, so triggers of one job can run
// concurrently whatever the strategy: SERIAL_EXECUTION does not serialise,
// DISCARD_LATER does not discard and COVER_EARLY does not kill. To keep one
// job from overlapping, set the function's reserved concurrency to 1
// (Lambda then throttles the overlapping /run, which the admin records as a
// failed trigger — the Lambda form of DISCARD_LATER) or keep the job on an
// ECS executor.
package lambdaexec
