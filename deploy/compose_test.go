package deploy

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/compose-spec/compose-go/v2/dotenv"
	"github.com/compose-spec/compose-go/v2/loader"
	"github.com/compose-spec/compose-go/v2/types"
)

// composeVariant is one compose file of deploy/compose and the database it
// runs.
type composeVariant struct {
	file     string // under deploy/compose
	db       string // the database service
	scheme   string // of its XJOB_DB
	port     string // the database's port in XJOB_DB
	image    string // the database image, without its tag
	minMajor int    // the oldest version xjob supports (major.minor, with minMinor)
	minMinor int
}

var composeVariants = []composeVariant{
	{file: "compose.yaml", db: "postgres", scheme: "postgres", port: "5432", image: "postgres", minMajor: 12},
	{file: "compose.mariadb.yaml", db: "mariadb", scheme: "mysql", port: "3306", image: "mariadb", minMajor: 10, minMinor: 6},
}

// nodeNames are the three xjob nodes of every compose file; haproxy.cfg
// names the same.
var nodeNames = []string{"xjob-1", "xjob-2", "xjob-3"}

// lbService is the load balancer in front of the nodes.
const lbService = "lb"

// exampleEnv is .env.example, the values a user copies to .env.
func exampleEnv(t *testing.T) map[string]string {
	t.Helper()
	env, err := dotenv.Read(filepath.Join("compose", ".env.example"))
	if err != nil {
		t.Fatalf(".env.example: %v", err)
	}
	return env
}

// loadCompose loads a compose file as `docker compose config` does — the
// compose specification's schema, interpolation, YAML merge keys — with
// env as the environment and nothing from this process's.
func loadCompose(t *testing.T, file string, env map[string]string) (*types.Project, error) {
	t.Helper()
	dir, err := filepath.Abs("compose")
	if err != nil {
		t.Fatal(err)
	}
	details, err := loader.LoadConfigFiles(context.Background(), []string{filepath.Join(dir, file)}, dir)
	if err != nil {
		return nil, err
	}
	details.Environment = env
	return loader.LoadWithContext(context.Background(), *details)
}

// nodeEnv is a service's environment, every variable set.
func nodeEnv(t *testing.T, s types.ServiceConfig) map[string]string {
	t.Helper()
	env := map[string]string{}
	for k, v := range s.Environment {
		if v == nil {
			t.Errorf("%s: %s has no value", s.Name, k)
			continue
		}
		env[k] = *v
	}
	return env
}

func TestComposeFiles(t *testing.T) {
	t.Parallel()
	for _, v := range composeVariants {
		t.Run(v.file, func(t *testing.T) {
			t.Parallel()
			p, err := loadCompose(t, v.file, exampleEnv(t))
			if err != nil {
				t.Fatalf("load: %v", err)
			}
			checkComposeDB(t, p, v)
			checkComposeNodes(t, p, v)
			checkComposeLB(t, p)
		})
	}
}

func checkComposeDB(t *testing.T, p *types.Project, v composeVariant) {
	db, ok := p.Services[v.db]
	if !ok {
		t.Fatalf("no %s service", v.db)
	}
	image, tag, _ := strings.Cut(db.Image, ":")
	if image != v.image {
		t.Errorf("%s runs %s, want %s", v.db, db.Image, v.image)
	}
	major, minor, err := parseVersion(tag)
	if err != nil {
		t.Errorf("%s: image tag %q: %v", v.db, tag, err)
	} else if major < v.minMajor || major == v.minMajor && minor < v.minMinor {
		t.Errorf("%s %s is older than %d.%d", v.image, tag, v.minMajor, v.minMinor)
	}
	if db.HealthCheck == nil || len(db.HealthCheck.Test) < 2 || db.HealthCheck.Disable {
		t.Errorf("%s has no health check: the nodes wait on it", v.db)
	}
}

func parseVersion(tag string) (major, minor int, err error) {
	maj, min, _ := strings.Cut(tag, ".")
	if major, err = strconv.Atoi(maj); err != nil {
		return 0, 0, fmt.Errorf("no version number: %w", err)
	}
	if min != "" {
		min, _, _ = strings.Cut(min, ".")
		if minor, err = strconv.Atoi(min); err != nil {
			return 0, 0, fmt.Errorf("no minor version: %w", err)
		}
	}
	return major, minor, nil
}

