package xjob

import "strconv"

// Manifest is a jobs-as-code document: the executor groups and jobs an
// installation should have. `xjob apply` makes the server match it, `xjob
// export` writes one, and `xjob import xxl-job` builds one from an xxl-job
// database. Groups are keyed by AppName; jobs by Name, or by ID when they
// have no name (an imported or exported job keeps its id).
//
// Field names are those of the admin API (xxl-job's), so a manifest reads
// like the JSON of `xjob job get`; a YAML file uses the same names.
type Manifest struct {
	Groups []GroupSpec `json:"groups,omitempty"`
	Jobs   []JobSpec   `json:"jobs,omitempty"`
}

// GroupSpec declares one executor group. ID, when set, is the id a group
// created by the manifest gets (it is not a key: AppName is).
type GroupSpec struct {
	ID          int64       `json:"id,omitempty"`
	AppName     string      `json:"appname"`
	Title       string      `json:"title"`
	AddressType AddressType `json:"addressType,omitempty"`
	// AddressList matters for a manual group only; an automatic group's is
	// rebuilt from heartbeats.
	AddressList []string `json:"addressList,omitempty"`
}

// JobSpec declares one job. Group names its executor group by AppName;
// Children name child jobs by name, or by id written as a number. Fields
// left empty take the defaults of POST /v1/jobs; Started says whether the
// scheduler fires the job (a stopped job is still triggered by hand).
type JobSpec struct {
	Name        string `json:"name,omitempty"`
	ID          int64  `json:"id,omitempty"`
	Group       string `json:"group"`
	Description string `json:"jobDesc"`
	Author      string `json:"author"`
	AlarmEmail  string `json:"alarmEmail,omitempty"`

	ScheduleType    ScheduleType    `json:"scheduleType,omitempty"`
	ScheduleConf    string          `json:"scheduleConf,omitempty"`
	TimeZone        string          `json:"timeZone,omitempty"`
	MisfireStrategy MisfireStrategy `json:"misfireStrategy,omitempty"`
	AfterCompletion AfterCompletion `json:"afterCompletion,omitempty"`

	RouteStrategy  RouteStrategy `json:"executorRouteStrategy,omitempty"`
	Handler        string        `json:"executorHandler,omitempty"`
	Param          string        `json:"executorParam,omitempty"`
	BlockStrategy  BlockStrategy `json:"executorBlockStrategy,omitempty"`
	TimeoutSeconds int           `json:"executorTimeout,omitempty"`
	FailRetryCount int           `json:"executorFailRetryCount,omitempty"`

	GlueType   GlueType `json:"glueType,omitempty"`
	GlueSource string   `json:"glueSource,omitempty"`
	GlueRemark string   `json:"glueRemark,omitempty"`

	Children []string `json:"children,omitempty"`
	Started  bool     `json:"started,omitempty"`

	// GlueHistory are earlier GLUE sources, oldest first, saved as the
	// job's versions when an apply creates it (an import carries xxl-job's
	// GLUE history so); an apply that updates the job ignores them, and
	// an export leaves them out.
	GlueHistory []GlueVersionSpec `json:"glueHistory,omitempty"`
}

// GlueVersionSpec is one saved GLUE source of a JobSpec.
type GlueVersionSpec struct {
	Source    string `json:"source"`
	Remark    string `json:"remark"`
	CreatedAt int64  `json:"createdAt"`
}

// Key is how the job is matched: its name, or "#id" without one.
func (s *JobSpec) Key() string {
	if s.Name != "" {
		return s.Name
	}
	if s.ID != 0 {
		return "#" + strconv.FormatInt(s.ID, 10)
	}
	return ""
}

// Plan actions.
const (
	ActionCreate = "create"
	ActionUpdate = "update"
	ActionDelete = "delete"
	// ActionKeep: nothing is written; the item's Kept fields differ
	// between the manifest and xjob, and xjob's values stay.
	ActionKeep = "keep"
)

// PlanItem is one change an apply makes (or, dry, would make).
type PlanItem struct {
	Kind   string `json:"kind"` // "group" or "job"
	Key    string `json:"key"`  // app name, job name or "#id"
	Action string `json:"action"`
	// ID is the record's id: the existing one, or the one a create got
	// (or will get, when the manifest names it).
	ID int64 `json:"id,omitempty"`
	// Changes names the fields an update changes.
	Changes []string `json:"changes,omitempty"`
	// Diffs are those changes with their old and new values.
	Diffs []FieldChange `json:"diffs,omitempty"`
	// Kept are the fields where the manifest and xjob differ and xjob's
	// value stays: a person changed it in xjob since the last apply, and
	// the manifest did not change it since (or changed it too).
	Kept []FieldChange `json:"kept,omitempty"`
	// Done is set once the change is written; Error when it failed.
	Done  bool   `json:"done,omitempty"`
	Error string `json:"error,omitempty"`
}

// FieldChange is one field of a PlanItem: its value in xjob (Old) and in
// the manifest (New), and whose value the apply keeps (Side).
type FieldChange struct {
	Field string `json:"field"`
	Old   string `json:"old"`
	New   string `json:"new"`
	Side  string `json:"side"`
}

// FieldChange sides.
const (
	// SideFile: the manifest's value is written.
	SideFile = "file"
	// SideXjob: xjob's value stays; a person changed it since the last apply.
	SideXjob = "xjob"
	// SideBoth: both changed since the last apply; xjob's value stays.
	SideBoth = "both changed, xjob kept"
)

// ApplyResult is the plan of an apply and how far it got. Unchanged counts
// the declared groups and jobs that already matched (a job whose
// differences all stay xjob's is a "keep" item of the plan instead).
type ApplyResult struct {
	Plan      []PlanItem `json:"plan"`
	Unchanged int        `json:"unchanged"`
	DryRun    bool       `json:"dryRun"`
}
