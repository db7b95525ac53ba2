package cli

// YAML through JSON: a manifest is read and written with the JSON field
// names of xjob.Manifest, so the API's one set of names serves both
// formats and strict JSON decoding refuses unknown fields in both. YAML
// is parsed into go.yaml.in/yaml/v3 nodes (which keep line numbers) and
// converted to JSON; export goes the other way.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"

	"go.yaml.in/yaml/v3"

	"github.com/xjobdev/xjob/internal/web/guard"
)

// yamlToJSON converts one YAML document (JSON is YAML) to JSON. Mapping
// keys must be strings; anchors and aliases are expanded, within the
// bounds below. Empty input is JSON null, as an empty document is.
func yamlToJSON(data []byte) ([]byte, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, err
	}
	if doc.Kind == 0 { // no document at all
		return []byte("null"), nil
	}
	c := &converter{}
	v, err := c.value(&doc, 0)
	if err != nil {
		return nil, err
	}
	return json.Marshal(v)
}

// Bounds of one conversion. An alias repeats its anchor's whole subtree,
// so a few hundred bytes of anchors that each list the previous one ten
// times expand to gigabytes (the "billion laughs"); the parsed nodes stay
// small, the expansion is what must be bounded. The bounds count the
// document as expanded: nodes visited and the bytes of their scalars and
// keys. A manifest that passes them is still far larger than the server
// takes in one request (guard.Apply, 5 MiB).
const (
	// maxAliasDepth bounds aliases within aliases.
	maxAliasDepth = 32
	// maxExpandedNodes bounds the nodes of the expanded document.
	maxExpandedNodes = 1_000_000
	// maxExpandedBytes bounds the text of its scalars and keys.
	maxExpandedBytes = guard.Apply
)

// errTooBig is the refusal of a document past the bounds.
var errTooBig = fmt.Errorf("the document expands to more than %d nodes or %d MiB of text "+
	"(anchors and aliases repeat what they name); write it out or split it", maxExpandedNodes, maxExpandedBytes>>20)

// converter converts nodes while counting what the expansion produced.
type converter struct {
	nodes, bytes int
}

// count charges one node holding text of n bytes.
func (c *converter) count(n int) error {
	c.nodes++
	c.bytes += n
	if c.nodes > maxExpandedNodes || c.bytes > maxExpandedBytes {
		return errTooBig
	}
	return nil
}

// value converts n to values encoding/json marshals back faithfully.
func (c *converter) value(n *yaml.Node, aliases int) (any, error) {
	if err := c.count(len(n.Value)); err != nil {
		return nil, err
	}
	switch n.Kind {
	case yaml.DocumentNode:
		if len(n.Content) == 0 {
			return nil, nil
		}
		return c.value(n.Content[0], aliases)
	case yaml.AliasNode:
		if aliases >= maxAliasDepth {
			return nil, fmt.Errorf("line %d: aliases nested too deep", n.Line)
		}
		return c.value(n.Alias, aliases+1)
	case yaml.MappingNode:
		m := make(map[string]any, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			if k.Kind != yaml.ScalarNode {
				return nil, fmt.Errorf("line %d: a mapping key must be a string", k.Line)
			}
			if k.Tag == "!!merge" {
				return nil, fmt.Errorf("line %d: merge keys (<<) are not supported", k.Line)
			}
			if err := c.count(len(k.Value)); err != nil {
				return nil, err
			}
			v, err := c.value(n.Content[i+1], aliases)
			if err != nil {
				return nil, err
			}
			m[k.Value] = v
		}
		return m, nil
	case yaml.SequenceNode:
		s := make([]any, 0, len(n.Content))
		for _, e := range n.Content {
			v, err := c.value(e, aliases)
			if err != nil {
				return nil, err
			}
			s = append(s, v)
		}
		return s, nil
	case yaml.ScalarNode:
		return scalarValue(n)
	}
	return nil, fmt.Errorf("line %d: unexpected YAML node", n.Line)
}

// scalarValue resolves a scalar by its tag: integers stay exact (an id
// above 2^53 must not round through float64), the rest as YAML 1.2 reads
// them.
func scalarValue(n *yaml.Node) (any, error) {
	switch n.ShortTag() {
	case "!!null":
		return nil, nil
	case "!!int":
		var i int64
		if err := n.Decode(&i); err == nil {
			return json.Number(strconv.FormatInt(i, 10)), nil
		}
		var u uint64
		if err := n.Decode(&u); err != nil {
			return nil, fmt.Errorf("line %d: %w", n.Line, err)
		}
		return json.Number(strconv.FormatUint(u, 10)), nil
	case "!!float":
		var f float64
		if err := n.Decode(&f); err != nil {
			return nil, fmt.Errorf("line %d: %w", n.Line, err)
		}
		if math.IsInf(f, 0) || math.IsNaN(f) {
			return nil, fmt.Errorf("line %d: %s has no JSON form", n.Line, n.Value)
		}
		return f, nil
	case "!!bool":
		var b bool
		if err := n.Decode(&b); err != nil {
			return nil, fmt.Errorf("line %d: %w", n.Line, err)
		}
		return b, nil
	default: // !!str, !!timestamp, !!binary and custom tags: the text as written
		return n.Value, nil
	}
}

// marshalYAML writes v as YAML with v's JSON field names (through its
// JSON encoding), integers as integers.
func marshalYAML(v any) ([]byte, error) {
	js, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.UseNumber()
	var tree any
	if err := dec.Decode(&tree); err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(numbers(tree)); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// numbers replaces the json.Numbers in a decoded JSON tree by int64 (or
// float64 when not an integer), which YAML writes unquoted.
func numbers(v any) any {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			v[k] = numbers(e)
		}
	case []any:
		for i, e := range v {
			v[i] = numbers(e)
		}
	case json.Number:
		if i, err := v.Int64(); err == nil {
			return i
		}
		if f, err := v.Float64(); err == nil || errors.Is(err, strconv.ErrRange) {
			return f
		}
	}
	return v
}
