package infra

import (
	"fmt"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// loadSAM reads the SAM template into a stack. CloudFormation intrinsics
// are rendered as Fn::Sub-style strings (!Ref X → "${X}", !GetAtt X.Arn →
// "${X.Arn}", !Sub s → s) and then mapped to symbols.
func loadSAM(file string) (*stack, error) {
	doc, err := readSAM(file)
	if err != nil {
		return nil, err
	}
	s := newStack("sam")
	if doc["Transform"] != "AWS::Serverless-2016-10-31" {
		s.problem("Transform is %v, want AWS::Serverless-2016-10-31", doc["Transform"])
	}
	resources := mapOf(doc["Resources"])
	sym := map[string]string{}
	symOf := func(v any) any {
		if str, ok := v.(string); ok {
			if x, ok := sym[str]; ok {
				return x
			}
		}
		return v
	}
	symStr := func(v any) string { return splitSym(v, symOf) }

	for name, p := range mapOf(doc["Parameters"]) {
		pm := mapOf(p)
		pr := param{def: pm["Default"], secret: pm["NoEcho"] == true, pattern: str(pm["AllowedPattern"])}
		for _, v := range listOf(pm["AllowedValues"]) {
			pr.allowed = append(pr.allowed, str(v))
		}
		if f, err := strconv.ParseFloat(str(pm["MinValue"]), 64); err == nil {
			pr.min = &f
		}
		if f, err := strconv.ParseFloat(str(pm["MaxValue"]), 64); err == nil {
			pr.max = &f
		}
		s.params[normParam(name)] = pr
		sym["${"+name+"}"] = "param:" + normParam(name)
		sym["arn:${AWS::Partition}:ssm:${AWS::Region}:${AWS::AccountId}:parameter${"+name+"}"] = "ssmparam:" + normParam(name)
	}
	sym["arn:${AWS::Partition}:ec2:${AWS::Region}:${AWS::AccountId}:*"] = "ec2:thisaccount"
	// A condition that is a parameter's non-emptiness: !Not [!Equals [!Ref X, ""]].
	for name, c := range mapOf(doc["Conditions"]) {
		if not := listOf(mapOf(c)["Fn::Not"]); len(not) == 1 {
			if eq := listOf(mapOf(not[0])["Fn::Equals"]); len(eq) == 2 && eq[1] == "" {
				if p, ok := sym[str(eq[0])]; ok && strings.HasPrefix(p, "param:") {
					s.conds[name] = "nonempty:" + p
				}
			}
		}
	}
	const stackPrefix = "${AWS::StackName}-"
	for id, r := range resources {
		props := mapOf(mapOf(r)["Properties"])
		switch mapOf(r)["Type"] {
		case "AWS::DynamoDB::Table":
			short := strings.TrimPrefix(samTableName(props), prefixPlaceholder+"-")
			sym["${"+id+".Arn}"] = "table:" + short
			sym["${"+id+".Arn}/index/*"] = "index:" + short
			sym["${"+id+"}"] = "tablename:" + short
		case "AWS::SQS::Queue":
			key := strings.TrimPrefix(str(props["QueueName"]), stackPrefix)
			sym["${"+id+".QueueName}"] = "queuename:" + key
			sym["${"+id+".Arn}"] = "queue:" + key
			sym["${"+id+"}"] = "queue:" + key + ":url"
		case "AWS::SNS::Topic":
			sym["${"+id+"}"] = "topic:" + strings.TrimPrefix(str(props["TopicName"]), stackPrefix)
		case "AWS::Logs::LogGroup":
			fn := strings.TrimPrefix(str(props["LogGroupName"]), "/aws/lambda/"+stackPrefix)
			sym["${"+id+".Arn}"] = "loggroup:" + fn
			sym["${"+id+"}"] = "loggroupname:" + fn
			s.logGroups["loggroupname:"+fn] = props["RetentionInDays"]
		case "AWS::IAM::Role":
			sym["${"+id+".Arn}"] = "role:" + id
			sym["${"+id+"}"] = "role:" + id
		case "AWS::Serverless::HttpApi":
			sym["${"+id+"}"] = "httpapi"
			sym["https://${"+id+"}.execute-api.${AWS::Region}.${AWS::URLSuffix}"] = "httpapi:endpoint"
		case "AWS::Serverless::Function":
			fn := strings.ToLower(id[:1]) + strings.TrimSuffix(id[1:], "Function")
			sym["${"+id+"}"] = "function:" + fn
			// FunctionUrlConfig's URL, the resource SAM generates as <id>Url.
			sym["${"+id+"Url.FunctionUrl}"] = "functionurl:" + fn
			// Its name and ARN built from the stack name (FunctionName is
			// "${AWS::StackName}-<fn>"), where a !Ref or !GetAtt would make
			// the function or its role depend on itself: the lanes'
			// XJOB_DISPATCH_FUNCTION and lambda:InvokeFunction grant.
			sym[stackPrefix+fn] = "function:" + fn
			sym["arn:${AWS::Partition}:lambda:${AWS::Region}:${AWS::AccountId}:function:"+stackPrefix+fn] = "function:" + fn
		}
	}
	// Alarms: each metric they watch, in the neutral form.
	for id, r := range resources {
		if mapOf(r)["Type"] != "AWS::CloudWatch::Alarm" {
			continue
		}
		props := mapOf(mapOf(r)["Properties"])
		a := alarm{name: id, missing: str(props["TreatMissingData"])}
		for _, act := range listOf(props["AlarmActions"]) {
			a.actions = append(a.actions, symStr(act))
		}
		watch := func(m map[string]any) {
			dims := map[string]string{}
			for _, d := range listOf(m["Dimensions"]) {
				dims[str(mapOf(d)["Name"])] = symStr(mapOf(d)["Value"])
			}
			a.metrics = append(a.metrics, metricKey(str(m["Namespace"]), str(m["MetricName"]), dims))
		}
		if props["MetricName"] != nil {
			watch(props)
		}
		for _, q := range listOf(props["Metrics"]) {
			if m := mapOf(mapOf(mapOf(q)["MetricStat"])["Metric"]); m != nil {
				watch(m)
			}
		}
		s.alarms = append(s.alarms, a)
	}

	// Roles: grants per role, from inline policies and AWS::IAM::Policy resources.
	roleGrants := map[string]map[string]bool{}
	roleCondGrants := map[string]map[string]map[string]bool{} // role → condition → grants
	for id, r := range resources {
		props := mapOf(mapOf(r)["Properties"])
		switch mapOf(r)["Type"] {
		case "AWS::IAM::Role":
			g := map[string]bool{}
			roleGrants["role:"+id] = g
			if len(listOf(props["ManagedPolicyArns"])) > 0 {
				s.problem("role %s attaches managed policies %v (not least privilege)", id, props["ManagedPolicyArns"])
			}
			for _, p := range listOf(props["Policies"]) {
				// A policy under a condition: !If [cond, policy, !Ref AWS::NoValue].
				if l := listOf(mapOf(p)["Fn::If"]); len(l) == 3 {
					if l[2] != "${AWS::NoValue}" {
						s.problem("role %s: conditional policy's other arm is %v, want AWS::NoValue", id, l[2])
					}
					cond := str(l[0])
					if roleCondGrants["role:"+id] == nil {
						roleCondGrants["role:"+id] = map[string]map[string]bool{}
					}
					if roleCondGrants["role:"+id][cond] == nil {
						roleCondGrants["role:"+id][cond] = map[string]bool{}
					}
					s.addStatements(roleCondGrants["role:"+id][cond], "role "+id, mapOf(mapOf(l[1])["PolicyDocument"])["Statement"], symStr)
					continue
				}
				s.addStatements(g, "role "+id, mapOf(mapOf(p)["PolicyDocument"])["Statement"], symStr)
			}
		}
	}
	for id, r := range resources {
		props := mapOf(mapOf(r)["Properties"])
		if t := mapOf(r)["Type"]; t == "AWS::IAM::Policy" || t == "AWS::IAM::ManagedPolicy" {
			if mapOf(r)["Condition"] != nil {
				s.problem("policy %s has a Condition: put a conditional grant in its role's Policies (!If), so that the function waits for it", id)
			}
			for _, role := range listOf(props["Roles"]) {
				if g, ok := roleGrants[symStr(role)]; ok {
					s.addStatements(g, "policy "+id, mapOf(props["PolicyDocument"])["Statement"], symStr)
				}
			}
		}
	}

	globals := mapOf(mapOf(doc["Globals"])["Function"])
	roleUsers := map[string][]string{}
	for id, r := range resources {
		rm := mapOf(r)
		props := mapOf(rm["Properties"])
		switch rm["Type"] {
		case "AWS::DynamoDB::Table":
			t := samTable(props)
			t.retain = rm["DeletionPolicy"] == "Retain" && rm["UpdateReplacePolicy"] == "Retain"
			s.tables[samTableName(props)] = t
		case "AWS::SQS::Queue":
			key := strings.TrimPrefix(str(props["QueueName"]), stackPrefix)
			q := queue{visibility: 30}
			if n, ok := intOf(props["VisibilityTimeout"]); ok {
				q.visibility = n
			}
			if rp := mapOf(props["RedrivePolicy"]); rp != nil {
				q.dlq = strings.TrimPrefix(symStr(rp["deadLetterTargetArn"]), "queue:")
				q.maxReceive, _ = intOf(rp["maxReceiveCount"])
			}
			s.queues[key] = q
		case "AWS::Serverless::Function":
			merged := map[string]any{}
			for k, v := range globals {
				merged[k] = v
			}
			for k, v := range props {
				merged[k] = v
			}
			name := strings.ToLower(id[:1]) + strings.TrimSuffix(id[1:], "Function")
			if fn := str(props["FunctionName"]); fn != stackPrefix+name {
				s.problem("function %s: FunctionName %q, want %q (other functions invoke it by that name)", name, fn, stackPrefix+name)
			}
			f := function{handler: str(merged["Handler"]), runtime: str(merged["Runtime"]),
				code: path.Clean(path.Join("infra/sam", str(merged["CodeUri"]))), env: map[string]string{},
				consumes: map[string]consumer{}, grants: map[string]bool{}}
			for _, a := range listOf(merged["Architectures"]) {
				f.archs = append(f.archs, str(a))
			}
			f.timeout, _ = intOf(merged["Timeout"])
			f.memory = symOf(merged["MemorySize"])
			f.reserved, f.asyncRetries, f.asyncMaxAge = -1, -1, -1
			rc := merged["ReservedConcurrentExecutions"]
			if l := listOf(mapOf(rc)["Fn::If"]); len(l) == 3 {
				rc = l[1] // the value when reserving (the condition's other arm is AWS::NoValue)
			}
			if n, ok := intOf(rc); ok {
				f.reserved = n
			}
			if eic := mapOf(merged["EventInvokeConfig"]); eic != nil {
				if n, ok := intOf(eic["MaximumRetryAttempts"]); ok {
					f.asyncRetries = n
				}
				if n, ok := intOf(eic["MaximumEventAgeInSeconds"]); ok {
					f.asyncMaxAge = n
				}
				f.failureDest = symStr(mapOf(mapOf(eic["DestinationConfig"])["OnFailure"])["Destination"])
			}
			for k, v := range mapOf(mapOf(merged["Environment"])["Variables"]) {
				f.env[k] = symStr(v)
			}
			lc := mapOf(merged["LoggingConfig"])
			f.logGroup = symStr(lc["LogGroup"])
			f.logFormat, f.systemLogLevel, f.appLogLevel = str(lc["LogFormat"]), symStr(lc["SystemLogLevel"]), symStr(lc["ApplicationLogLevel"])
			if uc := mapOf(merged["FunctionUrlConfig"]); uc != nil {
				s.urls[name] = str(uc["AuthType"])
				// For NONE the SAM transform adds both public permissions
				// (aws-sam-translator 1.110: <id>UrlPublicPermissions and
				// <id>URLInvokeAllowPublicAccess; make lint-infra runs it).
				if uc["AuthType"] == "NONE" {
					s.addPublic(name, "lambda:InvokeFunctionUrl NONE")
					s.addPublic(name, "lambda:InvokeFunction url")
				}
			}
			if _, ok := merged["Policies"]; ok {
				s.problem("function %s: SAM Policies add AWS managed policies with Resource *; use an explicit Role", name)
			}
			if vc := merged["VpcConfig"]; vc != nil {
				l := listOf(mapOf(vc)["Fn::If"])
				if len(l) != 3 || l[2] != "${AWS::NoValue}" {
					s.problem("function %s: VpcConfig %v is not !If [condition, config, !Ref AWS::NoValue] (a VPC must stay optional)", name, vc)
				} else if in := mapOf(l[1]); !strings.Contains(fmt.Sprint(in["SubnetIds"]), "${VpcSubnetIds}") ||
					!strings.Contains(fmt.Sprint(in["SecurityGroupIds"]), "${VpcSecurityGroupIds}") {
					s.problem("function %s: VpcConfig %v does not take VpcSubnetIds and VpcSecurityGroupIds", name, in)
				} else {
					f.vpcCond = str(l[0])
				}
			}
			role := symStr(merged["Role"])
			f.condGrants = roleCondGrants[role]
			if g, ok := roleGrants[role]; ok {
				f.grants = g
				roleUsers[role] = append(roleUsers[role], name)
			} else {
				s.problem("function %s: Role %q is not an AWS::IAM::Role of the template", name, role)
			}
			for ev, e := range mapOf(merged["Events"]) {
				ep := mapOf(mapOf(e)["Properties"])
				switch typ := mapOf(e)["Type"]; typ {
				case "SQS":
					c := consumer{batchItemFailures: slices.Contains(listOf(ep["FunctionResponseTypes"]), any("ReportBatchItemFailures")),
						maxConcurrency: symOf(mapOf(ep["ScalingConfig"])["MaximumConcurrency"]), batchSize: 10}
					if n, ok := intOf(ep["BatchSize"]); ok {
						c.batchSize = n
					}
					f.consumes[strings.TrimPrefix(symStr(ep["Queue"]), "queue:")] = c
				case "Schedule":
					s.schedules[name] = append(s.schedules[name], str(ep["Schedule"]))
				case "ScheduleV2":
					s.schedules[name] = append(s.schedules[name], str(ep["ScheduleExpression"]))
				case "HttpApi":
					if symStr(ep["ApiId"]) != "httpapi" {
						s.problem("function %s event %s: ApiId %v is not the template's AWS::Serverless::HttpApi", name, ev, ep["ApiId"])
					}
					if ep["Method"] == nil && ep["Path"] == nil {
						s.addRoute("$default", name) // SAM's route for an HttpApi event without a path
					} else {
						s.addRoute(strings.ToUpper(str(ep["Method"]))+" "+str(ep["Path"]), name)
					}
				default:
					s.problem("function %s event %s: unexpected event type %v", name, ev, typ)
				}
			}
			s.functions[name] = f
		}
	}
	for role, users := range roleUsers {
		if len(users) > 1 {
			s.problem("role %s is shared by functions %v (one role per function)", role, users)
		}
	}
	for id, r := range resources {
		if mapOf(r)["Type"] != "AWS::Lambda::Permission" {
			continue
		}
		props := mapOf(mapOf(r)["Properties"])
		if props["Principal"] != "*" {
			continue
		}
		fn := strings.TrimPrefix(symStr(props["FunctionName"]), "function:")
		switch {
		case props["Action"] == "lambda:InvokeFunctionUrl" && props["FunctionUrlAuthType"] == "NONE":
			s.addPublic(fn, "lambda:InvokeFunctionUrl NONE")
		case props["Action"] == "lambda:InvokeFunction" && props["InvokedViaFunctionUrl"] == true:
			s.addPublic(fn, "lambda:InvokeFunction url")
		default:
			s.addPublic(fn, fmt.Sprintf("%s: %v", id, props))
		}
	}
	for name, o := range mapOf(doc["Outputs"]) {
		s.outputs[normParam(name)] = symStr(mapOf(o)["Value"])
	}
	return s, nil
}

func samTableName(props map[string]any) string {
	return strings.ReplaceAll(str(props["TableName"]), "${TablePrefix}", prefixPlaceholder)
}

func samTable(props map[string]any) table {
	t := table{attrs: map[string]string{}, gsis: map[string]gsi{}, billingMode: str(props["BillingMode"])}
	// The TableBillingMode option: !If [ProvisionedTables, PROVISIONED, PAY_PER_REQUEST].
	if l := listOf(mapOf(props["BillingMode"])["Fn::If"]); len(l) == 3 && l[1] == "PROVISIONED" {
		t.billingMode, t.provisionable = str(l[2]), true
	}
	for _, a := range listOf(props["AttributeDefinitions"]) {
		t.attrs[str(mapOf(a)["AttributeName"])] = str(mapOf(a)["AttributeType"])
	}
	keys := func(ks any) (h, r string) {
		for _, k := range listOf(ks) {
			if mapOf(k)["KeyType"] == "HASH" {
				h = str(mapOf(k)["AttributeName"])
			} else {
				r = str(mapOf(k)["AttributeName"])
			}
		}
		return h, r
	}
	t.hash, t.rng = keys(props["KeySchema"])
	for _, g := range listOf(props["GlobalSecondaryIndexes"]) {
		h, r := keys(mapOf(g)["KeySchema"])
		t.gsis[str(mapOf(g)["IndexName"])] = gsi{h, r, str(mapOf(mapOf(g)["Projection"])["ProjectionType"])}
	}
	if ttl := mapOf(props["TimeToLiveSpecification"]); ttl["Enabled"] == true {
		t.ttl = str(ttl["AttributeName"])
	}
	t.pitr = mapOf(props["PointInTimeRecoverySpecification"])["PointInTimeRecoveryEnabled"] == true
	return t
}

// addStatements adds the (action, resource) pairs of IAM policy statements
// (CloudFormation/JSON shape) to g.
func (s *stack) addStatements(g map[string]bool, where string, statements any, symStr func(any) string) {
	for _, st := range listOf(statements) {
		m := mapOf(st)
		for _, k := range []string{"NotAction", "NotResource", "Condition", "Principal"} {
			if _, ok := m[k]; ok {
				s.problem("%s: statement uses %s (the check cannot compare it)", where, k)
			}
		}
		if m["Effect"] != "Allow" {
			s.problem("%s: statement effect %v, want Allow", where, m["Effect"])
			continue
		}
		for _, a := range listOf(m["Action"]) {
			for _, r := range listOf(m["Resource"]) {
				g[str(a)+" "+symStr(r)] = true
			}
		}
	}
}

// yamlValue converts a YAML node to plain Go values, rendering
// CloudFormation intrinsics (short !Tag and long Fn:: forms).
// readSAM reads a SAM template as plain values, its intrinsics rendered
// as yamlValue renders them (!Ref X → "${X}").
func readSAM(file string) (map[string]any, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("sam: %w", err)
	}
	var root yaml.Node
	if err := yaml.Unmarshal(b, &root); err != nil {
		return nil, fmt.Errorf("sam: parse %s: %w", file, err)
	}
	v, err := yamlValue(&root)
	if err != nil {
		return nil, fmt.Errorf("sam: %s: %w", file, err)
	}
	doc, _ := v.(map[string]any)
	return doc, nil
}

