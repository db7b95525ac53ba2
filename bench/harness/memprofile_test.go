package harness

import (
	"strings"
	"testing"
)

func TestParseMemStats(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		in      string
		want    map[string]int64
		wantErr bool
	}{
		{name: "trailer read, stack inuse first", in: "heap profile: 1: 2 [3: 4] @ heap/1048576\n1: 2 [3: 4] @ 0x1\n\n# runtime.MemStats\n# Alloc = 125829120\n# HeapInuse = 130023424\n# HeapIdle = 8388608\n# HeapReleased = 4194304\n# Stack = 1048576 / 1048576\n# NextGC = 251658240\n# NumGC = 42\n# PauseNs = [1 2 3]\n",
			want: map[string]int64{"Alloc": 125829120, "HeapInuse": 130023424, "HeapIdle": 8388608, "HeapReleased": 4194304, "Stack": 1048576, "NextGC": 251658240, "NumGC": 42}},
		{name: "lines before the trailer ignored", in: "# Alloc = 7\n# runtime.MemStats\n# NumGC = 1\n", want: map[string]int64{"NumGC": 1}},
		{name: "no trailer", in: "heap profile: 0: 0 [0: 0] @ heap/1048576\n", wantErr: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			got, err := parseMemStats(strings.NewReader(c.in))
			if (err != nil) != c.wantErr {
				t.Fatalf("err = %v, want error %v", err, c.wantErr)
			}
			for k, v := range c.want {
				if got[k] != v {
					t.Errorf("%s = %d, want %d", k, got[k], v)
				}
			}
			if c.want != nil && len(got) != len(c.want) {
				t.Errorf("got %d keys %v, want %d", len(got), got, len(c.want))
			}
		})
	}
}

func TestGoroutineTotal(t *testing.T) {
	t.Parallel()
	cases := []struct {
		in   string
		want int
	}{
		{"goroutine profile: total 1234\n1 @ 0x1\n", 1234},
		{"something else\n", 0},
		{"", 0},
	}
	for _, c := range cases {
		if got := goroutineTotal(strings.NewReader(c.in)); got != c.want {
			t.Errorf("goroutineTotal(%q) = %d, want %d", c.in, got, c.want)
		}
	}
}
