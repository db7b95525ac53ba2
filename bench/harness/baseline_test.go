package harness

import (
	"context"
	"os/exec"
	"strings"
	"testing"
)

// DefaultBaseline takes the merge base with the newest release tag, and
// with main before the first release: built on a throwaway repository.
func TestDefaultBaseline(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		tag     bool
		wantAt  string // the commit (by message) the baseline must be
		wantWhy string
	}{
		{name: "no release: merge base with main", wantAt: "on main", wantWhy: "main"},
		{name: "a release tag: merge base with it", tag: true, wantAt: "released", wantWhy: "v1.0.0"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			git := func(args ...string) string {
				t.Helper()
				cmd := exec.Command("git", append([]string{"-C", dir, "-c", "user.name=t", "-c", "user.email=t@t",
					"-c", "commit.gpgsign=false", "-c", "tag.gpgsign=false"}, args...)...)
				out, err := cmd.CombinedOutput()
				if err != nil {
					t.Fatalf("git %v: %v\n%s", args, err, out)
				}
				return strings.TrimSpace(string(out))
			}
			git("init", "-q", "-b", "main")
			git("commit", "-q", "--allow-empty", "-m", "released")
			if tc.tag {
				git("tag", "v1.0.0")
			}
			git("commit", "-q", "--allow-empty", "-m", "on main")
			git("checkout", "-q", "-b", "work")
			git("commit", "-q", "--allow-empty", "-m", "the change")
			rev, why, err := DefaultBaseline(context.Background(), dir)
			if err != nil {
				t.Fatal(err)
			}
			if msg := git("log", "-1", "--format=%s", rev); msg != tc.wantAt {
				t.Errorf("baseline %s is %q, want %q", rev, msg, tc.wantAt)
			}
			if !strings.Contains(why, tc.wantWhy) {
				t.Errorf("why %q does not name %q", why, tc.wantWhy)
			}
		})
	}
}
