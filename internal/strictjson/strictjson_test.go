package strictjson_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/xjobdev/xjob/internal/strictjson"
)

type inner struct {
	Code int    `json:"code"`
	Msg  string `json:"msg,omitempty"`
}

type Base struct {
	ID int64 `json:"id"`
}

type doc struct {
	Base
	Name    string            `json:"name"`
	Items   []inner           `json:"items"`
	Ptr     *inner            `json:"ptr"`
	Labels  map[string]string `json:"labels"`
	Raw     json.RawMessage   `json:"raw"`
	Any     any               `json:"any"`
	Skipped string            `json:"-"`
	Plain   int
}

func TestCheck(t *testing.T) {
	t.Parallel()
	typ := reflect.TypeFor[doc]()
	tests := []struct {
		name, body string
		strict     bool
		wantErr    string // substring; "" means accepted
	}{
		{"exact names", `{"id":1,"name":"a","items":[{"code":1}],"ptr":{"msg":"m"},"labels":{"X":"y"},"Plain":2}`, true, ""},
		{"case-folded top-level", `{"NAME":"a"}`, false, `unknown field "NAME" (field names are case-sensitive: "name")`},
		{"case-folded embedded", `{"Id":1}`, false, `case-sensitive: "id"`},
		{"case-folded nested", `{"items":[{"code":1},{"Code":2}]}`, false, `items[1]: unknown field "Code"`},
		{"case-folded behind pointer", `{"ptr":{"MSG":"x"}}`, false, `ptr: unknown field "MSG"`},
		{"duplicate top-level", `{"name":"a","name":"b"}`, false, `key "name" given more than once`},
		{"duplicate in map", `{"labels":{"a":"1","a":"2"}}`, false, `labels: key "a" given more than once`},
		{"duplicate in raw", `{"raw":{"k":1,"k":2}}`, false, `raw: key "k" given more than once`},
		{"duplicate in any", `{"any":[{"k":1,"k":2}]}`, false, "given more than once"},
		{"map keys any case", `{"labels":{"a":"1","A":"2"}}`, true, ""},
		{"raw keys unchecked", `{"raw":{"whatever":1}}`, true, ""},
		{"unknown tolerated", `{"extra":{"x":[1]}}`, false, ""},
		{"unknown refused", `{"extra":1}`, true, `unknown field "extra"`},
		{"tagged - is unknown", `{"Skipped":"x"}`, true, `unknown field "Skipped"`},
		{"syntax error", `{"name":`, false, "unexpected EOF"},
		{"scalar", `42`, true, ""},
		{"number past float64", `{"id":1E700}`, false, "id: number 1E700 out of range"},
		{"long integer past float64", `{"any":[2` + strings.Repeat("0", 308) + `]}`, false, "any[0]: number 2000"},
		{"number in raw past float64", `{"raw":-1e309}`, false, "out of range"},
		{"largest float64", `{"any":1.7976931348623157e308}`, true, ""},
		{"underflow to zero", `{"any":1e-400}`, true, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := strictjson.Check([]byte(tt.body), typ, strictjson.Options{DisallowUnknown: tt.strict})
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("err = %v, want %q", err, tt.wantErr)
			}
		})
	}
}

func TestDecode(t *testing.T) {
	t.Parallel()
	var d doc
	if err := strictjson.Decode([]byte(`{"id":3,"name":"x"}`), &d, strictjson.Options{DisallowUnknown: true}); err != nil || d.ID != 3 || d.Name != "x" {
		t.Fatalf("%+v %v", d, err)
	}
	var se *strictjson.Error
	if err := strictjson.Decode([]byte(`{"name":"x","name":"y"}`), &d, strictjson.Options{}); !errors.As(err, &se) {
		t.Fatalf("duplicate: %v", err)
	}
}

func TestDeepNesting(t *testing.T) {
	t.Parallel()
	body := strings.Repeat("[", 5000) + strings.Repeat("]", 5000)
	if err := strictjson.Check([]byte(body), reflect.TypeFor[any](), strictjson.Options{}); err == nil {
		t.Fatal("5000 levels accepted")
	}
}

// FuzzCheck: whatever Check accepts encoding/json parses too (its first
// value, into any: numbers included), and what it accepts with
// DisallowUnknown it accepts without.
func FuzzCheck(f *testing.F) {
	for _, s := range []string{`{"id":1,"items":[{"code":1}]}`, `{"a":1,"a":2}`, `{"NAME":1}`, `[[[`, `"x"`,
		`1E700`, `2` + strings.Repeat("0", 308), `{"any":[-1e309]}`, `{"extra":1}`} {
		f.Add([]byte(s))
	}
	typ := reflect.TypeFor[doc]()
	f.Fuzz(func(t *testing.T, body []byte) {
		lax := strictjson.Check(body, typ, strictjson.Options{})
		strict := strictjson.Check(body, typ, strictjson.Options{DisallowUnknown: true})
		if strict == nil && lax != nil {
			t.Fatalf("%q accepted with DisallowUnknown, refused without: %v", body, lax)
		}
		if lax != nil {
			return
		}
		var v any
		dec := json.NewDecoder(strings.NewReader(string(body)))
		if err := dec.Decode(&v); err != nil {
			t.Fatalf("Check accepted %q, encoding/json: %v", body, err)
		}
	})
}
