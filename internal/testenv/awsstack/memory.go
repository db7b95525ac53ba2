package awsstack

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/xjobdev/xjob/internal/adapter/awsconfig"
)

// TemplatePath is the SAM template under the module root, the one whose
// memory sizes TemplateMemory reads.
var TemplatePath = filepath.Join("infra", "sam", "template.yaml")

// TemplateMemory is each function's memory in MB as the SAM template
// under root deploys it: the function's MemorySize, else the Globals'; a
// reference to a parameter (the ring's RingMemorySize) is taken at the
// parameter's default, what a stack deployed without overrides runs. The
// meter prices these, so a size changed in the template is priced as
// deployed rather than at a copy of it (infra tests keep Terraform's
// sizes the same).
func TemplateMemory(root string) (map[string]int, error) {
	b, err := os.ReadFile(filepath.Join(root, TemplatePath))
	if err != nil {
		return nil, fmt.Errorf("template memory: %w", err)
	}
	m, err := ParseTemplateMemory(b)
	if err != nil {
		return nil, fmt.Errorf("template memory: %s: %w", TemplatePath, err)
	}
	return m, nil
}

// ParseTemplateMemory reads the memory of every awsconfig function from a
// SAM template's text (TemplateMemory). A function missing from the
// template, a size that is not a whole number of MB Lambda takes (128 to
// 10,240) or a reference to a parameter without such a default is an
// error: a size the meter cannot read must not be priced at a guess.
func ParseTemplateMemory(b []byte) (map[string]int, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("parse: %w", err)
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 {
		return nil, fmt.Errorf("not a YAML document")
	}
	top := doc.Content[0]
	params := child(top, "Parameters")
	size := func(where string, n *yaml.Node) (int, error) {
		v := n
		if n.Tag == "!Ref" || n.Kind == yaml.MappingNode && child(n, "Ref") != nil {
			ref := n
			if n.Kind == yaml.MappingNode {
				ref = child(n, "Ref")
			}
			if ref.Kind != yaml.ScalarNode {
				return 0, fmt.Errorf("%s: MemorySize reference is not a parameter name", where)
			}
			v = child(child(params, ref.Value), "Default")
			if v == nil {
				return 0, fmt.Errorf("%s: MemorySize refers to %q, not a parameter with a default", where, ref.Value)
			}
		}
		mb, err := strconv.Atoi(v.Value)
		if v.Kind != yaml.ScalarNode || err != nil || mb < 128 || mb > 10240 {
			return 0, fmt.Errorf("%s: MemorySize %q is not a whole number of MB from 128 to 10240", where, v.Value)
		}
		return mb, nil
	}
	global := 0
	if n := child(child(child(top, "Globals"), "Function"), "MemorySize"); n != nil {
		mb, err := size("Globals", n)
		if err != nil {
			return nil, err
		}
		global = mb
	}
	out := map[string]int{}
	resources := child(top, "Resources")
	for _, f := range awsconfig.Functions {
		// The template names a function's resource <Name>Function
		// (RingFunction), its FunctionName ${AWS::StackName}-<name>.
		id := strings.ToUpper(f.Name[:1]) + f.Name[1:] + "Function"
		r := child(resources, id)
		if r == nil || child(r, "Type") == nil || child(r, "Type").Value != "AWS::Serverless::Function" {
			return nil, fmt.Errorf("no AWS::Serverless::Function %s (function %s)", id, f.Name)
		}
		mb := global
		if n := child(child(r, "Properties"), "MemorySize"); n != nil {
			var err error
			if mb, err = size(id, n); err != nil {
				return nil, err
			}
		}
		if mb == 0 {
			return nil, fmt.Errorf("%s: no MemorySize, in Globals or its own", id)
		}
		out[f.Name] = mb
	}
	return out, nil
}

// child is the value under key of mapping n, nil when n is not a
// mapping or has no such key.
func child(n *yaml.Node, key string) *yaml.Node {
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}
