// Package protocol defines the xxl-job 2.x wire format spoken between the
// scheduling center (admin) and executors, in both directions. It is the one
// definition shared by the admin side (dispatch, callback and registry
// handlers, the executor client) and the executor SDK.
//
// Field names are the Java field names that Gson writes, misspellings
// included: LogDateTim in callbacks and log requests, LogDateTime in
// TriggerParam, IsEnd in LogResult.
package protocol

import "encoding/json"

// Codes used in ReturnT. Callers treat anything other than SuccessCode as failure.
const (
	SuccessCode = 200
	FailCode    = 500
)

// AccessTokenHeader carries the shared access token on every request.
const AccessTokenHeader = "XXL-JOB-ACCESS-TOKEN"

// Executor endpoints (exact paths, relative to the executor address).
const (
	PathBeat     = "beat"
	PathIdleBeat = "idleBeat"
	PathRun      = "run"
	PathKill     = "kill"
	PathLog      = "log"
)

// Admin endpoints (relative to the admin address).
const (
	PathCallback       = "api/callback"
	PathRegistry       = "api/registry"
	PathRegistryRemove = "api/registryRemove"
)

// Replies and messages xxl-job uses verbatim.
const (
	MsgWrongToken       = "The access token is wrong."
	MsgIllegalArgument  = "Illegal Argument."
	MsgJobBusy          = "job thread is running or has trigger queue."
	MsgThreadKilled     = "job thread already killed."
	MsgDiscardLater     = "block strategy effect：Discard Later"
	MsgLogFileNotExists = "readLog fail, logFile not exists"
)

// ReturnT is the reply envelope of every call. Content is set only by /log.
type ReturnT struct {
	Code    int             `json:"code"`
	Msg     string          `json:"msg,omitempty"`
	Content json.RawMessage `json:"content,omitempty"`
}

// OK is the plain success reply, which Gson writes as {"code":200}.
func OK() ReturnT { return ReturnT{Code: SuccessCode} }

// Fail is a failure reply with msg.
func Fail(msg string) ReturnT { return ReturnT{Code: FailCode, Msg: msg} }

// TriggerParam is the body of POST /run.
type TriggerParam struct {
	JobID                 int64  `json:"jobId"`
	ExecutorHandler       string `json:"executorHandler"`
	ExecutorParams        string `json:"executorParams"`
	ExecutorBlockStrategy string `json:"executorBlockStrategy"`
	ExecutorTimeout       int    `json:"executorTimeout"`
	LogID                 int64  `json:"logId"`
	LogDateTime           int64  `json:"logDateTime"`
	GlueType              string `json:"glueType"`
	GlueSource            string `json:"glueSource"`
	GlueUpdatetime        int64  `json:"glueUpdatetime"`
	BroadcastIndex        int    `json:"broadcastIndex"`
	BroadcastTotal        int    `json:"broadcastTotal"`
}

// IdleBeatParam is the body of POST /idleBeat.
type IdleBeatParam struct {
	JobID int64 `json:"jobId"`
}

// KillParam is the body of POST /kill.
type KillParam struct {
	JobID int64 `json:"jobId"`
}

// LogParam is the body of POST /log (note LogDateTim, sic).
type LogParam struct {
	LogDateTim  int64 `json:"logDateTim"`
	LogID       int64 `json:"logId"`
	FromLineNum int   `json:"fromLineNum"`
}

// LogResult is the Content of a /log reply.
type LogResult struct {
	FromLineNum int    `json:"fromLineNum"`
	ToLineNum   int    `json:"toLineNum"`
	LogContent  string `json:"logContent"`
	IsEnd       bool   `json:"isEnd"`
}

// HandleCallbackParam is one item of the JSON array POSTed to /api/callback.
type HandleCallbackParam struct {
	LogID      int64  `json:"logId"`
	LogDateTim int64  `json:"logDateTim"`
	HandleCode int    `json:"handleCode"`
	HandleMsg  string `json:"handleMsg,omitempty"`
}

// RegistryParam is the body of /api/registry and /api/registryRemove.
type RegistryParam struct {
	RegistryGroup string `json:"registryGroup"`
	RegistryKey   string `json:"registryKey"`
	RegistryValue string `json:"registryValue"`
}
