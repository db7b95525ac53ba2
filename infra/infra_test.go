package infra

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/xjobdev/xjob/internal/adapter/awsconfig"
	"github.com/xjobdev/xjob/internal/adapter/dynamostore"
	"github.com/xjobdev/xjob/internal/app/lambdaapp"
	"github.com/xjobdev/xjob/internal/app/lambdaapp/wiring"
)

// The checks below run on a neutral model (stack) that each loader builds
// from its format: sam_test.go from the SAM template, terraform_test.go from
// the .tf files. References are reduced to symbols so that both formats
// compare with one expectation computed from the code:
//
//	table:<name>          a table's ARN (name = dynamostore.Table* constant)
//	index:<name>          <table ARN>/index/*
//	queue:<key>           a queue's ARN (key = QueueName after the stack prefix: ring, dispatch-fast, …)
//	queue:<key>:url       a queue's URL
//	topic:<key>           a topic's ARN (key = TopicName after the stack prefix)
//	loggroup:<fn>         a function log group's ARN (with :* so it covers its streams)
//	loggroupname:<fn>     its name
//	param:<name>          a parameter/variable, name lower-cased without _ (TablePrefix = table_prefix)
//	httpapi:endpoint      the HTTP API's base address (https://…execute-api…)
//	functionurl:<fn>      function fn's function URL
//	function:<fn>         function fn's name or ARN (built from the stack name, not a
//	                      reference, which would make a function depend on itself)
//
// Anything else stays as rendered ("${...}") and shows up verbatim in a
// failure message.

// prefixPlaceholder replaces the table-prefix reference (SAM
// ${TablePrefix}, Terraform ${var.table_prefix}) in table names.
const prefixPlaceholder = "PREFIX"

// stack is one format's description of the deployment, reduced to what
// the code constrains.
type stack struct {
	format    string
	tables    map[string]table    // by table name with the prefix placeholder
	queues    map[string]queue    // by queue key
	functions map[string]function // by awsconfig name
	routes    map[string]string   // "GET /v1/jobs" → function name
	urls      map[string]string   // function name → its function URL's AuthType
	// public are the permissions that let anyone ("*") invoke a function,
	// by function: "lambda:InvokeFunctionUrl NONE" (through a URL of
	// AuthType NONE), "lambda:InvokeFunction url" (invoked via a function
	// URL); any other is rendered as found.
	public    map[string]map[string]bool
	schedules map[string][]string // function name → schedule expressions of rules targeting it
	params    map[string]param    // by normalized name
	outputs   map[string]string   // normalized output name → rendered value
	logGroups map[string]any      // loggroupname:<fn> → retention in days
	alarms    []alarm
	// conds are what each recognised condition means: "nonempty:param:x",
	// parameter x is set (SAM !Not [!Equals [!Ref X, ""]], a Terraform
	// local var.x != "").
	conds    map[string]string
	problems []string // structural problems found while loading
}

type table struct {
	attrs       map[string]string // attribute → S|N|B
	hash, rng   string
	gsis        map[string]gsi
	ttl         string // TTL attribute, "" when off
	pitr        bool
	billingMode string // by default
	// provisionable says the stack's TableBillingMode can put the table on
	// provisioned capacity (awsconfig.SteadyTables).
	provisionable bool
	retain        bool // survives stack deletion and replacement (SAM Retain, Terraform prevent_destroy)
}

type gsi struct{ hash, rng, projection string }

// alarm is one CloudWatch alarm: the metrics it watches (metricKey, one
// per metric of a metric-math alarm), its actions and missing-data rule.
type alarm struct {
	name    string
	metrics []string
	actions []string
	missing string
}

// metricKey is "namespace metric dim=value,…" with the dimensions sorted.
func metricKey(namespace, metric string, dims map[string]string) string {
	var ds []string
	for _, k := range slices.Sorted(maps.Keys(dims)) {
		ds = append(ds, k+"="+dims[k])
	}
	return namespace + " " + metric + " " + strings.Join(ds, ",")
}

type queue struct {
	visibility int // seconds
	dlq        string
	maxReceive int
}

type function struct {
	handler, runtime string
	archs            []string
	code             string // repository-relative path of the zip
	timeout          int
	memory           any                 // MB: literal or param symbol
	env              map[string]string   // variable → symbol
	grants           map[string]bool     // "action resource"
	consumes         map[string]consumer // by queue key
	logGroup         string              // symbol of LoggingConfig's group
	logFormat        string              // LoggingConfig's format
	systemLogLevel   string              // literal or param symbol
	appLogLevel      string              // literal or param symbol
	reserved         int                 // reserved concurrency, -1 when unset
	asyncRetries     int                 // asynchronous invocation retries, -1 when unset (Lambda: 2)
	asyncMaxAge      int                 // maximum event age in seconds, -1 when unset
	failureDest      string              // symbol of the asynchronous failure destination
	// vpcCond is the condition (SAM condition name, Terraform condition
	// expression) under which the function gets a VpcConfig from the VPC
	// parameters; "" for none. condGrants are the grants its role holds
	// only under a condition, by condition.
	vpcCond    string
	condGrants map[string]map[string]bool
}

type consumer struct {
	batchItemFailures bool
	maxConcurrency    any // literal or param symbol
	batchSize         int
}

type param struct {
	def    any
	secret bool
	// What a deploy accepts: a pattern the whole value must match, a list
	// of allowed values, a numeric range (nil: unbounded).
	pattern  string
	allowed  []string
	min, max *float64
	whole    bool // a whole number only (Terraform floor(var.x) == var.x)
}

