package infra

import (
	"fmt"
	"maps"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
)

// tfBlock is a block with its attributes evaluated (see tfEval) and its
// nested blocks by type.
type tfBlock struct {
	attrs  map[string]any
	blocks map[string][]*tfBlock // a dynamic "x" block is "dynamic:x"
	// conds are the source text of the condition of each attribute that
	// is a conditional expression (count = local.in_vpc ? 1 : 0 →
	// "local.in_vpc"); eval takes its "on" arm.
	conds map[string]string
	// raw is each attribute's source text.
	raw map[string]string
}

func (b *tfBlock) block(typ string) *tfBlock {
	if bs := b.blocks[typ]; len(bs) > 0 {
		return bs[0]
	}
	return &tfBlock{attrs: map[string]any{}, blocks: map[string][]*tfBlock{}, conds: map[string]string{}}
}

// tfModule is the .tf files of one directory.
type tfModule struct {
	locals    map[string]tfExpr
	resources map[string]map[string]*tfBlock // type → name → block
	data      map[string]map[string]*tfBlock
	variables map[string]*tfBlock
	outputs   map[string]*tfBlock
	// each is the instance of a for_each resource being converted: each.key
	// and each.value evaluate to it (nil outside one).
	each *tfEach
}

// tfEach is one instance of a for_each resource.
type tfEach struct {
	key   string
	value any
}

type tfExpr struct {
	e   hclsyntax.Expression
	src []byte
}

// loadTerraform parses dir/*.tf with hclsyntax (no provider, no binary)
// into a stack. Expressions are evaluated only as far as the checks need:
// literals, lists, objects, templates, locals; references to resources and
// variables stay as "${type.name.attr}" strings and are mapped to symbols.
func loadTerraform(dir string) (*stack, error) {
	m, err := loadTerraformModule(dir)
	if err != nil {
		return nil, err
	}
	return m.stack(), nil
}

// loadTerraformModule parses dir/*.tf into blocks (see loadTerraform).
func loadTerraformModule(dir string) (*tfModule, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.tf"))
	if err != nil || len(files) == 0 {
		return nil, fmt.Errorf("terraform: no .tf files in %s (%v)", dir, err)
	}
	m := &tfModule{locals: map[string]tfExpr{}, resources: map[string]map[string]*tfBlock{},
		data: map[string]map[string]*tfBlock{}, variables: map[string]*tfBlock{}, outputs: map[string]*tfBlock{}}
	type parsed struct {
		body *hclsyntax.Body
		src  []byte
	}
	var all []parsed
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("terraform: %w", err)
		}
		file, diags := hclsyntax.ParseConfig(src, f, hcl.InitialPos)
		if diags.HasErrors() {
			return nil, fmt.Errorf("terraform: %s", diags.Error())
		}
		body := file.Body.(*hclsyntax.Body)
		all = append(all, parsed{body, src})
		for _, b := range body.Blocks {
			if b.Type == "locals" {
				for name, a := range b.Body.Attributes {
					m.locals[name] = tfExpr{a.Expr, src}
				}
			}
		}
	}
	for _, p := range all {
		for _, b := range p.body.Blocks {
			// A resource with for_each over a map (a literal or a local) is
			// one resource per key, named name["key"] as Terraform names
			// its instances, each converted with each.key and each.value.
			if fe, ok := b.Body.Attributes["for_each"]; ok && b.Type == "resource" && len(b.Labels) == 2 {
				if inst, ok := m.eval(fe.Expr, p.src, 0).(map[string]any); ok {
					for _, k := range slices.Sorted(maps.Keys(inst)) {
						m.each = &tfEach{key: k, value: inst[k]}
						put(m.resources, b.Labels[0], fmt.Sprintf("%s[%q]", b.Labels[1], k), m.convert(b.Body, p.src))
					}
					m.each = nil
					continue
				}
			}
			blk := m.convert(b.Body, p.src)
			switch {
			case b.Type == "resource" && len(b.Labels) == 2:
				put(m.resources, b.Labels[0], b.Labels[1], blk)
			case b.Type == "data" && len(b.Labels) == 2:
				put(m.data, b.Labels[0], b.Labels[1], blk)
			case b.Type == "variable" && len(b.Labels) == 1:
				m.variables[b.Labels[0]] = blk
			case b.Type == "output" && len(b.Labels) == 1:
				m.outputs[b.Labels[0]] = blk
			}
		}
	}
	return m, nil
}