func checkComposeNodes(t *testing.T, p *types.Project, v composeVariant) {
	var nodes []string
	for name, s := range p.Services {
		if slices.Equal([]string(s.Command), []string{"server"}) {
			nodes = append(nodes, name)
		}
	}
	slices.Sort(nodes)
	if !slices.Equal(nodes, nodeNames) {
		t.Fatalf("services running xjob server: %q, want %q", nodes, nodeNames)
	}

	shared := map[string]string{} // what every node must have alike
	ids := map[string]string{}
	for _, name := range nodeNames {
		s := p.Services[name]
		env := nodeEnv(t, s)
		for _, problem := range checkServerEnv(env) {
			t.Errorf("%s: %s", name, problem)
		}
		for _, k := range []string{"XJOB_DB", "XJOB_ADMIN_TOKEN", "XJOB_ACCESS_TOKEN", "XJOB_SESSION_KEY", "XJOB_SHARDS", "XJOB_PUBLIC_URL"} {
			val, ok := env[k]
			if !ok || val == "" {
				t.Errorf("%s: %s is not set", name, k)
				continue
			}
			if prev, seen := shared[k]; seen && prev != val {
				t.Errorf("%s: %s differs from another node's (%q, %q)", name, k, val, prev)
			}
			shared[k] = val
		}
		if id := env["XJOB_NODE_ID"]; id == "" {
			t.Errorf("%s: XJOB_NODE_ID is not set", name)
		} else if other, dup := ids[id]; dup {
			t.Errorf("%s and %s share the node id %q", name, other, id)
		} else {
			ids[id] = name
		}

		if dep, ok := s.DependsOn[v.db]; !ok || dep.Condition != types.ServiceConditionHealthy {
			t.Errorf("%s does not wait for %s to be healthy (depends_on %v)", name, v.db, s.DependsOn)
		}
		if s.User != "65532:65532" && s.User != "65532" {
			t.Errorf("%s runs as %q, want 65532", name, s.User)
		}
		if !s.ReadOnly {
			t.Errorf("%s: root filesystem is writable", name)
		}
		if !slices.Contains(s.CapDrop, "ALL") {
			t.Errorf("%s keeps its capabilities (cap_drop %q)", name, s.CapDrop)
		}
		if len(s.Ports) > 0 {
			t.Errorf("%s publishes ports %v: only the load balancer should", name, s.Ports)
		}
		grace := envDuration(t, env, "XJOB_SHUTDOWN_GRACE", defaultGrace)
		ttl := envDuration(t, env, "XJOB_LEASE_TTL", defaultLeaseTTL)
		if s.StopGracePeriod == nil || time.Duration(*s.StopGracePeriod) <= grace+ttl {
			t.Errorf("%s: stop_grace_period %v leaves no time past the drain (grace %v, lease TTL %v)", name, s.StopGracePeriod, grace, ttl)
		}
		var drains bool
		for _, h := range s.PreStop {
			drains = drains || slices.Equal([]string(h.Command), drainCommand)
		}
		if !drains {
			t.Errorf("%s: no pre_stop hook runs %q", name, drainCommand)
		}
	}

	u, err := url.Parse(shared["XJOB_DB"])
	if err != nil {
		t.Fatalf("XJOB_DB: %v", err)
	}
	if u.Scheme != v.scheme || u.Hostname() != v.db || u.Port() != v.port || u.Path != "/xjob" {
		t.Errorf("XJOB_DB %s: want %s://…@%s:%s/xjob", u.Redacted(), v.scheme, v.db, v.port)
	}
	if pw, _ := u.User.Password(); pw == "" {
		t.Errorf("XJOB_DB %s has no password", u.Redacted())
	}
}

func checkComposeLB(t *testing.T, p *types.Project) {
	lb, ok := p.Services[lbService]
	if !ok {
		t.Fatalf("no %s service", lbService)
	}
	var published bool
	for _, port := range lb.Ports {
		published = published || int(port.Target) == serverPort && port.Published == fmt.Sprint(serverPort)
	}
	if !published {
		t.Errorf("%s does not publish port %d: %+v", lbService, serverPort, lb.Ports)
	}
	for _, name := range nodeNames {
		if _, ok := lb.DependsOn[name]; !ok {
			t.Errorf("%s does not depend on %s", lbService, name)
		}
	}
	var cfg bool
	for _, vol := range lb.Volumes {
		cfg = cfg || vol.Type == types.VolumeTypeBind && filepath.Base(vol.Source) == "haproxy.cfg" && vol.ReadOnly
	}
	if !cfg {
		t.Errorf("%s does not mount haproxy.cfg read-only", lbService)
	}
}

