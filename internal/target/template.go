package target

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Vars are the values a template may name: what the trigger knows about
// the run it starts.
type Vars struct {
	JobID      int64
	LogID      int64
	Param      string
	ShardIndex int
	ShardTotal int
	// ScheduleTime is the occurrence's planned instant, Unix ms (the
	// trigger time for a manual trigger, which has none).
	ScheduleTime int64
	// TriggerTime is when the run was triggered, Unix ms.
	TriggerTime int64
}

// varNames are the names a placeholder may use, in the order the docs
// list them.
var varNames = []string{"param", "jobId", "logId", "scheduleTime", "scheduleTimeMs", "triggerTime", "shardIndex", "shardTotal"}

// value is the raw text of one variable, and whether it is a number (the
// json encoder writes a number bare and a string quoted).
func (v Vars) value(name string) (string, bool) {
	switch name {
	case "param":
		return v.Param, false
	case "jobId":
		return strconv.FormatInt(v.JobID, 10), true
	case "logId":
		return strconv.FormatInt(v.LogID, 10), true
	case "scheduleTime":
		return time.UnixMilli(v.ScheduleTime).UTC().Format("2006-01-02T15:04:05.000Z07:00"), false
	case "scheduleTimeMs":
		return strconv.FormatInt(v.ScheduleTime, 10), true
	case "triggerTime":
		return time.UnixMilli(v.TriggerTime).UTC().Format("2006-01-02T15:04:05.000Z07:00"), false
	case "shardIndex":
		return strconv.Itoa(v.ShardIndex), true
	case "shardTotal":
		return strconv.Itoa(v.ShardTotal), true
	}
	return "", false
}

// Encoders a placeholder may name after a '|'.
const (
	encRaw  = ""
	encJSON = "json"
	encURL  = "url"
)

// segment is a piece of a parsed template: literal text, or a variable
// with its encoder.
type segment struct {
	lit  string
	name string // "" for a literal
	enc  string
}

// Template is a parsed template: text with {{name}} or {{name | enc}}
// placeholders. It is deliberately not text/template: a body template is
// written by anyone who may edit a job, and runs on the scheduler at
// every fire, so it may only substitute values — no loops, no calls —
// and its cost is linear in its length.
type Template struct {
	segs []segment
}

// maxPlaceholders bounds the placeholders of one template, so that a
// short template cannot expand a long parameter thousands of times.
const maxPlaceholders = 64

// ParseTemplate parses s. A "{{" always opens a placeholder; it must be
// closed by "}}" and name one of the variables (param, jobId, logId,
// scheduleTime, scheduleTimeMs, triggerTime, shardIndex, shardTotal),
// optionally followed by "| json" or "| url".
func ParseTemplate(s string) (Template, error) {
	var t Template
	n := 0
	for s != "" {
		i := strings.Index(s, "{{")
		if i < 0 {
			t.segs = append(t.segs, segment{lit: s})
			break
		}
		if i > 0 {
			t.segs = append(t.segs, segment{lit: s[:i]})
		}
		rest := s[i+2:]
		j := strings.Index(rest, "}}")
		if j < 0 {
			return Template{}, fmt.Errorf("%q opens a placeholder that is never closed with }}", clip(s[i:]))
		}
		inner := rest[:j]
		name, enc, _ := strings.Cut(inner, "|")
		name, enc = strings.TrimSpace(name), strings.TrimSpace(enc)
		if !knownVar(name) {
			return Template{}, fmt.Errorf("{{%s}}: unknown placeholder; use %s", clip(inner), strings.Join(varNames, ", "))
		}
		if strings.Contains(inner, "|") && enc != encJSON && enc != encURL {
			return Template{}, fmt.Errorf("{{%s}}: unknown encoder %q; use json or url", clip(inner), clip(enc))
		}
		if n++; n > maxPlaceholders {
			return Template{}, fmt.Errorf("more than %d placeholders", maxPlaceholders)
		}
		t.segs = append(t.segs, segment{name: name, enc: enc})
		s = rest[j+2:]
	}
	return t, nil
}

func knownVar(name string) bool {
	for _, v := range varNames {
		if v == name {
			return true
		}
	}
	return false
}

// clip shortens text quoted in an error message.
func clip(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}

// Render writes t with v's values; a placeholder without an encoder is
// encoded with dflt (encRaw, or encURL in a URL).
func (t Template) Render(v Vars, dflt string) string {
	var b strings.Builder
	for _, s := range t.segs {
		if s.name == "" {
			b.WriteString(s.lit)
			continue
		}
		val, num := v.value(s.name)
		enc := s.enc
		if enc == encRaw {
			enc = dflt
		}
		switch enc {
		case encJSON:
			if num {
				b.WriteString(val)
			} else {
				// A JSON string as written, without encoding/json's
				// HTML escaping (& stays &).
				var q bytes.Buffer
				enc := json.NewEncoder(&q)
				enc.SetEscapeHTML(false)
				_ = enc.Encode(val) // a string always encodes
				b.Write(bytes.TrimSuffix(q.Bytes(), []byte("\n")))
			}
		case encURL:
			b.WriteString(url.QueryEscape(val))
		default:
			b.WriteString(val)
		}
	}
	return b.String()
}

// HasPlaceholders reports whether t substitutes anything.
func (t Template) HasPlaceholders() bool {
	for _, s := range t.segs {
		if s.name != "" {
			return true
		}
	}
	return false
}