func put(m map[string]map[string]*tfBlock, typ, name string, b *tfBlock) {
	if m[typ] == nil {
		m[typ] = map[string]*tfBlock{}
	}
	m[typ][name] = b
}

func (m *tfModule) convert(body *hclsyntax.Body, src []byte) *tfBlock {
	b := &tfBlock{attrs: map[string]any{}, blocks: map[string][]*tfBlock{}, conds: map[string]string{}, raw: map[string]string{}}
	for name, a := range body.Attributes {
		b.attrs[name] = m.eval(a.Expr, src, 0)
		b.raw[name] = string(a.Expr.Range().SliceBytes(src))
		if c, ok := a.Expr.(*hclsyntax.ConditionalExpr); ok {
			b.conds[name] = string(c.Condition.Range().SliceBytes(src))
		}
	}
	for _, nb := range body.Blocks {
		typ := nb.Type
		if typ == "dynamic" && len(nb.Labels) == 1 {
			typ = "dynamic:" + nb.Labels[0]
		}
		b.blocks[typ] = append(b.blocks[typ], m.convert(nb.Body, src))
	}
	return b
}

// eval evaluates what the checks need and renders the rest as
// "${<source text>}".
func (m *tfModule) eval(e hclsyntax.Expression, src []byte, depth int) any {
	opaque := func() any { return "${" + string(e.Range().SliceBytes(src)) + "}" }
	if depth > 20 {
		return opaque()
	}
	switch x := e.(type) {
	case *hclsyntax.LiteralValueExpr:
		return ctyValue(x.Val)
	case *hclsyntax.TemplateWrapExpr:
		return m.eval(x.Wrapped, src, depth+1)
	case *hclsyntax.TemplateExpr:
		if len(x.Parts) == 1 {
			return m.eval(x.Parts[0], src, depth+1)
		}
		var b strings.Builder
		for _, p := range x.Parts {
			b.WriteString(str(m.eval(p, src, depth+1)))
		}
		return b.String()
	case *hclsyntax.ScopeTraversalExpr:
		tr := x.Traversal
		if tr.RootName() == "each" && m.each != nil && len(tr) >= 2 {
			if a, ok := tr[1].(hcl.TraverseAttr); ok {
				switch a.Name {
				case "key":
					return m.each.key
				case "value":
					return attrsOf(m.each.value, tr[2:])
				}
			}
		}
		if tr.RootName() == "local" && len(tr) >= 2 {
			if a, ok := tr[1].(hcl.TraverseAttr); ok {
				if l, ok := m.locals[a.Name]; ok {
					return m.eval(l.e, l.src, depth+1)
				}
			}
		}
		return "${" + traversalString(tr) + "}"
	case *hclsyntax.TupleConsExpr:
		l := []any{}
		for _, el := range x.Exprs {
			l = append(l, m.eval(el, src, depth+1))
		}
		return l
	case *hclsyntax.ObjectConsExpr:
		obj := map[string]any{}
		for _, it := range x.Items {
			key := hcl.ExprAsKeyword(it.KeyExpr)
			if key == "" {
				key = str(m.eval(it.KeyExpr, src, depth+1))
			}
			obj[key] = m.eval(it.ValueExpr, src, depth+1)
		}
		return obj
	case *hclsyntax.IndexExpr: // aws_sqs_queue.dlq[each.key]
		if c, ok := m.eval(x.Collection, src, depth+1).(string); ok && strings.HasPrefix(c, "${") {
			if k, ok := m.eval(x.Key, src, depth+1).(string); ok && !strings.HasPrefix(k, "${") {
				return fmt.Sprintf("%s[%q]}", strings.TrimSuffix(c, "}"), k)
			}
		}
	case *hclsyntax.RelativeTraversalExpr: // aws_sqs_queue.dlq[each.key].arn
		return attrsOf(m.eval(x.Source, src, depth+1), x.Traversal)
	case *hclsyntax.ObjectConsKeyExpr:
		return m.eval(x.Wrapped, src, depth+1)
	case *hclsyntax.ConditionalExpr:
		// A switch variable's "on" arm (var.reserved_concurrency ? 2 : -1).
		return m.eval(x.TrueResult, src, depth+1)
	case *hclsyntax.ParenthesesExpr:
		return m.eval(x.Expression, src, depth+1)
	case *hclsyntax.FunctionCallExpr:
		switch x.Name {
		case "tostring", "jsonencode", "toset", "tolist":
			if len(x.Args) == 1 {
				return m.eval(x.Args[0], src, depth+1)
			}
		case "concat":
			l := []any{}
			for _, a := range x.Args {
				l = append(l, listOf(m.eval(a, src, depth+1))...)
			}
			return l
		case "compact": // of a split list: the list without empty items, one symbol for both
			if len(x.Args) == 1 {
				return m.eval(x.Args[0], src, depth+1)
			}
		case "split": // split(",", var.x): SAM's !Split [",", !Ref X]
			if len(x.Args) == 2 {
				return map[string]any{"Fn::Split": []any{m.eval(x.Args[0], src, depth+1), m.eval(x.Args[1], src, depth+1)}}
			}
		}
	}
	return opaque()
}

