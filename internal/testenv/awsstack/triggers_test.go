package awsstack

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/xjobdev/xjob/internal/testenv/emulator"
)

// TestLongPollBilledOncePerPoll holds the mappings' pollers to what SQS
// bills: pollers waiting on one queue when a message arrives cost one
// request each, however often fauxqs wakes them (it answers every waiting
// poll, empty but for the one that took the message), and the message is
// received once.
func TestLongPollBilledOncePerPoll(t *testing.T) {
	dir := emulator.InstalledDir(t)
	fq, err := emulator.StartFauxqs(dir, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer fq.Stop()
	ctx := context.Background()
	m := NewMeter()
	cfg := aws.Config{Region: Region, Credentials: credentials.NewStaticCredentialsProvider("x", "x", "")}
	client := func(fn string) *sqs.Client {
		return sqs.NewFromConfig(cfg, func(o *sqs.Options) {
			o.BaseEndpoint = aws.String(fq.Endpoint())
			if fn != "" {
				o.APIOptions = append(o.APIOptions, m.Middleware(fn))
			}
		})
	}
	free := client("")
	q, err := free.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("poll")})
	if err != nil {
		t.Fatal(err)
	}
	p := poller{billed: client("esm:test"), free: free}
	const pollers = 3
	var (
		wg  sync.WaitGroup
		mu  sync.Mutex
		got []sqstypes.Message
	)
	for range pollers {
		wg.Go(func() {
			msgs, err := p.longPoll(ctx, aws.ToString(q.QueueUrl), 10, 2*time.Second)
			if err != nil {
				t.Error(err)
			}
			mu.Lock()
			got = append(got, msgs...)
			mu.Unlock()
		})
	}
	time.Sleep(300 * time.Millisecond) // the pollers are waiting
	if _, err := free.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: q.QueueUrl, MessageBody: aws.String("x")}); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if len(got) != 1 {
		t.Errorf("received %d messages, want 1", len(got))
	}
	if n := m.Snapshot().Requests("esm:test", "sqs"); n != pollers {
		t.Errorf("billed %d receives, want %d (one per long poll)", n, pollers)
	}
}
