package cli

import (
	"encoding/json"
	"fmt"
	"html"
	"io"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/xjobdev/xjob"
)

// Layouts of instants. Every instant printed names its zone: the
// abbreviation where the zone has one, else the offset (Go prints "+08"
// for zones without an abbreviation).
const (
	tableTime  = "2006-01-02 15:04:05 MST"
	detailTime = "2006-01-02 15:04:05 MST"
)

// emit prints v as indented JSON with -o json, else calls table with a
// writer that aligns tab-separated cells (see table) once it returns.
func (a *app) emit(v any, table func(w io.Writer)) error {
	if a.output == "json" {
		enc := json.NewEncoder(a.stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(v); err != nil {
			return fmt.Errorf("write json: %w", err)
		}
		return nil
	}
	tw := newTable(a.stdout)
	table(tw)
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("write table: %w", err)
	}
	return nil
}

// row writes tab-separated cells and a newline.
func row(w io.Writer, cells ...string) {
	fmt.Fprintln(w, strings.Join(cells, "\t"))
}

// field is one line of a detail view.
type field struct{ name, value string }

func detail(w io.Writer, fields []field) {
	for _, f := range fields {
		fmt.Fprintf(w, "%s:\t%s\n", f.name, f.value)
	}
}

// ms shows a Unix-millisecond instant in the display zone ("-" for unset).
func (a *app) ms(v int64, layout string) string {
	if v <= 0 {
		return "-"
	}
	return time.UnixMilli(v).In(a.loc).Format(layout)
}

func itoa[T ~int | ~int64](v T) string { return strconv.FormatInt(int64(v), 10) }

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// htmlTag matches a tag of the HTML that xxl-job's trigger messages carry
// (<br>, <span style=…>, </span>) for its console.
var htmlTag = regexp.MustCompile(`(?i)<(br\s*/?|/?span[^>]*|/?b|/?font[^>]*)>`)

// plainText turns a trigger or handle message into terminal text: <br>
// becomes a newline, the other tags go, entities are decoded. HTML stays
// in -o json, where the raw message is kept.
func plainText(s string) string {
	s = htmlTag.ReplaceAllStringFunc(s, func(tag string) string {
		if strings.HasPrefix(strings.ToLower(tag), "<br") {
			return "\n"
		}
		return ""
	})
	return html.UnescapeString(s)
}

// oneLine flattens a message for a table cell: tags go, line breaks
// become spaces, runs of blanks shrink, and it is cut to n runes.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(plainText(s)), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

// triggerOutcome is the part of a trigger message that says how the
// trigger went: what follows xxl-job's ">>>>>>>>>>>Trigger<<<<<<<<<<<"
// marker ("Trigger result: fail … msg: no executor address available"),
// not the settings listed before it; the whole message without one.
func triggerOutcome(msg string) string {
	const marker = "<<<<<<<<<<<"
	if i := strings.LastIndex(msg, marker); i >= 0 {
		rest := msg[i+len(marker):]
		if j := strings.Index(rest, ">"); j >= 0 && strings.HasPrefix(strings.TrimSpace(rest), "</span") {
			rest = rest[j+1:]
		}
		return rest
	}
	return msg
}

// multiLine turns xxl-job's <br> separators into indented lines for a
// detail view.
func multiLine(s string) string {
	s = plainText(strings.TrimSpace(s))
	var lines []string
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	return dash(strings.Join(lines, "\n\t"))
}

func scheduleText(j *xjob.Job) string {
	switch j.ScheduleType {
	case xjob.ScheduleCron:
		return "cron " + j.ScheduleConf
	case xjob.ScheduleFixRate:
		return "every " + j.ScheduleConf + "s"
	case xjob.ScheduleFixDelay:
		return j.ScheduleConf + "s after each run"
	case xjob.ScheduleOnce:
		return "once at " + j.ScheduleConf
	case "", xjob.ScheduleNone:
		return "none"
	}
	return string(j.ScheduleType) + " " + j.ScheduleConf
}

func statusText(s xjob.TriggerStatus) string {
	switch s {
	case xjob.StatusRunning:
		return "started"
	case xjob.StatusStopped:
		return "stopped"
	}
	return itoa(s)
}

// logState sums up a trigger log in one word, the way the log page's two
// code columns read together.
func logState(l *xjob.Log) string {
	switch {
	case !l.Triggered():
		return "pending"
	case l.TriggerCode != xjob.CodeSuccess && !l.Handled():
		return "trigger-failed"
	case l.Running():
		return "running"
	case l.HandleCode == xjob.CodeSuccess:
		return "success"
	case l.HandleCode == xjob.CodeTimeout:
		return "timeout"
	}
	return "failed"
}

func joinIDs(ids []int64) string {
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = itoa(id)
	}
	return dash(strings.Join(parts, ","))
}