// attrsOf follows the attribute steps of tr from v: into an object's
// keys, or appended to a reference ("${aws_sqs_queue.dlq[\"ring\"]}" →
// "${aws_sqs_queue.dlq[\"ring\"].arn}").
func attrsOf(v any, tr hcl.Traversal) any {
	for _, step := range tr {
		a, ok := step.(hcl.TraverseAttr)
		if !ok {
			return fmt.Sprintf("${%v[step]}", v)
		}
		switch x := v.(type) {
		case map[string]any:
			v = x[a.Name]
		case string:
			if !strings.HasPrefix(x, "${") {
				return fmt.Sprintf("${%s.%s}", x, a.Name)
			}
			v = strings.TrimSuffix(x, "}") + "." + a.Name + "}"
		default:
			return fmt.Sprintf("${%v.%s}", v, a.Name)
		}
	}
	return v
}

func traversalString(tr hcl.Traversal) string {
	var b strings.Builder
	for i, step := range tr {
		switch s := step.(type) {
		case hcl.TraverseRoot:
			b.WriteString(s.Name)
		case hcl.TraverseAttr:
			b.WriteString("." + s.Name)
		case hcl.TraverseIndex:
			if s.Key.Type() == cty.String {
				fmt.Fprintf(&b, "[%q]", s.Key.AsString())
			} else {
				fmt.Fprintf(&b, "[%v]", ctyValue(s.Key))
			}
		default:
			fmt.Fprintf(&b, "[step %d]", i)
		}
	}
	return b.String()
}

func ctyValue(v cty.Value) any {
	if v.IsNull() || !v.IsKnown() {
		return nil
	}
	switch v.Type() {
	case cty.String:
		return v.AsString()
	case cty.Bool:
		return v.True()
	case cty.Number:
		f := v.AsBigFloat()
		if f.IsInt() {
			i, _ := f.Int64()
			return i
		}
		out, _ := f.Float64()
		return out
	}
	return v.GoString()
}

