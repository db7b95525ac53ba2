// Package lambdaexec serves an executor.Executor's handlers from an AWS
// Lambda function URL (events.LambdaFunctionURLRequest), so the same
// handler code runs on ECS/EC2 (executor.ListenAndServe) or on Lambda.
//
// It lives apart from package executor so that the core SDK does not
// import aws-lambda-go.
//
//	e, _ := executor.New(executor.Config{AdminAddresses: ..., AccessToken: ...})
//	e.Register("demoJobHandler", demo)
//	lambda.Start(lambdaexec.Handler(e))
//
// Register the function URL (with a trailing "/") as the address of an
// executor group with a manual address list, in xjob or in an xxl-job
// admin. A Lambda function cannot heartbeat between invocations, so do not
// set AppName-based automatic registration for it.
//
// # What each endpoint means on Lambda
//
// Every request is one invocation, and concurrent invocations run in
// separate execution environments that share nothing. Hence:
//
//   - /run executes the trigger inside the invocation, bounded by the job's
//     executorTimeout and by the invocation's remaining time less
//     Config.InlineReserve (default 2 s), whichever is earlier; hitting
//     either reports 502 "job execute timeout ". The callback is sent to
//     the admin before the reply, so a result is never left behind in a
//     frozen environment. The reply is {"code":200} (the trigger was
//     accepted and has been run); the outcome travels by callback as
//     usual. If no admin accepts the callback it is spooled to /tmp and
//     re-sent after the next successful callback from the same
//     environment — best effort only, because Lambda may discard the
//     environment at any time.
//     Caution: the admin waits for the /run reply, and neither admin waits
//     long: an xxl-job 2.x admin gives up after a 3 s read timeout, and
//     xjob's dispatcher (package execclient, default 3 s connect + 3 s
//     read) likewise. A run that outlasts it is recorded as a failed
//     trigger — and retried if the job has fail retries left — while the
//     invocation keeps running; its callback later adds the run's result
//     to that failed trigger's log. So only jobs that finish well within
//     3 s are safe on Lambda today; run longer jobs on an ECS/EC2 executor.
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
