package infra

import (
	"fmt"
	"os"
	"regexp"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/xjobdev/xjob/internal/adapter/awsconfig"
)

// TestDeploysOnDefaultAccount: both stacks reserve no concurrency unless
// asked (a reservation that leaves fewer than 100 unreserved is refused,
// and new accounts start with quotas far below the 124 the reservations
// need), and the deploy's quota check knows what the reservations add up
// to.
func TestDeploysOnDefaultAccount(t *testing.T) {
	t.Parallel()
	sam, err := loadSAM("sam/template.yaml")
	if err != nil {
		t.Fatal(err)
	}
	tf, err := loadTerraform("terraform")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []*stack{sam, tf} {
		p, ok := s.params["reservedconcurrency"]
		if !ok {
			t.Errorf("%s: no ReservedConcurrency parameter", s.format)
			continue
		}
		if def := fmt.Sprint(p.def); def != "false" {
			t.Errorf("%s: ReservedConcurrency defaults to %s, want false (deployable on a new account)", s.format, def)
		}
	}
	script, err := os.ReadFile("check-concurrency.sh")
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]int{"RESERVED_TOTAL": awsconfig.ReservedTotal(), "MIN_UNRESERVED": awsconfig.MinUnreservedConcurrency} {
		m := regexp.MustCompile(`(?m)^` + name + `=([0-9]+)$`).FindSubmatch(script)
		if m == nil || string(m[1]) != fmt.Sprint(want) {
			t.Errorf("check-concurrency.sh: %s=%s, want %d (awsconfig)", name, m, want)
		}
	}
}

// TestSAMDeletionPolicies: every table, queue and log group says what a
// stack deletion or replacement does to it; tables keep their data.
func TestSAMDeletionPolicies(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("sam/template.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Resources map[string]struct {
			Type                string `yaml:"Type"`
			DeletionPolicy      string `yaml:"DeletionPolicy"`
			UpdateReplacePolicy string `yaml:"UpdateReplacePolicy"`
		} `yaml:"Resources"`
	}
	if err := yaml.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"AWS::DynamoDB::Table": "Retain", "AWS::SQS::Queue": "Delete", "AWS::Logs::LogGroup": "Delete"}
	seen := map[string]int{}
	for id, r := range doc.Resources {
		w, ok := want[r.Type]
		if !ok {
			continue
		}
		seen[r.Type]++
		if r.DeletionPolicy != w || r.UpdateReplacePolicy != w {
			t.Errorf("%s (%s): DeletionPolicy %q UpdateReplacePolicy %q, want %s for both", id, r.Type, r.DeletionPolicy, r.UpdateReplacePolicy, w)
		}
	}
	for typ := range want {
		if seen[typ] == 0 {
			t.Errorf("no %s in the template", typ)
		}
	}
}