// stack maps the module's resources to the neutral model.
func (m *tfModule) stack() *stack {
	s := newStack("terraform")
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
	res := func(typ string) map[string]*tfBlock { return m.resources[typ] }
	// A local that is a list parameter's non-emptiness (var.x != ""), as
	// a condition of count.
	for name, l := range m.locals {
		src := strings.TrimSpace(string(l.e.Range().SliceBytes(l.src)))
		if v, ok := strings.CutSuffix(src, ` != ""`); ok && strings.HasPrefix(v, "var.") {
			s.conds["local."+name] = "nonempty:param:" + normParam(strings.TrimPrefix(v, "var."))
		}
	}
	ref := func(typ, name, attr string) string { return "${" + typ + "." + name + "." + attr + "}" }
	const namePrefix = "${var.name}-"

	for name, v := range m.variables {
		s.params[normParam(name)] = tfParam(name, v)
		sym["${var."+name+"}"] = "param:" + normParam(name)
		sym["arn:${data.aws_partition.current.partition}:ssm:${data.aws_region.current.name}:${data.aws_caller_identity.current.account_id}:parameter${var."+name+"}"] = "ssmparam:" + normParam(name)
	}
	tableName := func(b *tfBlock) string {
		return strings.ReplaceAll(str(b.attrs["name"]), "${var.table_prefix}", prefixPlaceholder)
	}
	for n, b := range res("aws_dynamodb_table") {
		short := strings.TrimPrefix(tableName(b), prefixPlaceholder+"-")
		sym[ref("aws_dynamodb_table", n, "arn")] = "table:" + short
		sym[ref("aws_dynamodb_table", n, "arn")+"/index/*"] = "index:" + short
		sym[ref("aws_dynamodb_table", n, "name")] = "tablename:" + short
	}
	for n, b := range res("aws_sqs_queue") {
		key := strings.TrimPrefix(str(b.attrs["name"]), namePrefix)
		sym[ref("aws_sqs_queue", n, "arn")] = "queue:" + key
		sym[ref("aws_sqs_queue", n, "url")] = "queue:" + key + ":url"
		sym[ref("aws_sqs_queue", n, "id")] = "queue:" + key + ":url"
		sym[ref("aws_sqs_queue", n, "name")] = "queuename:" + key
	}
	for n, b := range res("aws_sns_topic") {
		sym[ref("aws_sns_topic", n, "arn")] = "topic:" + strings.TrimPrefix(str(b.attrs["name"]), namePrefix)
	}
	for n, b := range res("aws_cloudwatch_log_group") {
		fn := strings.TrimPrefix(str(b.attrs["name"]), "/aws/lambda/"+namePrefix)
		// The arn attribute has no ":*"; log streams need it.
		sym[ref("aws_cloudwatch_log_group", n, "arn")+":*"] = "loggroup:" + fn
		sym[ref("aws_cloudwatch_log_group", n, "name")] = "loggroupname:" + fn
		s.logGroups["loggroupname:"+fn] = b.attrs["retention_in_days"]
	}
	for n := range res("aws_lambda_function") {
		for _, a := range []string{"arn", "invoke_arn", "function_name", "qualified_arn"} {
			sym[ref("aws_lambda_function", n, a)] = "function:" + n
		}
		// Its name as a for_each instance writes it: "${var.name}-${each.key}"
		// (function_name is checked to be exactly that).
		sym[namePrefix+n] = "function:" + n
		// Its ARN built from its name, where a reference would make the
		// function (or its role's policy) depend on itself: the lanes'
		// XJOB_DISPATCH_FUNCTION and lambda:InvokeFunction grant.
		sym["arn:${data.aws_partition.current.partition}:lambda:${data.aws_region.current.name}:${data.aws_caller_identity.current.account_id}:function:"+namePrefix+n] = "function:" + n
	}
	for n := range res("aws_iam_role") {
		for _, a := range []string{"arn", "id", "name"} {
			sym[ref("aws_iam_role", n, a)] = "role:" + n
		}
	}
	sym["arn:${data.aws_partition.current.partition}:ec2:${data.aws_region.current.name}:${data.aws_caller_identity.current.account_id}:*"] = "ec2:thisaccount"
	for n := range m.data["aws_iam_policy_document"] {
		sym[ref("data.aws_iam_policy_document", n, "json")] = "policydoc:" + n
	}
	for n := range res("aws_cloudwatch_event_rule") {
		sym[ref("aws_cloudwatch_event_rule", n, "name")] = "rule:" + n
		sym[ref("aws_cloudwatch_event_rule", n, "arn")] = "rule:" + n
	}
	for n := range res("aws_apigatewayv2_integration") {
		sym["integrations/"+ref("aws_apigatewayv2_integration", n, "id")] = "integration:" + n
	}
	for n := range res("aws_apigatewayv2_api") {
		sym[ref("aws_apigatewayv2_api", n, "id")] = "httpapi"
		sym[ref("aws_apigatewayv2_api", n, "api_endpoint")] = "httpapi:endpoint"
		sym[ref("aws_apigatewayv2_api", n, "api_endpoint")+"/console/"] = "httpapi:endpoint/console/"
	}
	for n, b := range res("aws_lambda_function_url") {
		fn := strings.TrimPrefix(symStr(b.attrs["function_name"]), "function:")
		sym[ref("aws_lambda_function_url", n, "function_url")] = "functionurl:" + fn
		s.urls[fn] = str(b.attrs["authorization_type"])
	}

	// Tables and queues.
	for _, b := range res("aws_dynamodb_table") {
		t := table{attrs: map[string]string{}, gsis: map[string]gsi{}, billingMode: str(b.attrs["billing_mode"]),
			hash: str(b.attrs["hash_key"]), rng: str(b.attrs["range_key"])}
		// The TableBillingMode option: billing_mode = var.table_billing_mode,
		// read as its default, provisionable when it may be PROVISIONED.
		if v, ok := strings.CutPrefix(t.billingMode, "${var."); ok {
			if vb, ok := m.variables[strings.TrimSuffix(v, "}")]; ok {
				p := tfParam(strings.TrimSuffix(v, "}"), vb)
				t.billingMode, t.provisionable = str(p.def), slices.Contains(p.allowed, "PROVISIONED")
			}
		}
		for _, a := range b.blocks["attribute"] {
			t.attrs[str(a.attrs["name"])] = str(a.attrs["type"])
		}
		for _, g := range b.blocks["global_secondary_index"] {
			t.gsis[str(g.attrs["name"])] = gsi{str(g.attrs["hash_key"]), str(g.attrs["range_key"]), str(g.attrs["projection_type"])}
		}
		if ttl := b.block("ttl"); ttl.attrs["enabled"] == true {
			t.ttl = str(ttl.attrs["attribute_name"])
		}
		t.pitr = b.block("point_in_time_recovery").attrs["enabled"] == true
		t.retain = b.block("lifecycle").attrs["prevent_destroy"] == true
		s.tables[tableName(b)] = t
	}
	for _, b := range res("aws_sqs_queue") {
		q := queue{visibility: 30}
		if n, ok := intOf(b.attrs["visibility_timeout_seconds"]); ok {
			q.visibility = n
		}
		if rp := mapOf(b.attrs["redrive_policy"]); rp != nil {
			q.dlq = strings.TrimPrefix(symStr(rp["deadLetterTargetArn"]), "queue:")
			q.maxReceive, _ = intOf(rp["maxReceiveCount"])
		}
		s.queues[strings.TrimPrefix(str(b.attrs["name"]), namePrefix)] = q
	}

	// Roles → grants.
	roleGrants := map[string]map[string]bool{}
	for n, b := range res("aws_iam_role") {
		roleGrants["role:"+n] = map[string]bool{}
		if len(b.blocks["inline_policy"]) > 0 || b.attrs["managed_policy_arns"] != nil {
			s.problem("aws_iam_role.%s: inline_policy/managed_policy_arns are not checked; use aws_iam_role_policy", n)
		}
	}
	for n, b := range res("aws_iam_role_policy_attachment") {
		s.problem("aws_iam_role_policy_attachment.%s attaches %v to %v (managed policies are not least privilege)", n, b.attrs["policy_arn"], b.attrs["role"])
	}
	roleCondGrants := map[string]map[string]map[string]bool{} // role → condition → grants
	for n, b := range res("aws_iam_role_policy") {
		role := symStr(b.attrs["role"])
		g, ok := roleGrants[role]
		if !ok {
			s.problem("aws_iam_role_policy.%s: role %v is not an aws_iam_role of the module", n, b.attrs["role"])
			continue
		}
		if b.attrs["count"] != nil { // a policy under a condition
			cond, ok := b.conds["count"]
			if !ok || b.attrs["count"] != int64(1) {
				s.problem("aws_iam_role_policy.%s: count %v is not <condition> ? 1 : 0", n, b.attrs["count"])
				continue
			}
			if roleCondGrants[role] == nil {
				roleCondGrants[role] = map[string]map[string]bool{}
			}
			if roleCondGrants[role][cond] == nil {
				roleCondGrants[role][cond] = map[string]bool{}
			}
			g = roleCondGrants[role][cond]
		}
		where := "aws_iam_role_policy." + n
		switch p := symOf(b.attrs["policy"]).(type) {
		case map[string]any: // jsonencode({...})
			s.addStatements(g, where, p["Statement"], symStr)
		case string:
			doc, ok := m.data["aws_iam_policy_document"][strings.TrimPrefix(p, "policydoc:")]
			if !strings.HasPrefix(p, "policydoc:") || !ok {
				s.problem("%s: policy %q is neither jsonencode({...}) nor an aws_iam_policy_document", where, p)
				continue
			}
			for _, st := range doc.blocks["statement"] {
				for _, k := range []string{"not_actions", "not_resources"} {
					if st.attrs[k] != nil {
						s.problem("%s: statement uses %s", where, k)
					}
				}
				if len(st.blocks["condition"])+len(st.blocks["principals"]) > 0 {
					s.problem("%s: statement uses condition/principals", where)
				}
				if e := st.attrs["effect"]; e != nil && e != "Allow" {
					s.problem("%s: statement effect %v, want Allow", where, e)
					continue
				}
				for _, a := range listOf(st.attrs["actions"]) {
					for _, r := range listOf(st.attrs["resources"]) {
						g[str(a)+" "+symStr(r)] = true
					}
				}
			}
		}
	}

	// Functions.
	roleUsers := map[string][]string{}
	for n, b := range res("aws_lambda_function") {
		f := function{handler: str(b.attrs["handler"]), runtime: str(b.attrs["runtime"]),
			code:     path.Clean(strings.ReplaceAll(str(b.attrs["filename"]), "${path.module}", "infra/terraform")),
			env:      map[string]string{},
			consumes: map[string]consumer{}, grants: map[string]bool{}}
		for _, a := range listOf(b.attrs["architectures"]) {
			f.archs = append(f.archs, str(a))
		}
		f.timeout, _ = intOf(b.attrs["timeout"])
		f.memory = symOf(b.attrs["memory_size"])
		f.reserved, f.asyncRetries, f.asyncMaxAge = -1, -1, -1
		if v, ok := intOf(b.attrs["reserved_concurrent_executions"]); ok {
			f.reserved = v
		}
		for k, v := range mapOf(b.block("environment").attrs["variables"]) {
			f.env[k] = symStr(v)
		}
		lc := b.block("logging_config").attrs
		f.logGroup = symStr(lc["log_group"])
		f.logFormat, f.systemLogLevel, f.appLogLevel = str(lc["log_format"]), symStr(lc["system_log_level"]), symStr(lc["application_log_level"])
		if vcs := b.blocks["dynamic:vpc_config"]; len(vcs) > 0 {
			in := vcs[0].block("content")
			cond, ok := vcs[0].conds["for_each"]
			switch {
			case !ok:
				s.problem("aws_lambda_function.%s: dynamic vpc_config for_each is not <condition> ? [1] : [] (a VPC must stay optional)", n)
			case symStr(in.attrs["subnet_ids"]) != "param:vpcsubnetids" || symStr(in.attrs["security_group_ids"]) != "param:vpcsecuritygroupids":
				s.problem("aws_lambda_function.%s: vpc_config %v does not take var.vpc_subnet_ids and var.vpc_security_group_ids", n, in.attrs)
			default:
				f.vpcCond = cond
			}
		}
		if len(b.blocks["vpc_config"]) > 0 {
			s.problem("aws_lambda_function.%s: a vpc_config block makes the VPC mandatory; use a dynamic block under a condition", n)
		}
		role := symStr(b.attrs["role"])
		f.condGrants = roleCondGrants[role]
		if g, ok := roleGrants[role]; ok {
			f.grants = g
			roleUsers[role] = append(roleUsers[role], n)
		} else {
			s.problem("aws_lambda_function.%s: role %v is not an aws_iam_role of the module", n, b.attrs["role"])
		}
		if fn := str(b.attrs["function_name"]); fn != namePrefix+n {
			s.problem("aws_lambda_function.%s: function_name %q, want %q", n, fn, namePrefix+n)
		}
		s.functions[n] = f
	}
	for role, users := range roleUsers {
		if len(users) > 1 {
			s.problem("%s is shared by functions %v (one role per function)", role, users)
		}
	}
	for n, b := range res("aws_lambda_function_event_invoke_config") {
		fn := strings.TrimPrefix(symStr(b.attrs["function_name"]), "function:")
		f, ok := s.functions[fn]
		if !ok {
			s.problem("aws_lambda_function_event_invoke_config.%s: function %v is not an aws_lambda_function of the module", n, b.attrs["function_name"])
			continue
		}
		if v, ok := intOf(b.attrs["maximum_retry_attempts"]); ok {
			f.asyncRetries = v
		}
		if v, ok := intOf(b.attrs["maximum_event_age_in_seconds"]); ok {
			f.asyncMaxAge = v
		}
		f.failureDest = symStr(b.block("destination_config").block("on_failure").attrs["destination"])
		s.functions[fn] = f
	}
	permitted := map[string]bool{} // "principal function source"
	for n, b := range res("aws_lambda_permission") {
		permitted[str(b.attrs["principal"])+" "+symStr(b.attrs["function_name"])+" "+symStr(b.attrs["source_arn"])] = true
		if b.attrs["principal"] != "*" {
			continue
		}
		fn := strings.TrimPrefix(symStr(b.attrs["function_name"]), "function:")
		switch {
		case b.attrs["action"] == "lambda:InvokeFunctionUrl" && b.attrs["function_url_auth_type"] == "NONE":
			s.addPublic(fn, "lambda:InvokeFunctionUrl NONE")
		case b.attrs["action"] == "lambda:InvokeFunction" && b.attrs["invoked_via_function_url"] == true:
			s.addPublic(fn, "lambda:InvokeFunction url")
		default:
			s.addPublic(fn, fmt.Sprintf("%s: %v", n, b.attrs))
		}
	}
	for n, b := range res("aws_lambda_event_source_mapping") {
		fn := strings.TrimPrefix(symStr(b.attrs["function_name"]), "function:")
		f, ok := s.functions[fn]
		if !ok {
			s.problem("aws_lambda_event_source_mapping.%s: function %v is not an aws_lambda_function of the module", n, b.attrs["function_name"])
			continue
		}
		c := consumer{batchItemFailures: slices.Contains(listOf(b.attrs["function_response_types"]), any("ReportBatchItemFailures")),
			maxConcurrency: symOf(b.block("scaling_config").attrs["maximum_concurrency"]), batchSize: 10}
		if v, ok := intOf(b.attrs["batch_size"]); ok {
			c.batchSize = v
		}
		f.consumes[strings.TrimPrefix(symStr(b.attrs["event_source_arn"]), "queue:")] = c
	}
	for n, b := range res("aws_cloudwatch_event_target") {
		fn := strings.TrimPrefix(symStr(b.attrs["arn"]), "function:")
		rule := strings.TrimPrefix(symStr(b.attrs["rule"]), "rule:")
		r, ok := res("aws_cloudwatch_event_rule")[rule]
		if !ok {
			s.problem("aws_cloudwatch_event_target.%s: rule %v is not an aws_cloudwatch_event_rule of the module", n, b.attrs["rule"])
			continue
		}
		s.schedules[fn] = append(s.schedules[fn], str(r.attrs["schedule_expression"]))
		if !permitted["events.amazonaws.com function:"+fn+" rule:"+rule] {
			s.problem("aws_cloudwatch_event_target.%s: no aws_lambda_permission lets rule %s invoke function %s", n, rule, fn)
		}
	}
	for n, b := range res("aws_apigatewayv2_route") {
		if symStr(b.attrs["api_id"]) != "httpapi" {
			s.problem("aws_apigatewayv2_route.%s: api_id %v is not the module's HTTP API", n, b.attrs["api_id"])
		}
		integ := strings.TrimPrefix(symStr(b.attrs["target"]), "integration:")
		ib, ok := res("aws_apigatewayv2_integration")[integ]
		if !ok {
			s.problem("aws_apigatewayv2_route.%s: target %v is not an integration of the module", n, b.attrs["target"])
			continue
		}
		if ib.attrs["payload_format_version"] != "2.0" || ib.attrs["integration_type"] != "AWS_PROXY" {
			s.problem("aws_apigatewayv2_integration.%s: want AWS_PROXY with payload_format_version 2.0 (events.APIGatewayV2HTTPRequest)", integ)
		}
		fn := strings.TrimPrefix(symStr(ib.attrs["integration_uri"]), "function:")
		s.addRoute(str(b.attrs["route_key"]), fn)
		found := false
		for p := range permitted {
			found = found || strings.HasPrefix(p, "apigateway.amazonaws.com function:"+fn+" ")
		}
		if !found {
			s.problem("aws_apigatewayv2_route.%s: no aws_lambda_permission lets API Gateway invoke function %s", n, fn)
		}
	}
	for n, b := range res("aws_cloudwatch_metric_alarm") {
		a := alarm{name: n, missing: str(b.attrs["treat_missing_data"])}
		for _, act := range listOf(b.attrs["alarm_actions"]) {
			a.actions = append(a.actions, symStr(act))
		}
		watch := func(attrs map[string]any, nameKey string) {
			dims := map[string]string{}
			for k, v := range mapOf(attrs["dimensions"]) {
				dims[k] = symStr(v)
			}
			a.metrics = append(a.metrics, metricKey(str(attrs["namespace"]), str(attrs[nameKey]), dims))
		}
		if b.attrs["metric_name"] != nil {
			watch(b.attrs, "metric_name")
		}
		for _, q := range b.blocks["metric_query"] {
			if m := q.blocks["metric"]; len(m) > 0 {
				watch(m[0].attrs, "metric_name")
			}
		}
		s.alarms = append(s.alarms, a)
	}
	for name, o := range m.outputs {
		s.outputs[normParam(name)] = symStr(o.attrs["value"])
	}
	return s
}

