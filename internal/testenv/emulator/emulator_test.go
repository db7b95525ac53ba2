package emulator_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/xjobdev/xjob/internal/testenv/emulator"
	"github.com/xjobdev/xjob/internal/testenv/tool"
)

func TestDirNotInstalled(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	if _, err := emulator.Dir(root); !errors.Is(err, emulator.ErrNotInstalled) || !strings.Contains(err.Error(), "make emulators") {
		t.Fatalf("Dir without node_modules: %v, want ErrNotInstalled with the make hint", err)
	}
	if err := os.MkdirAll(filepath.Join(root, "test", "emulators", "node_modules"), 0o755); err != nil {
		t.Fatal(err)
	}
	dir, err := emulator.Dir(root)
	if err != nil || dir != filepath.Join(root, "test", "emulators") {
		t.Fatalf("Dir = %q, %v", dir, err)
	}
}

// TestStartBoth starts both emulators from the module's test/emulators
// and checks they listen on loopback and account their CPU once stopped.
func TestStartBoth(t *testing.T) {
	t.Parallel()
	tool.SkipIfShort(t, "the AWS emulators (dynalite, fauxqs)")
	dir, err := emulator.Dir("")
	if errors.Is(err, emulator.ErrNotInstalled) {
		tool.Missing(t, err)
	}
	if err != nil {
		t.Fatal(err)
	}
	for name, start := range map[string]func(string, time.Duration) (*emulator.Process, error){
		"dynalite": emulator.StartDynalite, "fauxqs": emulator.StartFauxqs,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			p, err := start(dir, 30*time.Second)
			if errors.Is(err, emulator.ErrNotInstalled) {
				tool.Missing(t, err)
			}
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(p.Endpoint(), "http://127.0.0.1:") {
				t.Errorf("endpoint %q is not on loopback", p.Endpoint())
			}
			p.Stop()
			p.Stop() // idempotent
			if u := p.Usage(); u.Name != name || u.CPUSeconds <= 0 {
				t.Errorf("usage after Stop: %+v", u)
			}
		})
	}
}
