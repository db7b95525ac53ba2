package secrets_test

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	ssmtypes "github.com/aws/aws-sdk-go-v2/service/ssm/types"

	"github.com/xjobdev/xjob/internal/app/lambdaapp/secrets"
	"github.com/xjobdev/xjob/internal/testenv/emulator"
	"github.com/xjobdev/xjob/internal/testenv/tool"
	"github.com/xjobdev/xjob/pkg/clock"
)

// motoSSM starts moto's server and returns an SSM client for it.
func motoSSM(t *testing.T) *ssm.Client {
	t.Helper()
	tool.SkipIfShort(t, "moto (make moto)")
	p, err := emulator.StartMoto(30 * time.Second)
	if errors.Is(err, emulator.ErrNotInstalled) {
		tool.Missing(t, err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Stop)
	return ssm.New(ssm.Options{Region: "us-east-1", BaseEndpoint: aws.String(p.Endpoint()),
		Credentials: credentials.NewStaticCredentialsProvider("x", "x", "")})
}

func put(t *testing.T, c *ssm.Client, name, value string) {
	t.Helper()
	if _, err := c.PutParameter(context.Background(), &ssm.PutParameterInput{Name: aws.String(name), Value: aws.String(value),
		Type: ssmtypes.ParameterTypeSecureString, Overwrite: aws.Bool(true)}); err != nil {
		t.Fatal(err)
	}
}

// TestSecrets reads SecureString parameters from moto's SSM: every line of
// a parameter is a value, the first the current one; a new value is read
// once the held ones are older than the refresh interval (a fake clock
// moves it), not before; a missing
// parameter stops Load with its name.
func TestSecrets(t *testing.T) {
	t.Parallel()
	c := motoSSM(t)
	ctx := context.Background()
	put(t, c, "/t/access", "one")
	put(t, c, "/t/admin", "admin-token-0123456789")
	clk := clock.NewFake(time.Unix(1_700_000_000, 0))
	s := secrets.New(c, []string{"/t/access", "/t/admin"}, time.Minute, clk, slog.New(slog.DiscardHandler))
	if err := s.Load(ctx); err != nil {
		t.Fatal(err)
	}
	if got := s.Values(ctx, "/t/access"); !slices.Equal(got, []string{"one"}) {
		t.Fatalf("access = %v", got)
	}
	put(t, c, "/t/access", "two\none\n")
	clk.Advance(59 * time.Second)
	if got := s.Values(ctx, "/t/access"); !slices.Equal(got, []string{"one"}) {
		t.Errorf("before the refresh interval: %v, want the held value", got)
	}
	clk.Advance(time.Second)
	if got := s.Values(ctx, "/t/access"); !slices.Equal(got, []string{"two", "one"}) {
		t.Errorf("after the refresh interval: %v, want [two one]", got)
	}

	missing := secrets.New(c, []string{"/t/access", "/t/nope"}, time.Minute, clk, slog.New(slog.DiscardHandler))
	if err := missing.Load(ctx); err == nil || !strings.Contains(err.Error(), "/t/nope") {
		t.Errorf("missing parameter: %v, want an error naming it", err)
	}
}