var (
	tfRegexCond    = regexp.MustCompile(`^\$\{can\(regex\("((?:[^"\\]|\\.)*)", var\.(\w+)\)\)\}$`)
	tfRangeCond    = regexp.MustCompile(`^\$\{var\.(\w+) >= ([0-9.]+) && var\.(\w+) <= ([0-9.]+)(?: && floor\(var\.(\w+)\) == var\.(\w+))?\}$`)
	tfContainsCond = regexp.MustCompile(`^\$\{contains\(\[([^\]]*)\], var\.(\w+)\)\}$`)
)

// tfParam reads a variable's default and the validation forms the
// templates use: can(regex(…)), a >= / <= range (of whole numbers when
// it also requires floor(var.x) == var.x), contains([…]).
func tfParam(name string, v *tfBlock) param {
	p := param{def: v.attrs["default"], secret: v.attrs["sensitive"] == true}
	if t := str(v.attrs["type"]); t == "bool" || t == "${bool}" {
		// A bool reaches the functions through tostring: only these two.
		p.allowed = []string{"false", "true"}
	}
	cond := str(v.block("validation").attrs["condition"])
	if m := tfRegexCond.FindStringSubmatch(cond); m != nil && m[2] == name {
		if pat, err := strconv.Unquote(`"` + m[1] + `"`); err == nil {
			p.pattern = pat
		}
	}
	if m := tfRangeCond.FindStringSubmatch(cond); m != nil && m[1] == name && m[3] == name {
		lo, _ := strconv.ParseFloat(m[2], 64)
		hi, _ := strconv.ParseFloat(m[4], 64)
		p.min, p.max = &lo, &hi
		p.whole = m[5] == name && m[6] == name
	}
	if m := tfContainsCond.FindStringSubmatch(cond); m != nil && m[2] == name {
		for _, it := range strings.Split(m[1], ",") {
			p.allowed = append(p.allowed, strings.Trim(strings.TrimSpace(it), `"`))
		}
	}
	return p
}