func yamlValue(n *yaml.Node) (any, error) {
	switch n.Kind {
	case yaml.DocumentNode:
		if len(n.Content) == 0 {
			return nil, nil
		}
		return yamlValue(n.Content[0])
	case yaml.AliasNode:
		return yamlValue(n.Alias)
	}
	var v any
	switch n.Kind {
	case yaml.MappingNode:
		m := map[string]any{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			val, err := yamlValue(n.Content[i+1])
			if err != nil {
				return nil, err
			}
			m[n.Content[i].Value] = val
		}
		v = m
	case yaml.SequenceNode:
		l := []any{}
		for _, c := range n.Content {
			val, err := yamlValue(c)
			if err != nil {
				return nil, err
			}
			l = append(l, val)
		}
		v = l
	case yaml.ScalarNode:
		if n.Tag == "" || strings.HasPrefix(n.Tag, "!!") {
			if err := n.Decode(&v); err != nil {
				return nil, fmt.Errorf("line %d: %w", n.Line, err)
			}
		} else {
			v = n.Value
		}
	}
	if strings.HasPrefix(n.Tag, "!") && !strings.HasPrefix(n.Tag, "!!") {
		return intrinsic(strings.TrimPrefix(n.Tag, "!"), v, n.Line)
	}
	if m, ok := v.(map[string]any); ok && len(m) == 1 {
		for k, inner := range m {
			switch k {
			case "Ref", "Fn::GetAtt", "Fn::Sub":
				return intrinsic(strings.TrimPrefix(k, "Fn::"), inner, n.Line)
			}
		}
	}
	return v, nil
}

