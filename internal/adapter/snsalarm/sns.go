// Package snsalarm publishes xjob alarms to an Amazon SNS topic. It is an
// adapter (it imports the AWS SDK), kept out of package alarm so the core
// stays free of cloud SDKs.
package snsalarm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	snstypes "github.com/aws/aws-sdk-go-v2/service/sns/types"

	"github.com/xjobdev/xjob/internal/fallback"
	"github.com/xjobdev/xjob/internal/scheduler/alarm"
	"github.com/xjobdev/xjob/pkg/clock"
	"github.com/xjobdev/xjob/pkg/driver"
)

// SNSAPI is the part of the SNS client an SNS alarmer calls; *sns.Client
// implements it. It is an interface so the Lambda wiring can wrap the client
// (request counting) without this package knowing.
type SNSAPI interface {
	Publish(ctx context.Context, in *sns.PublishInput, opts ...func(*sns.Options)) (*sns.PublishOutput, error)
}

// maxSubject is SNS's limit on a message subject (ASCII, no line breaks).
const maxSubject = 100

// SNS publishes each alarm to an SNS topic, the AWS form of the webhook:
// subscribers (e-mail, chat relays, incident tools, a queue) are configured
// on the topic, so xjob needs no credentials of any of them. The message is
// the webhook's JSON Payload, so one receiver can serve both.
type SNS struct {
	// API is the SNS client. Required.
	API SNSAPI
	// TopicARN is the topic to publish to. Required.
	TopicARN string
	// Clock stamps the payload's sentAt (default clock.Real).
	Clock clock.Clock
}

var _ driver.Alarmer = SNS{}

// Alarm publishes a to the topic: the Payload JSON as the message, a short
// subject for e-mail subscribers, and the event as a message attribute so
// subscriptions can filter on it.
func (s SNS) Alarm(ctx context.Context, a driver.Alarm) error {
	if s.API == nil || s.TopicARN == "" {
		return errors.New("sns alarm: API and TopicARN are required")
	}
	clk := s.Clock
	clk = fallback.Clock(clk)
	body, err := json.Marshal(alarm.NewPayload(a, clk.Now().UnixMilli()))
	if err != nil {
		return fmt.Errorf("sns alarm encode: %w", err)
	}
	_, err = s.API.Publish(ctx, &sns.PublishInput{
		TopicArn: aws.String(s.TopicARN),
		Message:  aws.String(string(body)),
		Subject:  aws.String(Subject(a)),
		MessageAttributes: map[string]snstypes.MessageAttributeValue{
			"event": {DataType: aws.String("String"), StringValue: aws.String(alarm.EventJobFailed)},
		},
	})
	if err != nil {
		return fmt.Errorf("sns alarm publish job %d log %d: %w", a.Job.ID, a.Log.ID, err)
	}
	return nil
}

// Subject is the SNS subject of an alarm: printable ASCII without line
// breaks, at most 100 characters, as SNS requires (it rejects the publish
// otherwise, which would lose the alarm).
func Subject(a driver.Alarm) string {
	s := fmt.Sprintf("xjob: job %d failed (log %d): %s", a.Job.ID, a.Log.ID, a.Job.Description)
	var b strings.Builder
	for _, r := range s {
		if r < 0x20 || r > 0x7e {
			r = '?'
		}
		b.WriteRune(r)
		if b.Len() >= maxSubject {
			break
		}
	}
	return strings.TrimSpace(b.String())
}