// Expectations the code does not spell as data.
var (
	// ttlTables are the tables whose items carry dynamostore.AttrPurgeAt
	// (dynamostore doc: logs, occurrence markers, registry entries, the
	// console's sign-in attempt counters and signed-out sessions, and
	// misfire episodes' leases).
	ttlTables = []string{dynamostore.TableLogs, dynamostore.TableRegistry, dynamostore.TableConsole, dynamostore.TableLeases}
	// wantSchedules are the EventBridge rules per function.
	wantSchedules = map[string][]string{"scan": {"rate(1 minute)"}, "registry": {"rate(1 minute)"}}
	// queueOfEnv names the queue behind each queue-URL variable.
	queueOfEnv = map[string]string{
		awsconfig.EnvRingQueueURL:    "ring",
		awsconfig.EnvDispatchFastURL: "dispatch-fast",
		awsconfig.EnvDispatchSlowURL: "dispatch-slow",
		awsconfig.EnvResultsQueueURL: "results",
	}
	// envSymbol is what each variable must be set from.
	envSymbol = map[string]string{
		awsconfig.EnvTablePrefix:            "param:tableprefix",
		awsconfig.EnvShards:                 "param:shards",
		awsconfig.EnvLogPages:               "param:logpages",
		awsconfig.EnvRingQueueURL:           "queue:ring:url",
		awsconfig.EnvDispatchFastURL:        "queue:dispatch-fast:url",
		awsconfig.EnvDispatchSlowURL:        "queue:dispatch-slow:url",
		awsconfig.EnvAccessTokenParam:       "param:accesstokenparameter",
		awsconfig.EnvAdminTokenParam:        "param:admintokenparameter",
		awsconfig.EnvSessionKeyParam:        "param:sessionkeyparameter",
		awsconfig.EnvSecretsRefresh:         "param:secretsrefresh",
		awsconfig.EnvResultsQueueURL:        "queue:results:url",
		awsconfig.EnvAlarmTopicARN:          "topic:alarms",
		awsconfig.EnvLogLevel:               "param:loglevel",
		awsconfig.EnvRetryDelay:             "param:retrydelay",
		awsconfig.EnvRetryBackoff:           "param:retrybackoff",
		awsconfig.EnvAnyTriggerAddress:      "param:allowanytriggeraddress",
		awsconfig.EnvStartDeclaredJobs:      "param:startdeclaredjobs",
		awsconfig.EnvScanAdvance:            "param:scanadvance",
		awsconfig.EnvAllowCIDRs:             "param:executorallowcidrs",
		awsconfig.EnvDenyCIDRs:              "param:executordenycidrs",
		awsconfig.EnvGluePolicy:             "param:gluepolicy",
		awsconfig.EnvWebURL:                 "httpapi:endpoint",
		awsconfig.EnvMetricsPerJob:          "param:metricsperjob",
		awsconfig.EnvCustomMetrics:          "param:custommetrics",
		awsconfig.EnvRingLead:               "param:ringlead",
		awsconfig.EnvLogRetentionDays:       "param:triggerlogretentiondays",
		awsconfig.EnvAWSTargetARNs:          "param:awstargetarns",
		awsconfig.EnvDispatchFunction:       "function:" + laneFunction,
		awsconfig.EnvTableBillingMode:       "param:tablebillingmode",
		awsconfig.EnvTableCapacityMin:       "param:tablecapacitymin",
		awsconfig.EnvTableCapacityMax:       "param:tablecapacitymax",
		awsconfig.EnvTableTargetUtilization: "param:tabletargetutilization",
	}
	// functionMemoryMB is every function's memory but the ring's, the
	// ring memory parameter's default: what the cost meter prices
	// (docs/cost.md); ringMemoryParam is the ring's, the deployer's choice
	// between CPU for busy buckets and cost for sparse loads.
	functionMemoryMB, ringMemoryParam = 256, "param:ringmemorysize"
	// laneFunction is the function the lanes invoke asynchronously
	// (awsconfig.EnvDispatchFunction), laneDestination the queue key of
	// its on-failure destination: a dead-letter queue nothing consumes.
	laneFunction, laneDestination = "dispatch", "dispatch-dlq"
	// laneRetries is Lambda's retry count of a failed lane event, the one
	// internal/testenv/awsstack emulates; laneMaxAgeMin is the least
	// maximum event age that lets all three attempts run (Lambda waits
	// about 1 then 2 minutes before its retries; each attempt may take
	// the function's timeout), laneMaxAgeMax Lambda's ceiling (6 h).
	laneRetries, laneMaxAgeMin, laneMaxAgeMax = 2, 180, 21600
	// exposedSettings are optional variables the deployment must let an
	// operator set on every function that reads them, with their safe
	// defaults: switches off, no extra executor ranges, GLUE for admins,
	// trigger logs kept 30 days, no AWS targets, no custom metrics (each
	// one billed; no alarm reads them), 16 log pages a second (the store's
	// layout before the setting).
	exposedSettings = map[string]string{
		awsconfig.EnvAnyTriggerAddress: "false", awsconfig.EnvStartDeclaredJobs: "false", awsconfig.EnvCustomMetrics: "false",
		awsconfig.EnvRingLead:   wiring.DefaultRingLead.String(),
		awsconfig.EnvAllowCIDRs: "", awsconfig.EnvDenyCIDRs: "", awsconfig.EnvGluePolicy: "admins",
		awsconfig.EnvLogRetentionDays: "30", awsconfig.EnvAWSTargetARNs: "",
		awsconfig.EnvLogPages: "16",
	}
	// vpcGrants are what a function in a VPC needs for Lambda to manage
	// its network interfaces (AWSLambdaVPCAccessExecutionRole without its
	// logs actions): the Describe actions cannot be scoped to a resource,
	// the others are scoped to the account's and region's EC2 resources.
	vpcGrants = map[string]bool{
		"ec2:DescribeNetworkInterfaces *": true, "ec2:DescribeSubnets *": true,
		"ec2:CreateNetworkInterface ec2:thisaccount": true, "ec2:DeleteNetworkInterface ec2:thisaccount": true,
		"ec2:AssignPrivateIpAddresses ec2:thisaccount": true, "ec2:UnassignPrivateIpAddresses ec2:thisaccount": true,
	}
	// inClear are the variables that carry a token itself (tests only):
	// no template may set them, nor take a token as a parameter, which
	// would put it in the functions' configuration, the stack or the
	// Terraform state.
	inClear = []string{awsconfig.EnvAccessToken, awsconfig.EnvAdminToken}
	// consumeActions are what an SQS event source mapping needs on its
	// queue (AWSLambdaSQSQueueExecutionRole, scoped to the queue).
	consumeActions = []string{"sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:GetQueueAttributes", "sqs:ChangeMessageVisibility"}
	logActions     = []string{"logs:CreateLogStream", "logs:PutLogEvents"}
)

