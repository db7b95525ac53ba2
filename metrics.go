package xjob

// MetricsSnapshot is a point-in-time copy of the scheduler's counters: the
// reply of the admin API's GET /v1/metrics. It lives in the domain package,
// not beside the counters, so that the admin client can decode it without
// linking the Prometheus client the server exports them with.
type MetricsSnapshot struct {
	Triggers        int64 `json:"triggers"`
	TriggerFailures int64 `json:"triggerFailures"`
	Duplicates      int64 `json:"duplicates"`
	Dropped         int64 `json:"dropped"`
	Successes       int64 `json:"successes"`
	Failures        int64 `json:"failures"`
	// FireDelayP50/P99 are quantiles of the fire delay of CRON triggers,
	// in milliseconds, interpolated within the histogram bucket holding
	// them (the last bound when above it), as histogram_quantile does.
	FireDelayP50 int64 `json:"fireDelayP50Ms"`
	FireDelayP99 int64 `json:"fireDelayP99Ms"`
	FireDelayAvg int64 `json:"fireDelayAvgMs"`
	// ScanTicks counts scan ticks, ScanJobs the due jobs they read;
	// ScanTickP50/P99 bound the tick duration like the fire delay.
	ScanTicks   int64 `json:"scanTicks"`
	ScanJobs    int64 `json:"scanJobs"`
	ScanTickP50 int64 `json:"scanTickP50Ms"`
	ScanTickP99 int64 `json:"scanTickP99Ms"`
	// Misfired counts, per misfire strategy, the scheduled fire times that
	// were more than the misfire threshold late when the scan reached them
	// (xjob fell behind); Collapsed those late within the threshold that
	// were folded into one fire. Both are 0 on a scheduler that keeps up.
	Misfired  MisfireCounts `json:"misfired"`
	Collapsed int64         `json:"collapsed"`
}

// MisfireCounts is the misfired fire count per misfire strategy.
type MisfireCounts struct {
	DoNothing   int64 `json:"DO_NOTHING"`
	FireOnceNow int64 `json:"FIRE_ONCE_NOW"`
}

// Total is the misfired fires of every strategy.
func (m MisfireCounts) Total() int64 { return m.DoNothing + m.FireOnceNow }