// TestComposeFilesInStep: the two variants differ only in the database.
func TestComposeFilesInStep(t *testing.T) {
	t.Parallel()
	var nodes []map[string]types.ServiceConfig
	for _, v := range composeVariants {
		p, err := loadCompose(t, v.file, exampleEnv(t))
		if err != nil {
			t.Fatalf("%s: %v", v.file, err)
		}
		m := map[string]types.ServiceConfig{}
		for _, name := range append(slices.Clone(nodeNames), lbService) {
			s := p.Services[name]
			delete(s.Environment, "XJOB_DB")
			delete(s.DependsOn, v.db)
			s.Build, s.CustomLabels, s.Networks = nil, nil, nil
			m[name] = s
		}
		nodes = append(nodes, m)
	}
	for _, name := range slices.Sorted(maps.Keys(nodes[0])) {
		a, err := json.MarshalIndent(nodes[0][name], "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		b, err := json.MarshalIndent(nodes[1][name], "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(a, b) {
			t.Errorf("%s differs beyond the database:\n%s: %s\n%s: %s", name, composeVariants[0].file, a, composeVariants[1].file, b)
		}
	}
}

// TestComposeNeedsSecrets: without a token in the environment, compose
// refuses to start (rather than starting nodes with an empty one), and
// .env.example sets every variable the files read, with example values
// marked as such.
func TestComposeNeedsSecrets(t *testing.T) {
	t.Parallel()
	env := exampleEnv(t)
	for _, k := range []string{"XJOB_ADMIN_TOKEN", "XJOB_ACCESS_TOKEN", "XJOB_SESSION_KEY", "POSTGRES_PASSWORD", "MARIADB_PASSWORD"} {
		if !strings.Contains(env[k], "CHANGE-ME") {
			t.Errorf(".env.example: %s=%q is not marked CHANGE-ME", k, env[k])
		}
	}
	reference := regexp.MustCompile(`\$\{([A-Z0-9_]+)`)
	for _, v := range composeVariants {
		src := string(readFile(t, "compose/"+v.file))
		for _, m := range reference.FindAllStringSubmatch(src, -1) {
			if _, ok := env[m[1]]; !ok {
				t.Errorf("%s reads ${%s}, which .env.example does not set", v.file, m[1])
			}
		}
		for _, k := range []string{"XJOB_ADMIN_TOKEN", "XJOB_ACCESS_TOKEN", "XJOB_SESSION_KEY"} {
			without := maps.Clone(env)
			delete(without, k)
			if _, err := loadCompose(t, v.file, without); err == nil || !strings.Contains(err.Error(), k) {
				t.Errorf("%s without %s: err = %v, want one naming it", v.file, k, err)
			}
		}
	}
}

// haproxyConfig is what the deployment relies on in haproxy.cfg.
type haproxyConfig struct {
	binds        []string          // frontend bind addresses
	servers      map[string]string // backend server name → address
	checked      map[string]bool   // servers health-checked (own line or default-server)
	httpchk      string            // option httpchk's method and path
	expectStatus string            // http-check expect status
}

// parseHAProxy reads the sections and the lines of haproxy.cfg this test
// checks; the rest is haproxy's to validate (haproxy -c, TestHAProxyCheck).
func parseHAProxy(src string) haproxyConfig {
	c := haproxyConfig{servers: map[string]string{}, checked: map[string]bool{}}
	var section string
	defaultCheck := false
	sc := bufio.NewScanner(strings.NewReader(src))
	for sc.Scan() {
		line, _, _ := strings.Cut(sc.Text(), "#")
		w := strings.Fields(line)
		if len(w) == 0 {
			continue
		}
		switch w[0] {
		case "global", "defaults", "frontend", "backend", "listen", "resolvers", "peers", "userlist":
			section, defaultCheck = w[0], false
			continue
		}
		switch {
		case section == "frontend" && w[0] == "bind" && len(w) > 1:
			c.binds = append(c.binds, w[1])
		case section == "backend" && w[0] == "default-server":
			defaultCheck = slices.Contains(w[1:], "check")
		case section == "backend" && w[0] == "server" && len(w) > 2:
			c.servers[w[1]] = w[2]
			c.checked[w[1]] = defaultCheck || slices.Contains(w[3:], "check")
		case section == "backend" && len(w) >= 4 && w[0] == "option" && w[1] == "httpchk":
			c.httpchk = strings.Join(w[2:], " ")
		case section == "backend" && len(w) >= 4 && w[0] == "http-check" && w[1] == "expect" && w[2] == "status":
			c.expectStatus = w[3]
		}
	}
	return c
}

func TestHAProxyConfig(t *testing.T) {
	t.Parallel()
	c := parseHAProxy(string(readFile(t, "compose/haproxy.cfg")))
	want := map[string]string{}
	for _, n := range nodeNames {
		want[n] = fmt.Sprintf("%s:%d", n, serverPort)
	}
	if !maps.Equal(c.servers, want) {
		t.Errorf("backend servers %v, want %v", c.servers, want)
	}
	for _, n := range nodeNames {
		if !c.checked[n] {
			t.Errorf("server %s is not health-checked", n)
		}
	}
	if c.httpchk != "GET "+readinessPath || c.expectStatus != "200" {
		t.Errorf("health check %q expecting %q, want GET %s expecting 200", c.httpchk, c.expectStatus, readinessPath)
	}
	if !slices.Contains(c.binds, fmt.Sprintf(":%d", serverPort)) {
		t.Errorf("frontend binds %q, want :%d (the port compose publishes)", c.binds, serverPort)
	}
}

// haproxyBinary is Debian's haproxy, or a test failure naming the make
// target that installs it.
func haproxyBinary(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("needs haproxy (-short)")
	}
	path, err := exec.LookPath("haproxy")
	if err != nil {
		if _, statErr := os.Stat("/usr/sbin/haproxy"); statErr != nil {
			t.Fatal("haproxy is not installed: run `make haproxy` (Debian's haproxy package)")
		}
		path = "/usr/sbin/haproxy"
	}
	return path
}
