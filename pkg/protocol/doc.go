// Package protocol defines the xxl-job wire format spoken between the
// scheduling center (admin) and executors, in both directions. It is the one
// definition shared by the admin side (dispatch, callback and registry
// handlers, the executor client) and the executor SDK.
//
// Field names are the Java field names that Gson writes, misspellings
// included: LogDateTim in callbacks and log requests, LogDateTime in
// TriggerParam, IsEnd in LogResult.
//
// # Generations
//
// One admin speaks to every executor generation; what differs, and how
// xjob copes (for users: docs/compatibility.md):
//
//	                      ≤ 2.2             2.3 – 3.2     3.3 – 3.4       3.5 (master)
//	trigger endpoint      /run              /run          /run            /trigger
//	reply payload         content           content       data            data
//	callback body         [item…]           [item…]       [item…]         {"callbackList":[item…]}
//	callback result       executeResult     handleCode    handleCode      handleCode
//	date field (cb, /log) logDateTim        logDateTim    logDateTim      logDateTime
//	XXL-JOB-APPNAME       ignored           ignored       ignored         required both ways
//
// Admin → executor (execclient): always send the appname header when the
// group is known (AppNameFromContext) and both date spellings; call /run,
// and on "uri-mapping(/run) not found" (or HTTP 404) call /trigger and
// remember it for that address; read data or content.
//
//	       /run answered "uri-mapping(/run) not found" or HTTP 404
//	  ┌──────────────────────────────────────────────────────────┐
//	  │                                                          ▼
//	/run (every address starts here: ≤ 3.4)          /trigger (remembered: 3.5)
//	  ▲                                                          │
//	  └──────────────────────────────────────────────────────────┘
//	       /trigger answered "uri-mapping(/trigger) not found" or 404
//
// Executor → admin (adminapi, DecodeCallbacks): accept an array or a
// callbackList object, handleCode or executeResult, either date spelling,
// with or without the appname header.
package protocol
