// Package strictjson checks a JSON document against the Go type it is about
// to be decoded into, for what encoding/json lets through: a key that
// matches a field only case-insensitively ("JOBGROUP" for "jobGroup",
// which encoding/json accepts), a key given twice in one object (where
// encoding/json silently keeps the last), and, when asked, a key that
// names no field at all. It also refuses a number that does not fit a
// float64 (1E700, a 2 followed by 300 zeros): encoding/json refuses it
// when it decodes into an interface, and a reader in another language
// turns it into an infinity; so that everything Check accepts,
// encoding/json parses into any. Every JSON route of xjob runs its body through
// here, so a request means one thing to xjob and to any proxy, audit tool
// or WAF that reads it first.
//
// Check walks the document once with encoding/json's tokenizer, guided by
// the target type (struct fields by their json names, embedded structs
// promoted, maps, slices, pointers); a type with its own UnmarshalJSON, an
// interface or a json.RawMessage is checked for duplicate keys only.
package strictjson

import (
	"bytes"
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strconv"
	"strings"
	"sync"
)

// Options of Check.
type Options struct {
	// DisallowUnknown refuses keys that name no field of a struct.
	DisallowUnknown bool
}

// Error is a document that Check refuses; Path locates the key
// ("items[2].handleCode"; "" at the top level).
type Error struct {
	Path string
	Msg  string
}

func (e *Error) Error() string {
	if e.Path == "" {
		return e.Msg
	}
	return e.Path + ": " + e.Msg
}

// Decode checks data against dst's type and then decodes it into dst
// (with DisallowUnknownFields when opts say so). Syntax errors come from
// encoding/json, unchanged.
func Decode(data []byte, dst any, opts Options) error {
	if err := Check(data, reflect.TypeOf(dst), opts); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	if opts.DisallowUnknown {
		dec.DisallowUnknownFields()
	}
	return dec.Decode(dst)
}

// Check reports the first problem of data as a value of type t: an
// *Error for a duplicate, wrongly cased or (with DisallowUnknown) unknown
// key or for a number out of float64's range, or encoding/json's syntax
// error. It reads one JSON value and does
// not look past it.
func Check(data []byte, t reflect.Type, opts Options) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	w := walker{dec: dec, opts: opts}
	err := w.value(t, "")
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}

// maxDepth bounds nesting, as a guard against stack growth on hostile
// input (encoding/json itself stops at 10000).
const maxDepth = 1000

type walker struct {
	dec   *json.Decoder
	opts  Options
	depth int
}

func (w *walker) value(t reflect.Type, path string) error {
	tok, err := w.dec.Token()
	if err != nil {
		return err
	}
	d, ok := tok.(json.Delim)
	if !ok {
		if n, isNum := tok.(json.Number); isNum {
			// encoding/json parses a number into an interface with
			// strconv.ParseFloat and refuses one that overflows.
			if _, err := strconv.ParseFloat(string(n), 64); err != nil {
				return &Error{Path: path, Msg: fmt.Sprintf("number %.40s out of range", n)}
			}
		}
		return nil // a scalar
	}
	if w.depth++; w.depth > maxDepth {
		return &Error{Path: path, Msg: "nested too deeply"}
	}
	defer func() { w.depth-- }()
	t = target(t)
	switch d {
	case '[':
		var elem reflect.Type
		if t != nil && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) {
			elem = t.Elem()
		}
		for i := 0; w.dec.More(); i++ {
			if err := w.value(elem, fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
	case '{':
		if err := w.object(t, path); err != nil {
			return err
		}
	}
	_, err = w.dec.Token() // the closing delimiter
	return err
}

func (w *walker) object(t reflect.Type, path string) error {
	var fields *fieldSet
	var elem reflect.Type
	switch {
	case t == nil:
	case t.Kind() == reflect.Struct:
		fields = fieldsOf(t)
	case t.Kind() == reflect.Map:
		elem = t.Elem()
	}
	seen := map[string]bool{}
	for w.dec.More() {
		tok, err := w.dec.Token()
		if err != nil {
			return err
		}
		key, _ := tok.(string)
		at := key
		if path != "" {
			at = path + "." + key
		}
		if seen[key] {
			return &Error{Path: path, Msg: fmt.Sprintf("key %q given more than once", key)}
		}
		seen[key] = true
		ft := elem
		if fields != nil {
			f, ok := fields.exact[key]
			switch {
			case ok:
				ft = f
			case fields.folded[strings.ToLower(key)] != "":
				return &Error{Path: path, Msg: fmt.Sprintf("unknown field %q (field names are case-sensitive: %q)",
					key, fields.folded[strings.ToLower(key)])}
			case w.opts.DisallowUnknown:
				return &Error{Path: path, Msg: fmt.Sprintf("unknown field %q", key)}
			}
		}
		if err := w.value(ft, at); err != nil {
			return err
		}
	}
	return nil
}

var (
	unmarshalerType     = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// target is the type whose keys are checked for t: pointers followed; nil
// for types that decode themselves (their keys are theirs to judge).
func target(t reflect.Type) reflect.Type {
	for t != nil {
		if t.Implements(unmarshalerType) || reflect.PointerTo(t).Implements(unmarshalerType) ||
			(t.Kind() != reflect.Map && (t.Implements(textUnmarshalerType) || reflect.PointerTo(t).Implements(textUnmarshalerType))) {
			return nil
		}
		if t.Kind() != reflect.Pointer {
			return t
		}
		t = t.Elem()
	}
	return nil
}

// fieldSet is a struct's JSON field names, exact and lower-cased.
type fieldSet struct {
	exact  map[string]reflect.Type
	folded map[string]string // lower-case name → exact name
}

var fieldCache sync.Map // reflect.Type → *fieldSet

func fieldsOf(t reflect.Type) *fieldSet {
	if fs, ok := fieldCache.Load(t); ok {
		return fs.(*fieldSet)
	}
	fs := &fieldSet{exact: map[string]reflect.Type{}, folded: map[string]string{}}
	collect(t, fs, map[reflect.Type]bool{})
	fieldCache.Store(t, fs)
	return fs
}

// collect adds t's fields to fs as encoding/json names them; the fields
// of an untagged embedded struct are promoted (shallower names win).
func collect(t reflect.Type, fs *fieldSet, visiting map[reflect.Type]bool) {
	if visiting[t] {
		return
	}
	visiting[t] = true
	var embedded []reflect.Type
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		ft := f.Type
		if f.Anonymous && name == "" {
			if et := ft; et.Kind() == reflect.Pointer {
				ft = et.Elem()
			}
			if ft.Kind() == reflect.Struct {
				embedded = append(embedded, ft)
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		if _, dup := fs.exact[name]; !dup {
			fs.exact[name] = f.Type
			fs.folded[strings.ToLower(name)] = name
		}
	}
	for _, et := range embedded {
		collect(et, fs, visiting)
	}
}