// intrinsic renders Ref, GetAtt and Sub as strings; other functions stay
// maps ({"Fn::If": …}) that no check compares.
func intrinsic(fn string, v any, line int) (any, error) {
	switch fn {
	case "Ref":
		return "${" + str(v) + "}", nil
	case "GetAtt":
		if l, ok := v.([]any); ok {
			parts := make([]string, len(l))
			for i, p := range l {
				parts[i] = str(p)
			}
			return "${" + strings.Join(parts, ".") + "}", nil
		}
		return "${" + str(v) + "}", nil
	case "Sub":
		if l, ok := v.([]any); ok && len(l) == 2 {
			out := str(l[0])
			for k, val := range mapOf(l[1]) {
				out = strings.ReplaceAll(out, "${"+k+"}", str(val))
			}
			return out, nil
		}
		if s, ok := v.(string); ok {
			return s, nil
		}
		return nil, fmt.Errorf("line %d: !Sub needs a string or [string, map]", line)
	}
	return map[string]any{"Fn::" + fn: v}, nil
}

func mapOf(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

// listOf returns v as a list; a single value is a list of one (IAM allows
// Action: x as well as Action: [x]).
func listOf(v any) []any {
	switch l := v.(type) {
	case nil:
		return nil
	case []any:
		return l
	}
	return []any{v}
}

func str(v any) string {
	if v == nil {
		return ""
	}
	if s, ok := v.(string); ok {
		return s
	}
	return fmt.Sprint(v)
}

// splitSym is the symbol of v: a parameter split into a list (SAM
// !Split [",", !Ref X], Terraform split(",", var.x)) is "split:" and the
// parameter's symbol, anything else symOf's.
func splitSym(v any, symOf func(any) any) string {
	if l := listOf(mapOf(v)["Fn::Split"]); len(l) == 2 && l[0] == "," {
		return "split:" + fmt.Sprint(symOf(l[1]))
	}
	return fmt.Sprint(symOf(v))
}

func newStack(format string) *stack {
	return &stack{format: format, tables: map[string]table{}, queues: map[string]queue{}, conds: map[string]string{},
		functions: map[string]function{}, routes: map[string]string{}, urls: map[string]string{}, public: map[string]map[string]bool{},
		schedules: map[string][]string{},
		params:    map[string]param{}, outputs: map[string]string{}, logGroups: map[string]any{}}
}

func (s *stack) problem(format string, args ...any) {
	s.problems = append(s.problems, fmt.Sprintf(format, args...))
}

func (s *stack) addPublic(fn, perm string) {
	if s.public[fn] == nil {
		s.public[fn] = map[string]bool{}
	}
	s.public[fn][perm] = true
}

func (s *stack) addRoute(key, fn string) {
	if prev, ok := s.routes[key]; ok {
		s.problem("route %q is declared twice (%s and %s)", key, prev, fn)
	}
	s.routes[key] = fn
}