// iamAction maps an SDK operation name (as awsconfig may record it from a
// request counter) to the IAM action that authorizes it.
func iamAction(a string) string {
	switch a {
	case "sqs:SendMessageBatch":
		return "sqs:SendMessage"
	case "sqs:DeleteMessageBatch":
		return "sqs:DeleteMessage"
	case "sqs:ChangeMessageVisibilityBatch":
		return "sqs:ChangeMessageVisibility"
	case "sns:PublishBatch":
		return "sns:Publish"
	}
	return a
}

// deployedEnv is the variables of f the deployment sets: the required
// ones and the optional ones its template sets (set). awsconfig lists
// both shapes of the lanes (asynchronous invocations, or the lane queue
// URLs); the grants and event sources follow the one deployed.
func deployedEnv(f awsconfig.Function, set map[string]string) []string {
	env := slices.Clone(f.Env)
	for _, e := range f.OptionalEnv {
		if _, ok := set[e]; ok {
			env = append(env, e)
		}
	}
	return env
}

// wantGrants is the exact "action resource" set function f may hold,
// given the variables its template sets (set).
func wantGrants(t *testing.T, f awsconfig.Function, set map[string]string) map[string]bool {
	t.Helper()
	env := deployedEnv(f, set)
	specs := dynamostore.TableSpecs(dynamostore.TablesWithPrefix(""))
	g := map[string]bool{}
	for _, raw := range f.Actions {
		a := iamAction(raw)
		svc, _, ok := strings.Cut(a, ":")
		if !ok || strings.Contains(a, "*") {
			t.Errorf("awsconfig %s: action %q must be service:Operation without wildcards", f.Name, raw)
			continue
		}
		switch svc {
		case "dynamodb":
			// Only the tables the function uses (awsconfig Tables).
			if len(f.Tables) == 0 {
				t.Errorf("awsconfig %s: action %s but no Tables", f.Name, raw)
			}
			for _, tb := range f.ActionTables(a) {
				if !slices.Contains(f.Tables, tb) {
					t.Errorf("awsconfig %s: TableActions gives %s table %s, which is not in Tables", f.Name, a, tb)
				}
			}
			for _, s := range specs {
				if !slices.Contains(f.ActionTables(a), *s.TableName) {
					continue
				}
				g[a+" table:"+*s.TableName] = true
				if a == "dynamodb:Query" && len(s.GlobalSecondaryIndexes) > 0 {
					g[a+" index:"+*s.TableName] = true
				}
			}
		case "sqs":
			n := 0
			for _, e := range env {
				if q, ok := queueOfEnv[e]; ok {
					g[a+" queue:"+q] = true
					n++
				}
			}
			if n == 0 {
				t.Errorf("awsconfig %s: action %s but no queue URL variable in Env", f.Name, raw)
			}
		case "ssm":
			// Exactly the function's own secret parameters.
			n := 0
			for _, e := range env {
				if _, ok := awsconfig.SecretParams[e]; ok {
					g[a+" ssmparam:"+strings.TrimPrefix(envSymbol[e], "param:")] = true
					n++
				}
			}
			if n == 0 {
				t.Errorf("awsconfig %s: action %s but no secret parameter variable in Env", f.Name, raw)
			}
		case "lambda":
			// The lanes: invoking exactly the dispatch function, when the
			// deployment carries them on its asynchronous invocations.
			if a != "lambda:InvokeFunction" || !slices.Contains(env, awsconfig.EnvDispatchFunction) {
				t.Errorf("awsconfig %s: action %s: only lambda:InvokeFunction of the lanes' function (%s set) is granted", f.Name, raw, awsconfig.EnvDispatchFunction)
				continue
			}
			g[a+" "+envSymbol[awsconfig.EnvDispatchFunction]] = true
		case "sns":
			if !slices.Contains(env, awsconfig.EnvAlarmTopicARN) {
				t.Errorf("awsconfig %s: action %s but %s not in Env", f.Name, raw, awsconfig.EnvAlarmTopicARN)
			}
			g[a+" topic:alarms"] = true
		default:
			t.Errorf("awsconfig %s: action %s: the infra test has no resource rule for service %q; extend wantGrants and the templates", f.Name, raw, svc)
		}
	}
	for _, e := range deployedConsumes(f, set) {
		for _, a := range consumeActions {
			g[a+" queue:"+queueOfEnv[e]] = true
		}
	}
	for _, a := range logActions {
		g[a+" loggroup:"+f.Name] = true
	}
	if f.NoAsyncRetries { // the failure destination: the alarm topic
		g["sns:Publish topic:alarms"] = true
	}
	if f.Name == laneFunction { // Lambda sends a failed lane event with the function's role
		g["sqs:SendMessage queue:"+laneDestination] = true
	}
	return g
}

