package main

import (
	"path/filepath"
	"testing"

	"github.com/xjobdev/xjob/internal/testenv/awsstack"
)

// TestMemoryLine: the header names every function at the template's
// size, in name order.
func TestMemoryLine(t *testing.T) {
	t.Parallel()
	tests := []struct {
		mem  map[string]int
		want string
	}{
		{map[string]int{"scan": 256, "ring": 1024}, "ring 1024 MB, scan 256 MB"},
		{map[string]int{}, ""},
	}
	for _, tt := range tests {
		if got := memoryLine(tt.mem); got != tt.want {
			t.Errorf("memoryLine(%v) = %q, want %q", tt.mem, got, tt.want)
		}
	}
	mem, err := awsstack.TemplateMemory(filepath.Join("..", "..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	const want = "callback 256 MB, dispatch 256 MB, registry 256 MB, ring 256 MB, scan 256 MB, web 256 MB"
	if got := memoryLine(mem); got != want {
		t.Errorf("the template's: %q, want %q", got, want)
	}
}
