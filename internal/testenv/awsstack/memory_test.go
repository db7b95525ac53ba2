package awsstack

import (
	"maps"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xjobdev/xjob/internal/adapter/awsconfig"
)

// TestTemplateMemory: the repository's template deploys every function at
// MemoryMB and the ring at its parameter's default, the same MemoryMB.
func TestTemplateMemory(t *testing.T) {
	t.Parallel()
	m, err := TemplateMemory(filepath.Join("..", "..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{}
	for _, f := range awsconfig.Functions {
		want[f.Name] = MemoryMB
	}
	if !maps.Equal(m, want) {
		t.Errorf("TemplateMemory = %v, want %v", m, want)
	}
}

// memoryTemplate is a template of the six functions: the ring's memory
// is ringSize (omitted when ""), the Globals' globalSize (omitted when
// ""), params goes under Parameters.
func memoryTemplate(params, globalSize, ringSize string) string {
	var b strings.Builder
	b.WriteString("Parameters:\n  Other: {Type: String, Default: x}\n" + params)
	if globalSize != "" {
		b.WriteString("Globals:\n  Function:\n    MemorySize: " + globalSize + "\n")
	}
	b.WriteString("Resources:\n")
	for _, f := range awsconfig.Functions {
		id := strings.ToUpper(f.Name[:1]) + f.Name[1:] + "Function"
		b.WriteString("  " + id + ":\n    Type: AWS::Serverless::Function\n    Properties:\n      Timeout: 30\n")
		if f.Name == "ring" && ringSize != "" {
			b.WriteString("      MemorySize: " + ringSize + "\n")
		}
	}
	return b.String()
}

func TestParseTemplateMemory(t *testing.T) {
	t.Parallel()
	const ringParam = "  RingMemorySize:\n    Type: String\n    Default: \"1024\"\n"
	tests := []struct {
		name                 string
		params, global, ring string
		wantRing, wantOther  int
		wantErr              string
	}{
		{"globals only", "", "256", "", 256, 256, ""},
		{"ring literal", "", "256", "512", 512, 256, ""},
		{"ring !Ref", ringParam, "256", "!Ref RingMemorySize", 1024, 256, ""},
		{"ring Ref mapping", ringParam, "256", "{Ref: RingMemorySize}", 1024, 256, ""},
		{"number default", "  M:\n    Type: Number\n    Default: 128\n", "256", "!Ref M", 128, 256, ""},
		{"globals !Ref", ringParam, "!Ref RingMemorySize", "", 1024, 1024, ""},
		{"no size anywhere", "", "", "", 0, 0, "no MemorySize"},
		{"unknown parameter", "", "256", "!Ref Missing", 0, 0, "not a parameter with a default"},
		{"parameter without default", "  M:\n    Type: Number\n", "256", "!Ref M", 0, 0, "not a parameter with a default"},
		{"parameter not a size", "", "256", "!Ref Other", 0, 0, "not a whole number"},
		{"below Lambda's least", "", "256", "127", 0, 0, "not a whole number"},
		{"above Lambda's most", "", "256", "10241", 0, 0, "not a whole number"},
		{"fraction", "", "256", "256.5", 0, 0, "not a whole number"},
		{"a list", "", "256", "[256]", 0, 0, "not a whole number"},
		{"reference to a list", "", "256", "!Ref [M]", 0, 0, "not a parameter name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m, err := ParseTemplateMemory([]byte(memoryTemplate(tt.params, tt.global, tt.ring)))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one containing %q (memory %v)", err, tt.wantErr, m)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for fn, mb := range m {
				if want := map[bool]int{true: tt.wantRing, false: tt.wantOther}[fn == "ring"]; mb != want {
					t.Errorf("%s: %d MB, want %d", fn, mb, want)
				}
			}
			if len(m) != len(awsconfig.Functions) {
				t.Errorf("%d functions, want %d", len(m), len(awsconfig.Functions))
			}
		})
	}
}

// TestParseTemplateMemoryMissingFunction: a template without one of
// awsconfig's functions is refused, not priced without it.
func TestParseTemplateMemoryMissingFunction(t *testing.T) {
	t.Parallel()
	tmpl := strings.Replace(memoryTemplate("", "256", ""), "RingFunction:", "RingFn:", 1)
	if _, err := ParseTemplateMemory([]byte(tmpl)); err == nil || !strings.Contains(err.Error(), "RingFunction") {
		t.Errorf("err = %v, want RingFunction missing", err)
	}
}

// FuzzParseTemplateMemory: any text is read without a panic, and a size
// it returns is one Lambda takes, for every function.
func FuzzParseTemplateMemory(f *testing.F) {
	f.Add(memoryTemplate("", "256", ""))
	f.Add(memoryTemplate("  RingMemorySize: {Type: String, Default: \"1024\"}\n", "256", "!Ref RingMemorySize"))
	f.Add(memoryTemplate("", "", "{Ref: [x]}"))
	f.Add("Resources: [1, 2]\n")
	f.Add("")
	f.Fuzz(func(t *testing.T, s string) {
		m, err := ParseTemplateMemory([]byte(s))
		if err != nil {
			return
		}
		if len(m) != len(awsconfig.Functions) {
			t.Fatalf("%d functions, want %d", len(m), len(awsconfig.Functions))
		}
		for fn, mb := range m {
			if mb < 128 || mb > 10240 {
				t.Fatalf("%s: %d MB", fn, mb)
			}
		}
	})
}