// deployedConsumes is f's awsconfig Consumes whose variable the
// deployment sets.
func deployedConsumes(f awsconfig.Function, set map[string]string) []string {
	env := deployedEnv(f, set)
	var c []string
	for _, e := range f.Consumes {
		if slices.Contains(env, e) {
			c = append(c, e)
		}
	}
	return c
}

// describeGrants renders a grant set as statements (actions grouped by
// identical resource lists), to paste into a template when re-syncing.
func describeGrants(g map[string]bool) string {
	byAction := map[string][]string{}
	for k := range g {
		a, r, _ := strings.Cut(k, " ")
		byAction[a] = append(byAction[a], r)
	}
	byRes := map[string][]string{}
	for a, rs := range byAction {
		sort.Strings(rs)
		key := strings.Join(rs, ", ")
		byRes[key] = append(byRes[key], a)
	}
	var b strings.Builder
	for _, key := range slices.Sorted(maps.Keys(byRes)) {
		as := byRes[key]
		sort.Strings(as)
		fmt.Fprintf(&b, "\n      Action [%s] on [%s]", strings.Join(as, ", "), key)
	}
	if b.Len() == 0 {
		return " none"
	}
	return b.String()
}

func diffSets(want, got map[string]bool) (missing, extra []string) {
	for k := range want {
		if !got[k] {
			missing = append(missing, k)
		}
	}
	for k := range got {
		if !want[k] {
			extra = append(extra, k)
		}
	}
	sort.Strings(missing)
	sort.Strings(extra)
	return missing, extra
}

func setOf(l []string) map[string]bool {
	m := map[string]bool{}
	for _, k := range l {
		m[k] = true
	}
	return m
}

func intOf(v any) (int, bool) {
	switch n := v.(type) {
	case int:
		return n, true
	case int64:
		return int(n), true
	case float64:
		return int(n), n == float64(int(n))
	case string:
		var i int
		if _, err := fmt.Sscanf(n, "%d", &i); err == nil && fmt.Sprint(i) == n {
			return i, true
		}
	}
	return 0, false
}

// resolve returns a parameter's default for a param symbol, else v.
func (s *stack) resolve(v any) any {
	if str, ok := v.(string); ok && strings.HasPrefix(str, "param:") {
		if p, ok := s.params[strings.TrimPrefix(str, "param:")]; ok {
			return p.def
		}
	}
	return v
}

// check compares s with the code and reports every difference.
func check(t *testing.T, s *stack) {
	t.Helper()
	for _, p := range s.problems {
		t.Errorf("%s: %s", s.format, p)
	}
	checkTables(t, s)
	checkFunctions(t, s)
	checkRoutesAndSchedules(t, s)
	checkFunctionURLs(t, s)
	checkAlarms(t, s)
	for name, p := range s.params {
		if p.secret || strings.HasSuffix(name, "token") || strings.HasSuffix(name, "key") {
			t.Errorf("%s: parameter %s takes a secret: secrets are SSM parameters, the stack takes their names", s.format, name)
		}
	}
	for fn, f := range s.functions {
		for _, e := range inClear {
			if _, ok := f.env[e]; ok {
				t.Errorf("%s: function %s sets %s: a token in clear in the function's configuration", s.format, fn, e)
			}
		}
	}
	found, executors := false, false
	for name, v := range s.outputs {
		if strings.Contains(name, "adminurl") && strings.Contains(v, "httpapi:endpoint") {
			found = true
		}
		if strings.Contains(name, "executor") && strings.Contains(name, "url") && v == "functionurl:"+awsconfig.URLFunction() {
			executors = true
		}
	}
	if !found {
		t.Errorf("%s: no admin URL output (an output named like admin_url referencing the HTTP API); outputs: %v", s.format, s.outputs)
	}
	if !executors {
		t.Errorf("%s: no output of the executors' admin address (named like executor_admin_url, the %s function's URL); outputs: %v",
			s.format, awsconfig.URLFunction(), s.outputs)
	}
}

// checkFunctionURLs wants a function URL with AuthType NONE on the
// function awsconfig gives URLRoutes, and on no other; the permissions a
// NONE URL needs since October 2025 (lambda:InvokeFunctionUrl for
// FunctionUrlAuthType NONE and lambda:InvokeFunction invoked via the URL,
// both for "*") on it, and no public permission on any function. The
// access check is the function's (the xxl-job access token), and the
// HTTP API has no route to it (checkRoutesAndSchedules).
func checkFunctionURLs(t *testing.T, s *stack) {
	t.Helper()
	for _, f := range awsconfig.Functions {
		auth, has := s.urls[f.Name]
		var want map[string]bool
		if len(f.URLRoutes) > 0 {
			want = map[string]bool{"lambda:InvokeFunctionUrl NONE": true, "lambda:InvokeFunction url": true}
			if auth != "NONE" {
				t.Errorf("%s: function %s: function URL AuthType %q (present %v), want NONE (the executors' admin address; the function checks the access token)",
					s.format, f.Name, auth, has)
			}
		} else if has {
			t.Errorf("%s: function %s has a function URL; awsconfig gives it no URLRoutes", s.format, f.Name)
		}
		if missing, extra := diffSets(want, s.public[f.Name]); len(missing)+len(extra) > 0 {
			t.Errorf("%s: function %s: public invoke permissions missing %v, extra %v", s.format, f.Name, missing, extra)
		}
	}
	for fn := range s.public {
		if _, ok := awsconfig.Lookup(fn); !ok {
			t.Errorf("%s: public permission on unknown function %s", s.format, fn)
		}
	}
}

