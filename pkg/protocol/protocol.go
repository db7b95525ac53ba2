package protocol

import "encoding/json"

// Codes used in ReturnT. Callers treat anything other than SuccessCode as failure.
const (
	SuccessCode = 200
	FailCode    = 500
)

// AccessTokenHeader carries the shared access token on every request.
const AccessTokenHeader = "XXL-JOB-ACCESS-TOKEN"

// AppNameHeader carries the executor's appname on every request in both
// directions from xxl-job 3.5 on, where it is required; older executors
// and admins ignore it.
const AppNameHeader = "XXL-JOB-APPNAME"

// Executor endpoints (exact paths, relative to the executor address).
const (
	PathBeat     = "beat"
	PathIdleBeat = "idleBeat"
	PathRun      = "run"
	PathTrigger  = "trigger" // xxl-job 3.5's name for run
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
// Data is xxl-job 3.3+'s name for Content (its Response envelope): a reply
// that carries a payload can set both, for admins of every generation;
// clients read either.
type ReturnT struct {
	Code    int             `json:"code"`
	Msg     string          `json:"msg,omitempty"`
	Content json.RawMessage `json:"content,omitempty"`
	Data    json.RawMessage `json:"data,omitempty"`
}

// OK is the plain success reply, which Gson writes as {"code":200}.
func OK() ReturnT { return ReturnT{Code: SuccessCode} }

// Fail is a failure reply with msg.
func Fail(msg string) ReturnT { return ReturnT{Code: FailCode, Msg: msg} }

// TriggerParam is the body of POST /run (/trigger in xxl-job 3.5).
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

// LogParam is the body of POST /log. xxl-job up to 3.4 names the date
// LogDateTim (sic), 3.5 LogDateTime; the admin sends both (Gson ignores the
// one it does not know) and Date reads either.
type LogParam struct {
	LogDateTim  int64 `json:"logDateTim"`
	LogDateTime int64 `json:"logDateTime,omitempty"`
	LogID       int64 `json:"logId"`
	FromLineNum int   `json:"fromLineNum"`
}

// Date is the log's trigger date whichever name carried it.
func (p LogParam) Date() int64 {
	if p.LogDateTim != 0 {
		return p.LogDateTim
	}
	return p.LogDateTime
}

// LogResult is the Content of a /log reply.
type LogResult struct {
	FromLineNum int    `json:"fromLineNum"`
	ToLineNum   int    `json:"toLineNum"`
	LogContent  string `json:"logContent"`
	IsEnd       bool   `json:"isEnd"`
}

// HandleCallbackParam is one item of the JSON array POSTed to /api/callback.
// LogDateTime and ExecuteResult are only read, from executors of other
// generations (see DecodeCallbacks), and never sent.
type HandleCallbackParam struct {
	LogID      int64  `json:"logId"`
	LogDateTim int64  `json:"logDateTim"`
	HandleCode int    `json:"handleCode"`
	HandleMsg  string `json:"handleMsg,omitempty"`
	// LogDateTime is xxl-job 3.5's spelling of LogDateTim.
	LogDateTime int64 `json:"logDateTime,omitempty"`
	// ExecuteResult is how executors up to 2.2 report the result
	// ({code,msg,content}) instead of HandleCode and HandleMsg.
	ExecuteResult *ReturnT `json:"executeResult,omitempty"`
}

// RegistryParam is the body of /api/registry and /api/registryRemove.
type RegistryParam struct {
	RegistryGroup string `json:"registryGroup"`
	RegistryKey   string `json:"registryKey"`
	RegistryValue string `json:"registryValue"`
}
