package awsstack

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/xjobdev/xjob/internal/adapter/awsconfig"
	"github.com/xjobdev/xjob/internal/testenv/emulator"
	"github.com/xjobdev/xjob/pkg/clock"
)

// TestHotTrackerLimits holds one item and one partition key to their
// per-second limits on a fake clock: the budget is per second, per item
// and per key, and a new second gives it back.
func TestHotTrackerLimits(t *testing.T) {
	t.Parallel()
	clk := clock.NewFake(time.Unix(1_800_000_000, 0))
	h := newHotTracker(clk)
	h.wcu, h.rcu = 10, 30
	for i := range 10 {
		if !h.admit([]string{"t|a"}, []string{"t|a"}, 1, 0) {
			t.Fatalf("write %d throttled under the limit", i)
		}
		h.add("t|a", "t|a", 1, 0)
	}
	clk.Advance(999 * time.Millisecond) // still the same second
	if h.admit([]string{"t|a"}, []string{"t|a"}, 1, 0) {
		t.Error("write past 10 WCU in one second admitted")
	}
	if !h.admit([]string{"t|b"}, []string{"t|b"}, 1, 0) {
		t.Error("another item throttled")
	}
	if !h.admit([]string{"t|a"}, nil, 0, 0.5) {
		t.Error("a read of the write-hot item throttled")
	}
	// A key shared by two items is held to the limit as a whole.
	h.add("t|k|1", "t|k", 6, 0)
	h.add("t|k|2", "t|k", 4, 0)
	if h.admit([]string{"t|k|3"}, []string{"t|k"}, 1, 0) {
		t.Error("write past the key's limit admitted")
	}
	got := h.snapshot()
	if got.ItemW.Key != "t|a" || got.ItemW.WCU != 10 || got.ItemW.At != 1_800_000_000 || got.KeyW.WCU != 10 || got.Throttled != 2 {
		t.Errorf("snapshot = %+v", got)
	}
	clk.Advance(time.Millisecond) // the next second: the budget is back
	if !h.admit([]string{"t|a"}, []string{"t|a"}, 1, 0) || !h.admit([]string{"t|k|3"}, []string{"t|k"}, 1, 0) {
		t.Error("a write in the next second throttled")
	}
	if got := h.snapshot(); got.Throttled != 2 {
		t.Errorf("throttled %d, want the 2 of the first second", got.Throttled)
	}
}

func TestHashValue(t *testing.T) {
	vals := map[string]ddbtypes.AttributeValue{":p": &ddbtypes.AttributeValueMemberS{Value: "p42"},
		":lo": &ddbtypes.AttributeValueMemberS{Value: "a"}}
	for _, tc := range []struct{ cond, want string }{
		{"pk = :p", "p42"},
		{"#pk = :p AND sk > :lo", "p42"},
		{"(#pk = :p) AND (sk BETWEEN :lo AND :lo)", "p42"},
	} {
		got, ok := hashValue(tc.cond, "pk", map[string]string{"#pk": "pk"}, vals)
		if !ok || got != tc.want {
			t.Errorf("hashValue(%q) = %q, %v", tc.cond, got, ok)
		}
	}
	if _, ok := hashValue("sk = :p", "pk", nil, vals); ok {
		t.Error("a sort key condition taken for the hash key")
	}
}

func TestLostUnits(t *testing.T) {
	big := item{"pk": &ddbtypes.AttributeValueMemberS{Value: "x"}, "b": &ddbtypes.AttributeValueMemberB{Value: make([]byte, 5000)}}
	small := item{"pk": &ddbtypes.AttributeValueMemberS{Value: "x"}}
	if got := lostUnits(&dynamodb.PutItemInput{Item: big}, nil); got != 5 {
		t.Errorf("lost put of 5 KB = %v units, want 5", got)
	}
	if got := lostUnits(&dynamodb.UpdateItemInput{}, &indexedWrite{old: big}); got != 5 {
		t.Errorf("lost update of a stored 5 KB item = %v units, want 5", got)
	}
	if got := lostUnits(&dynamodb.PutItemInput{Item: small}, nil); got != 1 {
		t.Errorf("lost small put = %v units, want 1", got)
	}
}