func checkTables(t *testing.T, s *stack) {
	t.Helper()
	want := map[string]bool{}
	for _, spec := range dynamostore.TableSpecs(dynamostore.TablesWithPrefix(prefixPlaceholder)) {
		name := *spec.TableName
		short := strings.TrimPrefix(name, prefixPlaceholder+"-")
		want[name] = true
		got, ok := s.tables[name]
		if !ok {
			t.Errorf("%s: table %q (dynamostore %s) is missing", s.format, name, short)
			continue
		}
		where := fmt.Sprintf("%s: table %s", s.format, short)
		attrs := map[string]string{}
		for _, a := range spec.AttributeDefinitions {
			attrs[*a.AttributeName] = string(a.AttributeType)
		}
		if !maps.Equal(attrs, got.attrs) {
			t.Errorf("%s: attribute definitions %v, dynamostore.TableSpecs has %v", where, got.attrs, attrs)
		}
		hash, rng := keyOf(spec.KeySchema)
		if got.hash != hash || got.rng != rng {
			t.Errorf("%s: key (%q, %q), dynamostore.TableSpecs has (%q, %q)", where, got.hash, got.rng, hash, rng)
		}
		wantG := map[string]gsi{}
		for _, g := range spec.GlobalSecondaryIndexes {
			h, r := keyOf(g.KeySchema)
			wantG[*g.IndexName] = gsi{h, r, string(g.Projection.ProjectionType)}
		}
		if !maps.Equal(wantG, got.gsis) {
			t.Errorf("%s: global secondary indexes\n   got  %v\n   want %v (dynamostore.TableSpecs)", where, got.gsis, wantG)
		}
		if steady := slices.Contains(awsconfig.SteadyTables, short); got.provisionable != steady {
			t.Errorf("%s: TableBillingMode option %v, want it exactly on awsconfig.SteadyTables (%v)", where, got.provisionable, steady)
		}
		if got.billingMode != "PAY_PER_REQUEST" {
			t.Errorf("%s: billing mode %q, want PAY_PER_REQUEST (on-demand)", where, got.billingMode)
		}
		if !got.pitr {
			t.Errorf("%s: point-in-time recovery is not enabled", where)
		}
		if !got.retain {
			t.Errorf("%s: not retained: a stack deletion or replacement would drop the data (SAM DeletionPolicy and UpdateReplacePolicy Retain; Terraform lifecycle prevent_destroy)", where)
		}
		wantTTL := ""
		if slices.Contains(ttlTables, short) {
			wantTTL = dynamostore.AttrPurgeAt
		}
		if got.ttl != wantTTL {
			t.Errorf("%s: TTL attribute %q, want %q", where, got.ttl, wantTTL)
		}
	}
	for name := range s.tables {
		if !want[name] {
			t.Errorf("%s: table %q is not in dynamostore.TableSpecs", s.format, name)
		}
	}
}

func keyOf(ks []types.KeySchemaElement) (hash, rng string) {
	for _, k := range ks {
		if k.KeyType == types.KeyTypeHash {
			hash = *k.AttributeName
		} else {
			rng = *k.AttributeName
		}
	}
	return hash, rng
}

