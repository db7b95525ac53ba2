package infra

import (
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	ctyfunction "github.com/zclconf/go-cty/cty/function"
	"github.com/zclconf/go-cty/cty/function/stdlib"

	"github.com/xjobdev/xjob/internal/adapter/awsconfig"
	"github.com/xjobdev/xjob/internal/app/lambdaapp/wiring"
)

// TestLogPagesCoverShards: a Shards and LogPages pair both deployments
// accept (SAM's rule LogPagesCoverShards, Terraform's precondition on the
// scan function) is one the functions accept, and the other way round:
// when Shards divides 16, LogPages must be a multiple of it. A pair the
// stack took but the functions refused would fail every invocation.
func TestLogPagesCoverShards(t *testing.T) {
	t.Parallel()
	rule := samRule(t, "LogPagesCoverShards")
	m, err := loadTerraformModule("terraform")
	if err != nil {
		t.Fatal(err)
	}
	cond := m.resources["aws_lambda_function"]["scan"].block("lifecycle").block("precondition").raw["condition"]
	expr, diags := hclsyntax.ParseExpression([]byte(cond), "precondition", hcl.InitialPos)
	if diags.HasErrors() {
		t.Fatalf("terraform: scan precondition %q: %v", cond, diags)
	}
	for _, shards := range []int{1, 2, 3, 4, 8, 16, 32, 4096} {
		for _, pages := range []int{1, 2, 4, 8, 16} {
			vars := map[string]string{awsconfig.EnvShards: strconv.Itoa(shards), awsconfig.EnvLogPages: strconv.Itoa(pages),
				awsconfig.EnvTablePrefix: "x", awsconfig.EnvAlarmTopicARN: "x", awsconfig.EnvDispatchFunction: "x", awsconfig.EnvRingQueueURL: "x"}
			_, err := wiring.LoadConfig("registry", func(k string) string { return vars[k] })
			code := err == nil
			sam := cfnRuleTrue(t, rule, map[string]string{"Shards": strconv.Itoa(shards), "LogPages": strconv.Itoa(pages)})
			v, diags := expr.Value(&hcl.EvalContext{
				Variables: map[string]cty.Value{"var": cty.ObjectVal(map[string]cty.Value{
					"shards": cty.NumberIntVal(int64(shards)), "log_pages": cty.NumberIntVal(int64(pages))})},
				Functions: map[string]ctyfunction.Function{"contains": stdlib.ContainsFunc},
			})
			if diags.HasErrors() || v.Type() != cty.Bool {
				t.Fatalf("terraform: precondition %q at shards %d, log_pages %d: %v %v", cond, shards, pages, v, diags)
			}
			if tf := v.True(); sam != code || tf != code {
				t.Errorf("Shards %d, LogPages %d: the functions accept it %v, SAM %v, Terraform %v", shards, pages, code, sam, tf)
			}
		}
	}
}

// samRule is the Assert of the template's rule name, intrinsics rendered
// as loadSAM renders them (!Ref X → "${X}").
func samRule(t *testing.T, name string) any {
	t.Helper()
	doc, err := readSAM("sam/template.yaml")
	if err != nil {
		t.Fatal(err)
	}
	asserts := listOf(mapOf(mapOf(doc["Rules"])[name])["Assertions"])
	if len(asserts) != 1 {
		t.Fatalf("sam: rule %s has %d assertions, want 1", name, len(asserts))
	}
	return mapOf(asserts[0])["Assert"]
}

// cfnRuleTrue evaluates a rule condition of Fn::Or, Fn::And, Fn::Not,
// Fn::Equals and Fn::Contains over parameter values.
func cfnRuleTrue(t *testing.T, v any, params map[string]string) bool {
	t.Helper()
	val := func(x any) string {
		s := fmt.Sprint(x)
		if len(s) > 3 && s[:2] == "${" && s[len(s)-1] == '}' {
			p, ok := params[s[2:len(s)-1]]
			if !ok {
				t.Fatalf("sam rule: unknown parameter %s", s)
			}
			return p
		}
		return s
	}
	m := mapOf(v)
	if len(m) != 1 {
		t.Fatalf("sam rule: %v is not one intrinsic", v)
	}
	for fn, arg := range m {
		args := listOf(arg)
		switch fn {
		case "Fn::Or", "Fn::And":
			or := fn == "Fn::Or"
			for _, a := range args {
				if cfnRuleTrue(t, a, params) == or {
					return or
				}
			}
			return !or
		case "Fn::Not":
			return !cfnRuleTrue(t, args[0], params)
		case "Fn::Equals":
			return val(args[0]) == val(args[1])
		case "Fn::Contains":
			var l []string
			for _, x := range listOf(args[0]) {
				l = append(l, val(x))
			}
			return slices.Contains(l, val(args[1]))
		}
		t.Fatalf("sam rule: %s is not evaluated here", fn)
	}
	return false
}

// TestLogPagesMakefile: make deploy-sam / deploy-tf pass LOG_PAGES, by
// default the parameter's default (a deployed stack keeps 16 pages).
func TestLogPagesMakefile(t *testing.T) {
	t.Parallel()
	mk, err := os.ReadFile("../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	if m := regexp.MustCompile(`(?m)^LOG_PAGES \?= (\d+)$`).FindSubmatch(mk); m == nil || string(m[1]) != exposedSettings[awsconfig.EnvLogPages] {
		t.Errorf("Makefile: LOG_PAGES default %q, want %s", m, exposedSettings[awsconfig.EnvLogPages])
	}
	for _, pass := range []string{"LogPages=$(LOG_PAGES)", "-var log_pages=$(LOG_PAGES)"} {
		if !strings.Contains(string(mk), pass) {
			t.Errorf("Makefile: no %s: make deploy-* would deploy the parameter's default whatever LOG_PAGES says", pass)
		}
	}
}
