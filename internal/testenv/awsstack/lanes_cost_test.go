package awsstack_test

import (
	"context"
	"math"
	"net/http"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	awslambda "github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/lambda/types"

	"github.com/xjobdev/xjob/internal/testenv/awsstack"
	"github.com/xjobdev/xjob/internal/testenv/tool"
)

// TestAsyncInvocationsPriced checks that the meter prices the lanes'
// asynchronous invocations of the dispatch function as Lambda bills
// them: each attempt (Lambda's retries of a failed event included) is a
// request at $0.20 a million, and its duration rounded up to the
// millisecond is billed GB-seconds. One event that succeeds and one that
// fails every attempt are four invocations. It runs with the functions in
// process and as the real bootstrap binaries (the meter times the
// bootstrap's invocation from outside).
func TestAsyncInvocationsPriced(t *testing.T) {
	tool.SkipIfShort(t, "the AWS emulators (dynalite, fauxqs)")
	t.Parallel()
	onLaneStacks(t, false, func(t *testing.T, ctx context.Context, d *awsstack.Deployment, _ *lockedBuffer) {
		client := awslambda.NewFromConfig(aws.Config{Region: awsstack.Region,
			Credentials: credentials.NewStaticCredentialsProvider("t", "t", "")},
			func(o *awslambda.Options) { o.BaseEndpoint = aws.String(d.InvokeEndpoint()) })
		before := d.Meter().Snapshot()
		for _, payload := range []string{`{"lane":"fast","tasks":[]}`, `{"lane":"sideways","tasks":[]}`} {
			out, err := client.Invoke(ctx, &awslambda.InvokeInput{FunctionName: aws.String(awsstack.DispatchFunction),
				InvocationType: types.InvocationTypeEvent, Payload: []byte(payload)})
			if err != nil || out.StatusCode != http.StatusAccepted {
				t.Fatalf("invoke %s: %v %+v", payload, err, out)
			}
		}
		waitSettled(t, d, 2)
		u := d.Meter().Snapshot().Sub(before)
		inv := u.Invokes["dispatch"]
		if inv.Invocations != 4 {
			t.Fatalf("dispatch invocations metered: %d, want 4 (one, and a failed event's three attempts)", inv.Invocations)
		}
		if inv.Duration <= 0 || inv.Billed < inv.Duration || inv.Billed%time.Millisecond != 0 ||
			inv.Billed > inv.Duration+4*time.Millisecond {
			t.Errorf("dispatch duration %v billed %v: want each invocation rounded up to the millisecond", inv.Duration, inv.Billed)
		}
		p := awsstack.ListPrices()
		c := u.Cost(1, p)
		var found bool
		for _, f := range c.Functions {
			if f.Function != "dispatch" {
				continue
			}
			found = true
			if want := 4 * 0.20; math.Abs(f.LambdaRequestsPerM-want) > 1e-9 {
				t.Errorf("dispatch requests priced $%v for 4 invocations a trigger, per million triggers; want $%v", f.LambdaRequestsPerM, want)
			}
			if want := inv.Billed.Seconds() * p.MemoryGB * p.LambdaGBSecond * 1e6; want <= 0 || math.Abs(f.LambdaDurationPerM-want) > 1e-9 {
				t.Errorf("dispatch duration priced $%v per million, want $%v", f.LambdaDurationPerM, want)
			}
		}
		if !found {
			t.Errorf("no dispatch function in the cost: %+v", c.Functions)
		}
	})
}