func checkFunctions(t *testing.T, s *stack) {
	t.Helper()
	known := map[string]bool{}
	for _, f := range awsconfig.Functions {
		known[f.Name] = true
		got, ok := s.functions[f.Name]
		if !ok {
			t.Errorf("%s: function %s (awsconfig) is missing", s.format, f.Name)
			continue
		}
		where := fmt.Sprintf("%s: function %s", s.format, f.Name)
		if got.handler != "bootstrap" || got.runtime != "provided.al2023" || !slices.Equal(got.archs, []string{"arm64"}) {
			t.Errorf("%s: handler %q runtime %q architectures %v, want bootstrap, provided.al2023, [arm64]", where, got.handler, got.runtime, got.archs)
		}
		if want := "dist/" + f.Name + ".zip"; got.code != want {
			t.Errorf("%s: code %q, want %q (make build-lambda output)", where, got.code, want)
		}
		if mb, ok := intOf(s.resolve(got.memory)); got.timeout < 1 || got.timeout > 900 || !ok || mb < 128 || mb > 10240 {
			t.Errorf("%s: timeout %d s / memory %v MB out of range", where, got.timeout, got.memory)
		}
		// Only the ring's memory is the deployer's (ringMemoryParam); the
		// others are the size the meter prices them at.
		if f.Name == "ring" {
			if got.memory != ringMemoryParam {
				t.Errorf("%s: memory %v, want %s (the stack's ring memory parameter)", where, got.memory, ringMemoryParam)
			}
		} else if mb, ok := intOf(got.memory); !ok || mb != functionMemoryMB {
			t.Errorf("%s: memory %v, want %d MB (only the ring's memory is a parameter)", where, got.memory, functionMemoryMB)
		}
		if f.Name == "scan" && (got.timeout < 30 || got.timeout >= 60) {
			t.Errorf("%s: timeout %d s; the once-a-minute scan needs ≥ 30 s (its paging budget + release) and must end before the next minute", where, got.timeout)
		}
		// The ring waits to its buckets' instants and dispatches their fast
		// lane within the invocation: lambdaapp.RingTimeout says why it needs
		// that long (the ring queue's visibility follows, 6 x, checkConsumer).
		if want := int(lambdaapp.RingTimeout / time.Second); f.Name == "ring" && got.timeout != want {
			t.Errorf("%s: timeout %d s, want lambdaapp.RingTimeout (%d s): the wait to the instants plus the in-process dispatch of the fast lane", where, got.timeout, want)
		}
		if f.ReservedConcurrency > 0 && got.reserved != f.ReservedConcurrency {
			t.Errorf("%s: reserved concurrency %d, awsconfig wants %d", where, got.reserved, f.ReservedConcurrency)
		}
		if f.NoAsyncRetries && got.failureDest != "topic:alarms" {
			t.Errorf("%s: failure destination %q, want the alarm topic: a failed scheduled run must say so", where, got.failureDest)
		}
		if f.Name == laneFunction {
			checkLaneFunction(t, s, where, f, got)
		}
		if f.NoAsyncRetries && (got.asyncRetries != 0 || got.asyncMaxAge < 60 || got.asyncMaxAge > 120) {
			t.Errorf("%s: asynchronous retries %d, maximum event age %d s; awsconfig wants no retries and events dropped after 60-120 s",
				where, got.asyncRetries, got.asyncMaxAge)
		}
		// Environment: every required variable, from the right source; nothing unknown.
		for _, e := range f.Env {
			v, ok := got.env[e]
			if !ok {
				t.Errorf("%s: environment variable %s (required by awsconfig) is not set", where, e)
			} else if v != envSymbol[e] {
				t.Errorf("%s: %s is set from %q, want %q", where, e, v, envSymbol[e])
			}
		}
		for _, e := range slices.Sorted(maps.Keys(exposedSettings)) {
			if !slices.Contains(f.OptionalEnv, e) {
				continue
			}
			if v, ok := got.env[e]; !ok {
				t.Errorf("%s: %s is not set, so the deployment cannot change it", where, e)
			} else if d := fmt.Sprint(s.resolve(v)); d != exposedSettings[e] {
				t.Errorf("%s: %s defaults to %q, want %q", where, e, d, exposedSettings[e])
			}
		}
		checkVPC(t, s, where, f, got)
		checkTargets(t, s, where, f, got)
		for e, v := range got.env {
			if slices.Contains(f.Env, e) {
				continue
			}
			if !slices.Contains(f.OptionalEnv, e) {
				t.Errorf("%s: environment variable %s is not read by the function (not in awsconfig Env/OptionalEnv)", where, e)
			} else if v != envSymbol[e] {
				t.Errorf("%s: %s is set from %q, want %q", where, e, v, envSymbol[e])
			}
		}
		// IAM: exactly the expected grants.
		want := wantGrants(t, f, got.env)
		if missing, extra := diffSets(want, got.grants); len(missing)+len(extra) > 0 {
			t.Errorf("%s: IAM policy differs from awsconfig (Actions %v, Consumes %v)\n   missing:%s\n   extra (not needed):%s\n   want exactly:%s",
				where, f.Actions, f.Consumes, describeGrants(setOf(missing)), describeGrants(setOf(extra)), describeGrants(want))
		}
		// Queues consumed through event source mappings.
		wantQ := map[string]bool{}
		for _, e := range deployedConsumes(f, got.env) {
			wantQ[queueOfEnv[e]] = true
		}
		gotQ := map[string]bool{}
		for q := range got.consumes {
			gotQ[q] = true
		}
		if missing, extra := diffSets(wantQ, gotQ); len(missing)+len(extra) > 0 {
			t.Errorf("%s: SQS event sources differ from awsconfig Consumes: missing %v, extra %v", where, missing, extra)
		}
		for qk, c := range got.consumes {
			checkConsumer(t, s, where, qk, c, got.timeout)
		}
		// Logs.
		if got.logGroup != "loggroupname:"+f.Name {
			t.Errorf("%s: logging config log group %q, want its own log group", where, got.logGroup)
		}
		if r, ok := s.logGroups["loggroupname:"+f.Name]; !ok || r == nil {
			t.Errorf("%s: no log group with retention for the function", where)
		}
		// Lambda's own lines: JSON format so that the system log level
		// applies, at the parameter whose default the meter prices.
		if got.logFormat != awsconfig.LogFormat || got.appLogLevel != awsconfig.ApplicationLogLevel {
			t.Errorf("%s: log format %q, application log level %q; want %q, %q", where,
				got.logFormat, got.appLogLevel, awsconfig.LogFormat, awsconfig.ApplicationLogLevel)
		}
		if p, ok := s.params[strings.TrimPrefix(got.systemLogLevel, "param:")]; !strings.HasPrefix(got.systemLogLevel, "param:") || !ok {
			t.Errorf("%s: system log level %q, want the system log level parameter", where, got.systemLogLevel)
		} else if fmt.Sprint(p.def) != awsconfig.SystemLogLevel || !slices.Equal(p.allowed, awsconfig.SystemLogLevels) {
			t.Errorf("%s: system log level parameter default %v allowed %v, want %s of %v", where,
				p.def, p.allowed, awsconfig.SystemLogLevel, awsconfig.SystemLogLevels)
		}
	}
	for name := range s.functions {
		if !known[name] {
			t.Errorf("%s: function %s is not in awsconfig.Functions", s.format, name)
		}
	}
}

