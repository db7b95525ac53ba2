// Package adminapi is xjob's one HTTP surface (users' guide:
// docs/admin-api.md): the xxl-job admin API that unmodified xxl-job 2.4
// executors call, the xjob admin JSON API for people and tools, and a
// health check — one http.Handler, so that an executor configured with a
// single admin address reaches everything it needs.
//
// Routes:
//
//	xxl-job executor API (XXL-JOB-ACCESS-TOKEN; HTTP 200 with a ReturnT body,
//	{"code":200} or {"code":500,"msg":"…"}), also under /xxl-job-admin:
//	  POST /api/registry          RegistryParam → registry.Register
//	  POST /api/registryRemove    RegistryParam → registry.Remove
//	  POST /api/callback          [HandleCallbackParam…] → callback.Callback
//	                              (also 3.5's {"callbackList":[…]} and 2.2's
//	                              executeResult items: protocol.DecodeCallbacks)
//
//	xjob's executor extension (same token; HTTP statuses, not xxl-job's, since
//	only the Go SDK calls it and an xxl-job admin answers it 404):
//	  POST /api/xjob/declare      xjob.DeclareRequest → admin.DeclareJobs
//
//	health (no auth):
//	  GET  /healthz                           {"status":"ok"}
//
//	xjob admin API (Authorization: Bearer <admin token>; JSON errors
//	{"error":"…","problems":[{"field":"…","message":"…"}]}):
//	  GET  /v1/metrics                        xjob.MetricsSnapshot
//	  POST /v1/jobs                           201 job
//	  GET  /v1/jobs?group=&status=&desc=&handler=&author=&cursor=&limit=
//	  GET|PUT|DELETE /v1/jobs/{id}            200 job | 200 job | 204
//	  POST /v1/jobs/{id}/start|stop           200 job
//	  POST /v1/jobs/{id}/trigger              202 {"jobId","occurrenceId"}
//	  GET  /v1/jobs/{id}/next?n=5             {"next":[RFC3339…]}
//	  GET  /v1/cron/next?expr=&tz=&from=&n=   {"expression","timeZone","next"}
//	  POST /v1/groups                         201 group
//	  GET  /v1/groups?appname=&title=         {"items":[group…]}
//	  GET|PUT|DELETE /v1/groups/{id}          200 | 200 | 204 (409 while jobs use it)
//	  GET  /v1/groups/{id}/executors          {"items":[{"address","updateTime"}]}
//	  GET  /v1/logs?job=&group=&status=&from=&to=&cursor=&limit=
//	  GET  /v1/logs/{id}                      log
//	  GET  /v1/logs/{id}/executor-log?from=1  {"fromLineNum","toLineNum","logContent","isEnd"}
//	  POST /v1/logs/{id}/kill                 200 log (409 if not running)
//	  DELETE /v1/logs?group=&job=&mode=       {"deleted":n}; mode 1m|3m|6m|12m (older than), 1k|10k|30k|100k (keep newest), all
//	  GET  /v1/report?from=&to=               {"items":[ReportDay…]}
//	  POST /v1/apply?prune=&dryRun=           manifest → {"plan":[…],"unchanged","dryRun"}
//	                                          (400 and no write if any item is bad)
//	  GET  /v1/export                         manifest {"groups":[…],"jobs":[…]}
//	  POST /v1/bulk/jobs                      {"action":"start|stop|delete","ids":[…]} →
//	                                          {"items":[{"id","status","error"}]}, one per id
//
// Status codes of the admin API: 400 malformed JSON, unknown field, wrong
// type, bad query parameter or failed validation; 401 missing or wrong
// token; 404 no such job, group, log or route; 405 wrong method; 409 stale
// version, group in use, log not running; 413 body over 1 MiB; 415 body not
// application/json; 502 the executor behind /executor-log or /kill failed
// (an addition to api.md: the request was valid, the executor was not).
// A rejected request writes nothing: bodies are decoded and validated
// before the service is called, and the service validates before it writes.
//
// Deliberate differences from xxl-job's admin on the executor API: a
// callback batch whose items could not be stored for a reason other than a
// per-item rejection (unknown log, repeated result) is answered with code
// 500, so the executor keeps it in its retry file instead of losing it —
// recording is idempotent (first result wins). Registrations are written
// before the reply, so a store failure is a 500 and the executor's next
// beat retries it.
package adminapi
