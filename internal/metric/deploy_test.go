package metric_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"go.yaml.in/yaml/v3"

	"github.com/xjobdev/xjob/internal/metric"
	"github.com/xjobdev/xjob/internal/testenv/tool"
)

// deployFile is the path of a file under the repository's deploy/.
func deployFile(name string) string {
	_, self, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(self), "..", "..", "deploy", name)
}

// exported are the series names /metrics serves, histogram series included.
func exported(t *testing.T) map[string]bool {
	t.Helper()
	ch := make(chan *prometheus.Desc, 64)
	go func() {
		metric.Collector(&metric.Metrics{}, metric.Gauges{}).Describe(ch)
		close(ch)
	}()
	fq := regexp.MustCompile(`fqName: "([a-z_]+)"`)
	out := map[string]bool{}
	for d := range ch {
		m := fq.FindStringSubmatch(d.String())
		if m == nil {
			t.Fatalf("descriptor without a name: %s", d)
		}
		for _, suffix := range []string{"", "_bucket", "_sum", "_count"} {
			out[m[1]+suffix] = true
		}
	}
	return out
}

var seriesName = regexp.MustCompile(`\bxjob_[a-z_]+`)

// up is Prometheus's own series of a scrape target.
var up = regexp.MustCompile(`\bup\{`)

func checkNames(t *testing.T, where, expr string, names map[string]bool) {
	t.Helper()
	found := seriesName.FindAllString(expr, -1)
	if len(found) == 0 {
		t.Errorf("%s: %q uses no xjob metric", where, expr)
	}
	for _, n := range found {
		if !names[n] {
			t.Errorf("%s: %q uses %s, which /metrics does not serve", where, expr, n)
		}
	}
}

// The Grafana dashboard is valid JSON with the fields Grafana needs, and
// its panels query only metrics the code exports.
func TestGrafanaDashboard(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile(deployFile("grafana/xjob.json"))
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Title         string `json:"title"`
		UID           string `json:"uid"`
		SchemaVersion int    `json:"schemaVersion"`
		Panels        []struct {
			ID      int            `json:"id"`
			Type    string         `json:"type"`
			Title   string         `json:"title"`
			GridPos map[string]int `json:"gridPos"`
			Targets []struct {
				RefID string `json:"refId"`
				Expr  string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	dec := json.NewDecoder(strings.NewReader(string(data)))
	if err := dec.Decode(&dash); err != nil {
		t.Fatalf("dashboard JSON: %v", err)
	}
	if dash.Title == "" || dash.UID == "" || dash.SchemaVersion == 0 || len(dash.Panels) == 0 {
		t.Fatalf("dashboard lacks title, uid, schemaVersion or panels")
	}
	names := exported(t)
	ids := map[int]bool{}
	for _, p := range dash.Panels {
		if p.ID == 0 || ids[p.ID] || p.Title == "" || p.Type == "" || p.GridPos["w"] == 0 || p.GridPos["h"] == 0 || len(p.Targets) == 0 {
			t.Errorf("panel %d %q: needs a unique id, a title, a type, a size and targets", p.ID, p.Title)
		}
		ids[p.ID] = true
		for _, tg := range p.Targets {
			if tg.RefID == "" {
				t.Errorf("panel %q: a target without refId", p.Title)
			}
			checkNames(t, "panel "+p.Title, tg.Expr, names)
		}
	}
}

// The alert rules use only exported metrics, and promtool checks them as
// Prometheus would (make prometheus installs it; -short skips that part).
func TestAlertRules(t *testing.T) {
	t.Parallel()
	path := deployFile("prometheus/alerts.yml")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var rules struct {
		Groups []struct {
			Rules []struct {
				Alert string `yaml:"alert"`
				Expr  string `yaml:"expr"`
			} `yaml:"rules"`
		} `yaml:"groups"`
	}
	if err := yaml.Unmarshal(data, &rules); err != nil {
		t.Fatal(err)
	}
	names := exported(t)
	alerts := map[string]bool{}
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			alerts[r.Alert] = true
			if up.MatchString(r.Expr) && !seriesName.MatchString(r.Expr) {
				continue // the scrape's own series: xjob down serves none of its own
			}
			checkNames(t, "alert "+r.Alert, r.Expr, names)
		}
	}
	for _, want := range []string{"XjobDown", "XjobNoScan", "XjobFiresLate", "XjobMisfires", "XjobFailures",
		"XjobGroupWithoutExecutor", "XjobCallbacksLost", "XjobShardsUnheld", "XjobClusterNodesDisagree"} {
		if !alerts[want] {
			t.Errorf("alert %s missing", want)
		}
	}
	tool.SkipIfShort(t, "promtool")
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		tool.Missing(t, fmt.Errorf("promtool not found: make prometheus installs it (Debian's prometheus package)"))
	}
	if out, err := exec.Command(promtool, "check", "rules", path).CombinedOutput(); err != nil {
		t.Fatalf("promtool check rules: %v\n%s", err, out)
	}
}