// checkLaneFunction wants the lanes on asynchronous invocations of the
// dispatch function, as internal/testenv/awsstack runs them: every
// function sets XJOB_DISPATCH_FUNCTION (checked with the environment)
// and no lane queue URL, and the dispatch function keeps a failed event
// through Lambda's two retries, for at least their span, then sends it
// to its dead-letter queue, which exists and which nothing consumes.
func checkLaneFunction(t *testing.T, s *stack, where string, f awsconfig.Function, got function) {
	t.Helper()
	for _, fn := range awsconfig.Functions {
		sf := s.functions[fn.Name]
		if _, ok := sf.env[awsconfig.EnvDispatchFunction]; !ok {
			t.Errorf("%s: function %s does not set %s: its lanes would need the lane queues", s.format, fn.Name, awsconfig.EnvDispatchFunction)
		}
		for _, e := range []string{awsconfig.EnvDispatchFastURL, awsconfig.EnvDispatchSlowURL} {
			if _, ok := sf.env[e]; ok {
				t.Errorf("%s: function %s sets %s: the lanes are asynchronous invocations, not queues", s.format, fn.Name, e)
			}
		}
	}
	if got.asyncRetries != laneRetries || got.asyncMaxAge < laneMaxAgeMin+3*got.timeout || got.asyncMaxAge > laneMaxAgeMax {
		t.Errorf("%s: asynchronous retries %d, maximum event age %d s; the lanes want %d retries and an age of %d..%d s",
			where, got.asyncRetries, got.asyncMaxAge, laneRetries, laneMaxAgeMin+3*got.timeout, laneMaxAgeMax)
	}
	if got.failureDest != "queue:"+laneDestination {
		t.Errorf("%s: failure destination %q, want the dead-letter queue %s (a lane event failing every attempt is kept, and alarmed)",
			where, got.failureDest, laneDestination)
	}
	if _, ok := s.queues[laneDestination]; !ok {
		t.Errorf("%s: no queue %s (the lanes' on-failure destination)", s.format, laneDestination)
	}
	for name, fn := range s.functions {
		if _, ok := fn.consumes[laneDestination]; ok {
			t.Errorf("%s: function %s consumes %s: dead letters wait for an operator", s.format, name, laneDestination)
		}
	}
	for _, q := range []string{"dispatch-fast", "dispatch-slow"} {
		if _, ok := s.queues[q]; ok {
			t.Errorf("%s: the lane queue %s is still deployed", s.format, q)
		}
	}
}

// checkVPC wants the functions that call executors, and only those, in
// the deployment's VPC when one is given (a VpcConfig from the subnet and
// security group parameters, under a condition), with exactly vpcGrants
// under that same condition; the other functions get no VPC and no EC2
// action. Unconditional EC2 grants are extra grants for checkFunctions.
func checkVPC(t *testing.T, s *stack, where string, f awsconfig.Function, got function) {
	t.Helper()
	condGrants := map[string]map[string]bool{} // but the targets' (checkTargets)
	for cond, g := range got.condGrants {
		if s.conds[cond] != targetsCond {
			condGrants[cond] = g
		}
	}
	if !f.CallsExecutors {
		if got.vpcCond != "" || len(condGrants) > 0 {
			t.Errorf("%s: in a VPC (%q) or granted %v under a condition; only the functions that call executors are", where, got.vpcCond, condGrants)
		}
		return
	}
	if got.vpcCond == "" {
		t.Errorf("%s: calls executors but has no conditional VpcConfig from the VPC subnet and security group parameters", where)
		return
	}
	for cond, g := range condGrants {
		if cond != got.vpcCond {
			t.Errorf("%s: grants %v under condition %q, not the VPC's %q", where, slices.Sorted(maps.Keys(g)), cond, got.vpcCond)
		}
	}
	if missing, extra := diffSets(vpcGrants, got.condGrants[got.vpcCond]); len(missing)+len(extra) > 0 {
		t.Errorf("%s: VPC grants differ\n   missing:%s\n   extra:%s", where, describeGrants(setOf(missing)), describeGrants(setOf(extra)))
	}
}

// targetsCond is the meaning of the condition the targets' grants are
// under: the AWS target ARN parameter is set.
var targetsCond = "nonempty:" + envSymbol[awsconfig.EnvAWSTargetARNs]

// checkTargets wants the functions that call targets (awsconfig
// CallsTargets), and only those, granted exactly
// awsconfig.TargetActions on the AWS target ARN parameter's list and on
// nothing else, under the condition that the parameter is set (no
// statement when it is empty; a statement with an empty resource list is
// refused by IAM). The parameter's pattern refuses wildcards
// (TestParamsMatchConfig), so the grant is never "*".
func checkTargets(t *testing.T, s *stack, where string, f awsconfig.Function, got function) {
	t.Helper()
	var gotT map[string]bool
	n := 0
	for cond, g := range got.condGrants {
		if s.conds[cond] == targetsCond {
			gotT = g
			n++
		}
	}
	want := map[string]bool{}
	if f.CallsTargets {
		for _, a := range awsconfig.TargetActions {
			want[a+" split:"+envSymbol[awsconfig.EnvAWSTargetARNs]] = true
		}
		if n != 1 {
			t.Errorf("%s: calls targets: want one policy under the condition that the AWS target ARN parameter is set, found %d (conditions %v)",
				where, n, s.conds)
		}
	}
	if missing, extra := diffSets(want, gotT); len(missing)+len(extra) > 0 {
		t.Errorf("%s: target grants differ (awsconfig CallsTargets %v)\n   missing:%s\n   extra:%s", where, f.CallsTargets,
			describeGrants(setOf(missing)), describeGrants(setOf(extra)))
	}
	if p, ok := s.params[strings.TrimPrefix(envSymbol[awsconfig.EnvAWSTargetARNs], "param:")]; !ok || p.pattern != awsconfig.TargetARNListPattern {
		t.Errorf("%s: AWS target ARN parameter (present %v) pattern %q, want awsconfig.TargetARNListPattern", s.format, ok, p.pattern)
	}
}

