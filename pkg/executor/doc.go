// Package executor is the xjob executor SDK: write job handlers in Go and
// serve them to any scheduling center speaking the xxl-job 2.x executor
// protocol — xjob itself, or an original xxl-job 2.3/2.4/3.0–3.2 admin.
//
// A handler is a HandlerFunc registered under the JobHandler name set on
// the job in the admin (the analogue of @XxlJob(value, init, destroy)):
//
//	e, _ := executor.New(executor.Config{
//		AdminAddresses: []string{"http://127.0.0.1:8080/xxl-job-admin"},
//		AccessToken:    os.Getenv("XJOB_ACCESS_TOKEN"), // the admin's token; required
//		AppName:        "xxl-job-executor-sample",
//	})
//	e.Register("demoJobHandler", func(ctx context.Context, job *executor.Job) error {
//		job.Logf("param=%s shard=%d/%d", job.Param, job.ShardIndex, job.ShardTotal)
//		return nil // 200; an error is 500; a timeout is 502
//	})
//	err := e.ListenAndServe(ctx, 30*time.Second)
//
// # Protocol
//
// The HTTP side (ServeHTTP, Serve) answers POST /run, /beat, /idleBeat,
// /kill and /log with exact-path routing, the XXL-JOB-ACCESS-TOKEN check,
// and ReturnT bodies byte-for-byte like xxl-job's EmbedServer (a plain
// success is {"code":200}). xxl-job 3.5 admins are answered too: /trigger
// is /run, /log reads logDateTime as well as logDateTim, and the /log reply
// carries its payload as both content (≤ 3.2) and data (3.3+). The executor
// calls the admin's /api/callback, /api/registry and /api/registryRemove
// the 2.3 – 3.4 way (a 3.5 admin, which wants XXL-JOB-APPNAME and a
// callbackList body, is not supported). Wire types are in protocol.
//
// # Job workers
//
// Each job id gets one worker (xxl-job's JobThread) with a FIFO queue, so
// one job runs serially on one executor while different jobs run in
// parallel. /run answers 200 as soon as the trigger is queued; the result
// follows by callback.
//
//	/run (first trigger of a job id) starts a worker
//	      │
//	      ▼        /run: enqueue
//	    idle ─────────────────────► running ───┐ handler returns (200/500) or
//	      ▲                                    │ times out (502): callback, then
//	      └──────── queue empty ◄──────────────┘ the next queued trigger runs
//	      │
//	      └─ no trigger for IdleTimeout (90 s) → reaped (destroy hook runs)
//
//	/kill, COVER_EARLY, handler change, shutdown → stopped:
//	  running trigger → callback 500 "<reason> [job running, killed]"
//	  queued triggers → callback 500 "<reason> [job not executed, in the job queue, killed.]"
//
// A trigger arriving while the job's worker is running or has queued
// triggers follows its block strategy (decideBlock): SERIAL_EXECUTION (also
// unknown values) queues it; DISCARD_LATER refuses it with 500
// "block strategy effect：Discard Later"; COVER_EARLY stops the old worker
// and starts a new one for it. A logId already queued is refused with
// "repeate trigger job, logId:N". GLUE job types are refused: this
// executor runs only BEAN handlers.
//
// Kill and timeout cancel the handler's context; the executor reports the
// result at once and does not wait for a handler that ignores ctx (like
// xxl-job, which interrupts but cannot stop a Java thread).
//
// # Logs
//
// Job.Logf writes the per-run log {LogDir}/{yyyy-MM-dd}/{logId}.log that
// the admin pages through /log (1-based lines, every line from fromLineNum
// on, isEnd only when the file is missing). Date folders older than
// LogRetentionDays are deleted daily.
//
// # Callbacks
//
// Results queue up and one sender drains everything queued into a single
// /api/callback request, trying each admin in order until one answers 200.
// If none does, the batch is written to SpoolDir as JSON and re-sent every
// CallbackRetryInterval; a file is deleted only after an admin accepted it
// (at-least-once; the admin ignores a repeated result). Shutdown flushes
// the queue. With an AppName the executor registers every BeatInterval
// (30 s) and deregisters on shutdown.
//
// Package lambdaexec serves the same handlers from an AWS Lambda function
// URL; see its documentation for what the protocol means there.
package executor
