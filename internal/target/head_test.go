package target

import "testing"

func TestHead(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		b    string
		cut  bool
		want string
	}{
		{"whole", "ok", false, "ok"},
		{"invalid bytes replaced", "a\xffb", false, "a\uFFFDb"},
		{"cut on a rune boundary", "abc", true, "abc…"},
		{"a rune split by the cut is dropped", "ab\xe4\xb8", true, "ab…"}, // 中 is e4 b8 ad
		{"invalid bytes before the cut still replaced", "\xffab\xe4", true, "\uFFFDab…"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := Head([]byte(tc.b), tc.cut); got != tc.want {
				t.Errorf("Head(%q, %v) = %q, want %q", tc.b, tc.cut, got, tc.want)
			}
		})
	}
}