func checkConsumer(t *testing.T, s *stack, where, qk string, c consumer, timeout int) {
	t.Helper()
	if !c.batchItemFailures {
		t.Errorf("%s: event source %s lacks ReportBatchItemFailures", where, qk)
	}
	if n, ok := intOf(s.resolve(c.maxConcurrency)); !ok || n < 2 {
		t.Errorf("%s: event source %s maximum concurrency %v, want a per-lane value >= 2", where, qk, c.maxConcurrency)
	}
	// The results queue gathers a batch over a window (its point is to
	// share page writes); the others hand work over at once.
	maxBatch := 10
	if qk == "results" {
		maxBatch = 1000
	}
	if c.batchSize < 1 || c.batchSize > maxBatch {
		t.Errorf("%s: event source %s batch size %d, want 1..%d", where, qk, c.batchSize, maxBatch)
	}
	q, ok := s.queues[qk]
	if !ok {
		t.Errorf("%s: consumed queue %s does not exist", where, qk)
		return
	}
	if q.visibility < 6*timeout {
		t.Errorf("%s: queue %s visibility timeout %d s < 6 x function timeout %d s", where, qk, q.visibility, timeout)
	}
	if _, ok := s.queues[q.dlq]; !ok || q.maxReceive < 1 {
		t.Errorf("%s: queue %s has no redrive to a dead-letter queue (dlq %q, maxReceiveCount %d)", where, qk, q.dlq, q.maxReceive)
	}
}

// checkAlarms wants, on the alarm topic: errors and throttles of every
// function, the oldest message of the ring queue, the lanes' oldest
// event and dropped events and their dead-letter queue's depth, read and
// write throttling of every table, the HTTP API's 5xx, the invocations of
// the function behind the public executor URL, and the scan's
// invocations (missing data breaching: a scan that stopped running is
// the failure).
func checkAlarms(t *testing.T, s *stack) {
	t.Helper()
	watched := map[string]alarm{}
	for _, a := range s.alarms {
		if !slices.Contains(a.actions, "topic:alarms") {
			t.Errorf("%s: alarm %s does not notify the alarm topic (actions %v)", s.format, a.name, a.actions)
		}
		for _, m := range a.metrics {
			watched[m] = a
		}
	}
	var want []string
	for _, f := range awsconfig.Functions {
		for _, m := range []string{"Errors", "Throttles"} {
			want = append(want, metricKey("AWS/Lambda", m, map[string]string{"FunctionName": "function:" + f.Name}))
		}
	}
	want = append(want, metricKey("AWS/SQS", "ApproximateAgeOfOldestMessage", map[string]string{"QueueName": "queuename:ring"}))
	// The lanes: an event waiting for the dispatch function (the lane
	// queues' oldest message before), one dropped, one dead-lettered.
	for _, m := range []string{"AsyncEventAge", "AsyncEventsDropped"} {
		want = append(want, metricKey("AWS/Lambda", m, map[string]string{"FunctionName": "function:" + laneFunction}))
	}
	want = append(want, metricKey("AWS/SQS", "ApproximateNumberOfMessagesVisible", map[string]string{"QueueName": "queuename:" + laneDestination}))
	for _, spec := range dynamostore.TableSpecs(dynamostore.TablesWithPrefix("")) {
		short := strings.TrimPrefix(*spec.TableName, "-")
		for _, m := range []string{"ReadThrottleEvents", "WriteThrottleEvents"} {
			want = append(want, metricKey("AWS/DynamoDB", m, map[string]string{"TableName": "tablename:" + short}))
		}
	}
	want = append(want, metricKey("AWS/ApiGateway", "5xx", map[string]string{"ApiId": "httpapi", "Stage": "$default"}))
	// The public executor URL's requests: a flood bills an invocation each.
	want = append(want, metricKey("AWS/Lambda", "Invocations", map[string]string{"FunctionName": "function:" + awsconfig.URLFunction()}))
	// A completed scan tick is an invocation without an error: the
	// stalled-scan alarm reads AWS/Lambda's Invocations (and Errors).
	scan := metricKey("AWS/Lambda", "Invocations", map[string]string{"FunctionName": "function:scan"})
	want = append(want, scan)
	for _, m := range want {
		if _, ok := watched[m]; !ok {
			t.Errorf("%s: no alarm watches %s", s.format, m)
		}
	}
	if a, ok := watched[scan]; ok && a.missing != "breaching" {
		t.Errorf("%s: alarm %s treats missing data as %q, want breaching (no scan invocation at all is a stalled scan)", s.format, a.name, a.missing)
	}
}

func checkRoutesAndSchedules(t *testing.T, s *stack) {
	t.Helper()
	// The HTTP API is awsconfig's Routes: executors reach registry and
	// callback through either prefix, everything else goes to web.
	wantRoutes := map[string]string{}
	for _, f := range awsconfig.Functions {
		for _, r := range f.Routes {
			wantRoutes[r] = f.Name
		}
	}
	if !maps.Equal(s.routes, wantRoutes) {
		t.Errorf("%s: HTTP API routes\n   got  %v\n   want %v", s.format, s.routes, wantRoutes)
	}
	for _, f := range awsconfig.Functions {
		got := slices.Sorted(slices.Values(s.schedules[f.Name]))
		if !slices.Equal(got, wantSchedules[f.Name]) {
			t.Errorf("%s: function %s EventBridge schedules %v, want %v", s.format, f.Name, got, wantSchedules[f.Name])
		}
	}
	for name := range s.schedules {
		if _, ok := s.functions[name]; !ok {
			t.Errorf("%s: schedule targets unknown function %s", s.format, name)
		}
	}
}

// normParam is the name shared by a SAM parameter and a Terraform variable.
func normParam(name string) string {
	return strings.ToLower(strings.ReplaceAll(name, "_", ""))
}

func TestSAMMatchesCode(t *testing.T) {
	t.Parallel()
	s, err := loadSAM("sam/template.yaml")
	if err != nil {
		t.Fatal(err)
	}
	check(t, s)
}

func TestTerraformMatchesCode(t *testing.T) {
	t.Parallel()
	s, err := loadTerraform("terraform")
	if err != nil {
		t.Fatal(err)
	}
	check(t, s)
}
