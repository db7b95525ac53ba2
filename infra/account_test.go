package infra

import (
	"fmt"
	"maps"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/xjobdev/xjob/internal/adapter/awsconfig"
	"github.com/xjobdev/xjob/internal/adapter/dynamostore"
)

// TestDeploysOnDefaultAccount: both stacks reserve no concurrency unless
// asked (a reservation that leaves fewer than 100 unreserved is refused,
// and new accounts start with quotas far below the 124 the reservations
// need), and the deploy's quota check knows what the reservations add up
// to.
func TestDeploysOnDefaultAccount(t *testing.T) {
	t.Parallel()
	sam, tf := loadStacks(t)
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

// TestProvisionedOption: with TableBillingMode PROVISIONED, every part of
// the steady tables — the table and each of its indexes — has a scalable
// target for reads and one for writes between the capacity bounds, each
// with a target-tracking policy at the target utilisation, and its
// starting capacity; in both stacks.
func TestProvisionedOption(t *testing.T) {
	t.Parallel()
	type part struct{ table, index string }
	var parts []part
	specs := dynamostore.TableSpecs(dynamostore.TablesWithPrefix(""))
	for _, s := range specs {
		short := strings.TrimPrefix(*s.TableName, "-")
		if !slices.Contains(awsconfig.SteadyTables, short) {
			continue
		}
		parts = append(parts, part{short, ""})
		for _, g := range s.GlobalSecondaryIndexes {
			parts = append(parts, part{short, *g.IndexName})
		}
	}
	samLogical := map[string]string{dynamostore.TableJobs: "JobsTable", dynamostore.TableLogs: "LogsTable"}
	tfName := map[string]string{dynamostore.TableJobs: "jobs", dynamostore.TableLogs: "log_pages"}

	// SAM: the targets and policies, under the ProvisionedTables condition.
	doc, err := readSAM("sam/template.yaml")
	if err != nil {
		t.Fatal(err)
	}
	resources := mapOf(doc["Resources"])
	targets := map[string]string{} // "resource id dimension" → logical id
	policies := map[string]map[string]any{}
	for id, r := range resources {
		rm := mapOf(r)
		props := mapOf(rm["Properties"])
		switch rm["Type"] {
		case "AWS::ApplicationAutoScaling::ScalableTarget":
			if rm["Condition"] != "ProvisionedTables" || props["MinCapacity"] != "${TableCapacityMin}" || props["MaxCapacity"] != "${TableCapacityMax}" {
				t.Errorf("sam: %s: condition %v, capacity %v..%v; want ProvisionedTables, TableCapacityMin..TableCapacityMax", id, rm["Condition"], props["MinCapacity"], props["MaxCapacity"])
			}
			targets[str(props["ResourceId"])+" "+str(props["ScalableDimension"])] = id
		case "AWS::ApplicationAutoScaling::ScalingPolicy":
			policies[str(props["ScalingTargetId"])] = props
		}
	}
	for _, p := range parts {
		for _, dim := range []string{"Read", "Write"} {
			id, kind := "table/${"+samLogical[p.table]+"}", "table"
			if p.index != "" {
				id, kind = id+"/index/"+p.index, "index"
			}
			key := id + " dynamodb:" + kind + ":" + dim + "CapacityUnits"
			target, ok := targets[key]
			if !ok {
				t.Errorf("sam: no scalable target %s", key)
				continue
			}
			delete(targets, key)
			pol := policies["${"+target+"}"]
			cfg := mapOf(pol["TargetTrackingScalingPolicyConfiguration"])
			if pol["PolicyType"] != "TargetTrackingScaling" || cfg["TargetValue"] != "${TableTargetUtilization}" ||
				mapOf(cfg["PredefinedMetricSpecification"])["PredefinedMetricType"] != "DynamoDB"+dim+"CapacityUtilization" {
				t.Errorf("sam: scalable target %s: policy %v, want target tracking of DynamoDB%sCapacityUtilization at TableTargetUtilization", target, pol, dim)
			}
		}
	}
	for key, id := range targets {
		t.Errorf("sam: scalable target %s (%s) on no steady table part", id, key)
	}

	// Terraform: the parts the for_each expands over, and the resources
	// that expand over them.
	tf, err := loadTerraformModule("terraform")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	if l, ok := tf.locals["scaled_parts"]; ok {
		for _, id := range mapOf(tf.eval(l.e, l.src, 0)) {
			got[str(id)] = true
		}
	}
	for _, p := range parts {
		id := "table/${aws_dynamodb_table." + tfName[p.table] + ".name}"
		if p.index != "" {
			id += "/index/" + p.index
		}
		if !got[id] {
			t.Errorf("terraform: local.scaled_parts lacks %s", id)
		}
		delete(got, id)
	}
	for id := range got {
		t.Errorf("terraform: local.scaled_parts has %s, no steady table part", id)
	}
	for _, typ := range []string{"aws_appautoscaling_target", "aws_appautoscaling_policy"} {
		if r := tf.resources[typ]["table"]; r == nil || r.raw["for_each"] != "local.scaled" {
			t.Errorf("terraform: %s.table does not expand over local.scaled", typ)
		}
	}
}

// TestTerraformExpandsOverOneMap: the per-function roles, role policies
// and alarms expand over local.functions, whose keys are exactly
// awsconfig.Functions, and the queues and their dead-letter queues and
// alarms over local.queues, so a change to one of them is made once.
func TestTerraformExpandsOverOneMap(t *testing.T) {
	t.Parallel()
	m, err := loadTerraformModule("terraform")
	if err != nil {
		t.Fatal(err)
	}
	keys := func(local string) []string {
		l, ok := m.locals[local]
		if !ok {
			t.Fatalf("no local.%s", local)
		}
		return slices.Sorted(maps.Keys(mapOf(m.eval(l.e, l.src, 0))))
	}
	var fns []string
	for _, f := range awsconfig.Functions {
		fns = append(fns, f.Name)
	}
	slices.Sort(fns)
	if got := keys("functions"); !slices.Equal(got, fns) {
		t.Errorf("local.functions has %v, want awsconfig.Functions %v", got, fns)
	}
	if got := keys("queues"); !slices.Equal(got, []string{"results", "ring"}) {
		t.Errorf("local.queues has %v", got)
	}
	for _, r := range []struct{ typ, name, over string }{
		{"aws_iam_role", "function", "functions"}, {"aws_iam_role_policy", "function", "functions"},
		{"aws_cloudwatch_metric_alarm", "function_errors", "functions"}, {"aws_cloudwatch_metric_alarm", "function_throttles", "functions"},
		{"aws_sqs_queue", "queue", "queues"}, {"aws_sqs_queue", "dlq", "queues"}, {"aws_cloudwatch_metric_alarm", "dlq", "queues"},
		{"aws_cloudwatch_metric_alarm", "table_throttles", "tables"},
	} {
		var n int
		for name, b := range m.resources[r.typ] {
			if strings.HasPrefix(name, r.name+"[") {
				n++
				if b.raw["for_each"] != "local."+r.over {
					t.Errorf("%s.%s: for_each %q, want local.%s", r.typ, name, b.raw["for_each"], r.over)
				}
			}
		}
		if want := len(keys(r.over)); n != want {
			t.Errorf("%s.%s: %d instances, want one per key of local.%s (%d)", r.typ, r.name, n, r.over, want)
		}
	}
	// No per-function or per-queue copy is left beside the expansions
	// (the conditional policies aside: a VPC's, AWS targets').
	for _, typ := range []string{"aws_iam_role", "aws_iam_role_policy", "aws_sqs_queue"} {
		for name := range m.resources[typ] {
			// The lanes' on-failure destination is a dead-letter queue of no
			// queue: no redrive to it, no consumer, so outside local.queues.
			if !strings.Contains(name, "[") && !strings.HasSuffix(name, "_vpc") && !strings.HasSuffix(name, "_targets") && name != "dispatch_dlq" {
				t.Errorf("%s.%s: a copy outside the for_each expansion", typ, name)
			}
		}
	}
}
