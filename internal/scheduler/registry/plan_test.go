package registry

import (
	"errors"
	"testing"
	"time"

	"github.com/xjobdev/xjob"
)

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	if _, err := New(Config{}); err == nil {
		t.Fatal("missing store accepted")
	}
	c := Config{DeadAfter: -time.Second}
	if err := c.Validate(); err == nil {
		t.Fatal("negative DeadAfter accepted")
	}
}

func TestIllegalArgumentWording(t *testing.T) {
	t.Parallel()
	if ErrIllegalArgument.Error() != "Illegal Argument." {
		t.Fatalf("wording %q", ErrIllegalArgument)
	}
	s := &Service{}
	_, err := s.entry(registryParam("EXECUTOR", "", "http://a/"))
	var ve *xjob.ValidationError
	if !errors.Is(err, ErrIllegalArgument) || !errors.As(err, &ve) || ve.Problems[0].Field != "registryKey" {
		t.Fatalf("err = %v", err)
	}
}
