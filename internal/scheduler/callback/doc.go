// Package callback owns the end of a trigger log's life: it records the
// executor's result (POST /api/callback), and runs the single completion path
// that xxl-job calls XxlJobCompleter plus JobFailMonitorHelper: child jobs on
// success, retry and alarm on failure.
//
// # Completion state machine
//
//	                 callback / kill / lost-job check
//	triggered ────────── Finish (LogFinishMany, first result wins) ─┐
//	   │                                                            │
//	   │ trigger failed (dispatch)                                  ▼
//	   └──────────────────────────────────────────────────▶ Complete(log)
//	                                                                │
//	         handle code 200 ◀──────────────────────────────────────┤
//	           └─ enqueue one PARENT task per child job             │
//	              (occurrence ref = parent log id)                  │
//	                                                                │
//	         log.Failed() ◀─────────────────────────────────────────┘
//	           ├─ retry count > 0: enqueue one RETRY task
//	           │    (ref = failed log id, count − 1, same param, same "i/n")
//	           ├─ claim alarm status 0 → -1 (compare-and-set; loser stops)
//	           └─ alarm: job deleted → 1, alarm ok → 2, alarm error → 3
//
// As in xxl-job's fail monitor, a failure that is retried is also alarmed:
// the retry decision comes first, then the alarm, and both happen.
//
// # Why this is safe under duplicates and crashes
//
// A callback request is one unit of durable work: its logs' jobs are read
// once (LogJobs, or LogGetMany and JobGetMany) and its results recorded in
// one LogFinishMany, each item still conditional on its own log: that
// condition alone decides whether a result is recorded.
//
// Only the caller whose LogFinish wins the conditional write goes on to
// trigger children, so duplicate or concurrent callbacks have one effect.
// Child and retry tasks carry deterministic occurrence ids (job, type, parent
// log id), so enqueueing one twice reaches the executor once: dispatch
// creates the trigger log conditionally on that id. That is why the retry is
// enqueued *before* the alarm claim (xxl-job claims first): a crash after the
// claim would otherwise lose the retry, while a duplicate enqueue is harmless.
// Sweep is the backstop for a crash between LogFinish (or a failed trigger)
// and the completion: it re-runs Complete on failed logs whose alarm status
// is still 0 after a grace period.
//
// # Report counters
//
// Every log is counted in exactly one bucket of its trigger day (UTC
// yyyy-mm-dd of TriggerTime) and group in the run report, and the component that
// records a transition adjusts the counters with ReportAdd:
//
//   - dispatch, on recording a trigger: code 200 → running+1; otherwise fail+1.
//   - Finish (callback, kill, lost-job check), on winning LogFinish:
//     if the trigger was recorded as failed (already counted fail): a 200
//     result moves it fail−1, suc+1, any other result changes nothing;
//     otherwise (trigger 200, or not yet recorded because the callback
//     overtook dispatch — dispatch will add its running+1 later):
//     running−1 and suc+1 (code 200) or fail+1 (any other code).
//
// Counters are best effort (a failed ReportAdd is logged, not retried); the
// logs are the record.
package callback