// TestMeterThrottlesHotItem writes one item past its per-second limit
// through a metered client on dynalite: the excess is answered with
// ProvisionedThroughputExceededException (after the SDK's retries), not
// billed, and counted; a conditional write that loses is billed at the
// item's size.
func TestMeterThrottlesHotItem(t *testing.T) {
	dir := emulator.InstalledDir(t)
	dyn, err := emulator.StartDynalite(dir, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer dyn.Stop()
	ctx := context.Background()
	// The limits count seconds of a fake clock, so that the eight writes
	// share one second however slowly they run.
	clk := clock.NewFake(time.Unix(1_800_000_000, 0))
	m := newMeter(clk)
	m.SetPartitionLimits(5, 100)
	cfg := aws.Config{Region: Region, Credentials: credentials.NewStaticCredentialsProvider("x", "x", "")}
	raw := dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) { o.BaseEndpoint = aws.String(dyn.Endpoint()) })
	spec := &dynamodb.CreateTableInput{TableName: aws.String("hot"), BillingMode: ddbtypes.BillingModePayPerRequest,
		KeySchema:            []ddbtypes.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: ddbtypes.KeyTypeHash}},
		AttributeDefinitions: []ddbtypes.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: ddbtypes.ScalarAttributeTypeS}}}
	if _, err := raw.CreateTable(ctx, spec); err != nil {
		t.Fatal(err)
	}
	m.Describe(raw, []*dynamodb.CreateTableInput{spec}, "hot")
	c := dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) {
		o.BaseEndpoint = aws.String(dyn.Endpoint())
		o.APIOptions = append(o.APIOptions, m.Middleware("fn"))
		o.RetryMaxAttempts = 1 // see each throttle
	})
	// The SDK's standard retryer with a back-off that moves the fake clock
	// on by a second instead of sleeping: each retry lands in a fresh
	// second, as a real back-off eventually does.
	retrying := dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) {
		o.BaseEndpoint = aws.String(dyn.Endpoint())
		o.APIOptions = append(o.APIOptions, m.Middleware("fn"))
		o.Retryer = retry.NewStandard(func(so *retry.StandardOptions) {
			so.MaxAttempts = 3
			so.RateLimiter = ratelimit.None
			so.Backoff = retry.BackoffDelayerFunc(func(int, error) (time.Duration, error) {
				clk.Advance(time.Second)
				return 0, nil
			})
		})
	})
	put := func(v string) error {
		_, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("hot"), Item: item{
			"pk": &ddbtypes.AttributeValueMemberS{Value: "a"}, "v": &ddbtypes.AttributeValueMemberS{Value: v}}})
		return err
	}
	var throttled int
	for i := range 8 {
		err := put("x")
		var thr *ddbtypes.ProvisionedThroughputExceededException
		switch {
		case errors.As(err, &thr):
			throttled++
		case err != nil:
			t.Fatalf("put %d: %v", i, err)
		}
	}
	if throttled != 3 {
		t.Errorf("%d of 8 writes in one second throttled at 5 WCU/s, want 3", throttled)
	}
	h := m.Hottest()
	if h.ItemW.WCU != 5 || h.ItemW.At != 1_800_000_000 || h.Throttled != 3 {
		t.Errorf("hottest = %+v", h)
	}
	// The SDK's retryer backs off and gets the writes through, starting
	// in a fresh second so that the budget the first loop spent is back:
	// five in it, the sixth throttled and retried in the next, and so on.
	clk.Advance(time.Second)
	for i := range 8 {
		if _, err := retrying.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("hot"), Item: item{
			"pk": &ddbtypes.AttributeValueMemberS{Value: "a"}}}); err != nil {
			t.Fatalf("retried put %d: %v", i, err)
		}
	}
	if h := m.Hottest(); h.ItemW.WCU != 5 || h.Throttled != 4 {
		t.Errorf("after the retried writes: hottest = %+v, want 5 WCU at most in a second and one more throttle", h)
	}
	// A lost condition on a 3 KB item is billed 3 units.
	clk.Advance(time.Second)
	if _, err := raw.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("hot"), Item: item{
		"pk": &ddbtypes.AttributeValueMemberS{Value: "b"}, "v": &ddbtypes.AttributeValueMemberB{Value: make([]byte, 3000)}}}); err != nil {
		t.Fatal(err)
	}
	before := m.Snapshot()
	_, err = c.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String("hot"),
		Key:                       item{"pk": &ddbtypes.AttributeValueMemberS{Value: "b"}},
		UpdateExpression:          aws.String("SET w = :w"),
		ConditionExpression:       aws.String("attribute_not_exists(pk)"),
		ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":w": &ddbtypes.AttributeValueMemberS{Value: "w"}}})
	var ccf *ddbtypes.ConditionalCheckFailedException
	if !errors.As(err, &ccf) {
		t.Fatalf("conditional update: %v", err)
	}
	st := m.Snapshot().Sub(before).Ops["fn"]["dynamodb:UpdateItem"]
	if st.Lost != 1 || st.Derived != 3 {
		t.Errorf("lost update metered %+v, want 1 lost at 3 units", st)
	}
}

