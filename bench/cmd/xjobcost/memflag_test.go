package main

import (
	"maps"
	"testing"
)

func TestParseMemoryFlag(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want map[string]int
		err  bool
	}{
		{"ring=1024", map[string]int{"ring": 1024}, false},
		{"ring=128, callback=512", map[string]int{"ring": 128, "callback": 512}, false},
		{"ring", nil, true},
		{"=512", nil, true},
		{"ring=127", nil, true},
		{"ring=10241", nil, true},
		{"ring=1.5", nil, true},
	} {
		got, err := parseMemoryFlag(tc.in)
		if (err != nil) != tc.err || (!tc.err && !maps.Equal(got, tc.want)) {
			t.Errorf("parseMemoryFlag(%q) = %v, %v; want %v, error %v", tc.in, got, err, tc.want, tc.err)
		}
	}
}
