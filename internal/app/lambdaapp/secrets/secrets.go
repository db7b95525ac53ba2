// Package secrets reads a Lambda function's tokens from SSM Parameter
// Store. It is apart from package wiring so that a function with no
// secrets (the scan) does not link the SSM client.
package secrets

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ssm"

	"github.com/xjobdev/xjob/internal/app/lambdaapp/wiring"
	"github.com/xjobdev/xjob/pkg/clock"
)

// SSMAPI is the part of the SSM client a Store uses.
type SSMAPI interface {
	GetParameters(ctx context.Context, in *ssm.GetParametersInput, optFns ...func(*ssm.Options)) (*ssm.GetParametersOutput, error)
}

// DefaultRefresh is how old the secrets an environment holds may
// get before it reads them again (XJOB_SECRETS_REFRESH): a rotated token
// is in use everywhere within it.
const DefaultRefresh = 5 * time.Minute

// secretFetchTimeout bounds a refresh made in a request's path.
const secretFetchTimeout = 2 * time.Second

// Store holds a function's tokens, kept in SSM Parameter Store as
// SecureString parameters (encrypted with KMS; never in the function's
// environment, the templates' outputs or Terraform's state), read once at
// init and again when older than the refresh interval. A parameter may
// hold several values, one per line: the first is the one the functions
// send, every one is accepted (a rotation in progress; docs/aws.md).
//
// Parameter Store rather than Secrets Manager: standard parameters and
// their API calls cost nothing, where Secrets Manager bills every secret
// monthly and every 10,000 calls; one GetParameters call reads all of a
// function's secrets; and the rotation xjob needs (put a new value, both
// accepted meanwhile) is a put-parameter, not a rotation Lambda.
type Store struct {
	api     SSMAPI
	names   []string
	refresh time.Duration
	clock   clock.Clock
	log     *slog.Logger

	mu         sync.Mutex
	values     map[string][]string // parameter name → its lines
	fetched    time.Time
	refreshing bool
}

// New reads parameters names through api (no I/O until Load).
func New(api SSMAPI, names []string, refresh time.Duration, clk clock.Clock, log *slog.Logger) *Store {
	if refresh <= 0 {
		refresh = DefaultRefresh
	}
	return &Store{api: api, names: slices.Compact(slices.Sorted(slices.Values(names))), refresh: refresh, clock: clk, log: log}
}

// Load reads every parameter; a function that cannot read its secrets
// cannot start, and says which parameter is missing.
func (s *Store) Load(ctx context.Context) error {
	v, err := s.fetch(ctx)
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.values, s.fetched = v, s.clock.Now()
	s.mu.Unlock()
	return nil
}

// Values returns parameter name's values, first the current one. Values
// older than the refresh interval are read again first (one caller
// reads, the others keep the values held); a failed read keeps them and
// is tried again a tenth of the interval later.
func (s *Store) Values(ctx context.Context, name string) []string {
	s.mu.Lock()
	stale := !s.refreshing && s.clock.Now().Sub(s.fetched) >= s.refresh
	if stale {
		s.refreshing = true
	}
	v := s.values[name]
	s.mu.Unlock()
	if !stale {
		return v
	}
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), secretFetchTimeout)
	nv, err := s.fetch(fctx)
	cancel()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.refreshing = false
	if err != nil {
		s.fetched = s.clock.Now().Add(-s.refresh + s.refresh/10)
		s.log.WarnContext(ctx, "secrets not refreshed; the values held stay in use", "err", err)
		return v
	}
	s.values, s.fetched = nv, s.clock.Now()
	return nv[name]
}

func (s *Store) fetch(ctx context.Context) (map[string][]string, error) {
	out, err := s.api.GetParameters(ctx, &ssm.GetParametersInput{Names: s.names, WithDecryption: aws.Bool(true)})
	if err != nil {
		return nil, fmt.Errorf("secrets: ssm get-parameters %s: %w", strings.Join(s.names, ", "), err)
	}
	if len(out.InvalidParameters) > 0 {
		return nil, fmt.Errorf("secrets: no SSM parameter %s (create it: aws ssm put-parameter --type SecureString --name …)",
			strings.Join(out.InvalidParameters, ", "))
	}
	v := map[string][]string{}
	for _, p := range out.Parameters {
		for line := range strings.SplitSeq(aws.ToString(p.Value), "\n") {
			if line = strings.TrimSpace(line); line != "" {
				v[aws.ToString(p.Name)] = append(v[aws.ToString(p.Name)], line)
			}
		}
		if len(v[aws.ToString(p.Name)]) == 0 {
			return nil, fmt.Errorf("secrets: SSM parameter %s is blank", aws.ToString(p.Name))
		}
	}
	return v, nil
}

// FromSSM is the secret source of a function's main (a
// wiring.SecretsFactory): an SSM client from the Lambda environment's
// configuration, the wall clock.
func FromSSM(cfg aws.Config, names []string, refresh time.Duration, log *slog.Logger) wiring.SecretSource {
	return New(ssm.NewFromConfig(cfg), names, refresh, clock.Real{}, log)
}