// TestAcquireOneEnvironmentPerInvocation: concurrent invocations of a
// function each get an environment of their own; a finished one's is
// reused.
func TestAcquireOneEnvironmentPerInvocation(t *testing.T) {
	d := &Deployment{meter: NewMeter(), idle: map[string][]string{}, envs: map[string]int{}}
	k1, r1 := d.acquire("callback")
	k2, r2 := d.acquire("callback")
	if k1 == k2 || k1 != "callback" {
		t.Fatalf("concurrent environments %q, %q", k1, k2)
	}
	// A new environment's first invocation waits for its Init, once.
	if !d.initDue(k2) || d.initDue(k2) {
		t.Errorf("environment %q: Init due once after its creation", k2)
	}
	r2()
	k3, r3 := d.acquire("callback")
	if k3 != k2 {
		t.Errorf("idle environment %q not reused, got %q", k2, k3)
	}
	if d.initDue(k3) {
		t.Errorf("reused environment %q: Init due again", k3)
	}
	r1()
	r3()
	if n := d.Environments("callback"); n != 2 {
		t.Errorf("%d environments, want 2", n)
	}
}

// TestAcquireKeepsToReservedConcurrency: a function with a reserved
// concurrency (the callback function's, 15) never has more environments
// than that; the invocation past it waits for one to be released and
// runs in it, as the retry of a throttled invocation would.
func TestAcquireKeepsToReservedConcurrency(t *testing.T) {
	f, _ := awsconfig.Lookup("callback")
	if f.ReservedConcurrency < 1 {
		t.Fatalf("callback function without a reserved concurrency: %+v", f)
	}
	d := &Deployment{opts: Options{ReservedConcurrency: true}, meter: NewMeter(), idle: map[string][]string{}, envs: map[string]int{}}
	var releases []func()
	for range f.ReservedConcurrency {
		_, r := d.acquire("callback")
		releases = append(releases, r)
	}
	got := make(chan string)
	go func() {
		k, r := d.acquire("callback")
		defer r()
		got <- k
	}()
	select {
	case k := <-got:
		t.Fatalf("invocation %d ran at once in %q, past the reserved concurrency", f.ReservedConcurrency+1, k)
	case <-time.After(50 * time.Millisecond):
	}
	releases[3]()
	if k := <-got; k != "callback#3" {
		t.Errorf("the waiting invocation ran in %q, want the released callback#3", k)
	}
	for i, r := range releases {
		if i != 3 {
			r()
		}
	}
	if n := d.Environments("callback"); n != f.ReservedConcurrency {
		t.Errorf("%d environments, want %d", n, f.ReservedConcurrency)
	}
	// A function without one (the ring: its mapping's maximum
	// concurrency bounds it) scales as far as its invocations go.
	for range f.ReservedConcurrency + 1 {
		d.acquire("ring")
	}
	if n := d.Environments("ring"); n != f.ReservedConcurrency+1 {
		t.Errorf("ring: %d environments, want %d", n, f.ReservedConcurrency+1)
	}
	// Each environment created is a cold start the meter bills.
	if c := d.meter.Snapshot().Invokes["callback"].ColdStarts; c != f.ReservedConcurrency {
		t.Errorf("callback: %d cold starts, want one per environment (%d)", c, f.ReservedConcurrency)
	}
	// Deployed as the templates' default, without reservations, the
	// callback function scales as the ring does.
	free := &Deployment{meter: NewMeter(), idle: map[string][]string{}, envs: map[string]int{}}
	for range f.ReservedConcurrency + 1 {
		free.acquire("callback")
	}
	if n := free.Environments("callback"); n != f.ReservedConcurrency+1 {
		t.Errorf("callback without reservations: %d environments, want %d", n, f.ReservedConcurrency+1)
	}
}
