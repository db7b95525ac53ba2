package target

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/xjobdev/xjob/internal/strictjson"
)

// An AWS job (glue type AWS) calls one AWS resource, named by its ARN, the
// way EventBridge Scheduler's templated targets do: the service is the
// ARN's, and the call is fixed per service.
//
//	lambda   arn:aws:lambda:<region>:<account>:function:<name>[:<qualifier>]  Invoke
//	sqs      arn:aws:sqs:<region>:<account>:<queue>                           SendMessage
//	sns      arn:aws:sns:<region>:<account>:<topic>                           Publish
//	events   arn:aws:events:<region>:<account>:event-bus/<name>               PutEvents
//	states   arn:aws:states:<region>:<account>:stateMachine:<name>            StartExecution
//
// What a job may call is decided by the operator, not by whoever edits
// the job: the ARN must be in an AllowList (and the deployment's IAM
// grants exactly those ARNs), checked at save and again at each fire.

// AWS services a target may name (the ARN's service field).
const (
	ServiceLambda = "lambda"
	ServiceSQS    = "sqs"
	ServiceSNS    = "sns"
	ServiceEvents = "events"
	ServiceStates = "states"
)

// Lambda invocation types.
const (
	InvokeSync  = "RequestResponse"
	InvokeAsync = "Event"
)

// Limits of an AWS spec.
const (
	MaxARNLen = 1600
	// MaxInputLen bounds the input template; the rendered input is
	// bounded by the smallest service limit (SQS, SNS and EventBridge
	// entries: 256 KiB).
	MaxInputLen     = 64 << 10
	MaxRenderedLen  = 256 << 10
	MaxSubjectLen   = 100
	MaxEventNameLen = 256
	// DefaultEventSource and DefaultDetailType name an EventBridge event
	// when the spec does not.
	DefaultEventSource = "xjob"
	DefaultDetailType  = "xjob job fired"
)

// ARN is a parsed Amazon Resource Name of a resource an AWS job may call.
// It is parsed here, not by the SDK's aws/arn: the core packages link no
// AWS SDK (arch_test.go), only the adapters that call AWS do.
type ARN struct {
	Partition, Service, Region, Account, Resource string
}

// String is the ARN as written.
func (a ARN) String() string {
	return "arn:" + a.Partition + ":" + a.Service + ":" + a.Region + ":" + a.Account + ":" + a.Resource
}

// Name is the resource's name: a function's (with its qualifier), a
// queue's, a topic's, an event bus's or a state machine's.
func (a ARN) Name() string {
	switch a.Service {
	case ServiceLambda:
		return strings.TrimPrefix(a.Resource, "function:")
	case ServiceEvents:
		return strings.TrimPrefix(a.Resource, "event-bus/")
	case ServiceStates:
		return strings.TrimPrefix(a.Resource, "stateMachine:")
	}
	return a.Resource
}

// ParseARN reads and checks the ARN of a resource an AWS job may call:
// one of the five services, a region, a 12-digit account and the
// service's resource form. Partitions other than aws (aws-cn,
// aws-us-gov) are accepted.
func ParseARN(s string) (ARN, error) {
	if len(s) > MaxARNLen {
		return ARN{}, fmt.Errorf("is %d bytes, at most %d allowed", len(s), MaxARNLen)
	}
	parts := strings.SplitN(s, ":", 6)
	if len(parts) != 6 || parts[0] != "arn" {
		return ARN{}, fmt.Errorf("%q is not an ARN (arn:aws:<service>:<region>:<account>:<resource>)", clip(s))
	}
	a := ARN{Partition: parts[1], Service: parts[2], Region: parts[3], Account: parts[4], Resource: parts[5]}
	switch {
	case a.Partition != "aws" && !strings.HasPrefix(a.Partition, "aws-"):
		return ARN{}, fmt.Errorf("%q: unknown partition %q", clip(s), clip(a.Partition))
	case !validRegion(a.Region):
		return ARN{}, fmt.Errorf("%q: %q is not a region", clip(s), clip(a.Region))
	case !validAccount(a.Account):
		return ARN{}, fmt.Errorf("%q: the account must be 12 digits", clip(s))
	}
	var ok bool
	switch a.Service {
	case ServiceLambda:
		name, qual, hasQual := strings.Cut(strings.TrimPrefix(a.Resource, "function:"), ":")
		ok = strings.HasPrefix(a.Resource, "function:") && validName(name, 64, "-_") && (!hasQual || validName(qual, 128, "-_$"))
	case ServiceSQS, ServiceSNS:
		ok = validName(strings.TrimSuffix(a.Resource, ".fifo"), 256-5, "-_")
	case ServiceEvents:
		ok = strings.HasPrefix(a.Resource, "event-bus/") && validName(a.Name(), 256, "-_./")
	case ServiceStates:
		ok = strings.HasPrefix(a.Resource, "stateMachine:") && validName(a.Name(), 80, "-_")
	default:
		return ARN{}, fmt.Errorf("%q: service %q is not a target; use lambda, sqs, sns, events or states", clip(s), clip(a.Service))
	}
	if !ok {
		return ARN{}, fmt.Errorf("%q is not the ARN of %s", clip(s), resourceForm[a.Service])
	}
	return a, nil
}

var resourceForm = map[string]string{
	ServiceLambda: "a Lambda function (…:function:<name>[:<qualifier>])",
	ServiceSQS:    "an SQS queue (…:<queue name>)",
	ServiceSNS:    "an SNS topic (…:<topic name>)",
	ServiceEvents: "an EventBridge event bus (…:event-bus/<name>)",
	ServiceStates: "a Step Functions state machine (…:stateMachine:<name>)",
}

func validRegion(s string) bool {
	if len(s) < 4 || len(s) > 32 {
		return false
	}
	return validName(s, 32, "-") && strings.Contains(s, "-")
}

func validAccount(s string) bool {
	if len(s) != 12 {
		return false
	}
	_, err := strconv.ParseUint(s, 10, 64)
	return err == nil
}

// validName reports a non-empty name of at most max ASCII letters, digits
// and the extra characters.
func validName(s string, max int, extra string) bool {
	if s == "" || len(s) > max {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte(extra, c) >= 0) {
			return false
		}
	}
	return true
}

// AllowList is the set of ARNs an operator lets AWS jobs call.
type AllowList struct {
	arns map[string]bool
	list []string
}

// ParseAllowList reads ARNs separated by commas, spaces or line breaks
// (the flag's, the variable's and the stack parameter's form). Each must
// be an ARN a job may call (ParseARN); the error names the first that is
// not. An empty list allows nothing.
func ParseAllowList(s string) (AllowList, error) {
	al := AllowList{arns: map[string]bool{}}
	for _, f := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == '\n' || r == '\t' || r == '\r' }) {
		if _, err := ParseARN(f); err != nil {
			return AllowList{}, fmt.Errorf("allowed target ARN %w", err)
		}
		if !al.arns[f] {
			al.arns[f] = true
			al.list = append(al.list, f)
		}
	}
	return al, nil
}

// Allows reports whether arn is listed (exactly: a function's qualified
// ARN is another ARN, as it is for IAM).
func (al AllowList) Allows(arn string) bool { return al.arns[arn] }

// ARNs is the list in the order given.
func (al AllowList) ARNs() []string { return append([]string(nil), al.list...) }

// Len is how many ARNs are listed.
func (al AllowList) Len() int { return len(al.list) }

// AWSSpec is what an AWS job calls, as its GLUE source holds it (JSON).
type AWSSpec struct {
	// ARN names the resource, and through its service the call.
	ARN string `json:"arn"`
	// Input is a template: the Lambda payload, the SQS message body, the
	// SNS message, the EventBridge event's detail or the execution's
	// input. Empty means DefaultInput. Lambda, EventBridge and Step
	// Functions need JSON, which is checked at save and at each fire.
	Input string `json:"input,omitempty"`
	// InvocationType is Lambda's: RequestResponse (default: the call
	// waits, and the function's result is the log's) or Event (queued by
	// Lambda; the log says it was accepted).
	InvocationType string `json:"invocationType,omitempty"`
	// MessageGroupID is a FIFO queue's or topic's message group (a
	// template); required there, refused elsewhere.
	MessageGroupID string `json:"messageGroupId,omitempty"`
	// Subject is an SNS message's subject (a template).
	Subject string `json:"subject,omitempty"`
	// Source and DetailType name an EventBridge event (defaults
	// DefaultEventSource, DefaultDetailType).
	Source     string `json:"source,omitempty"`
	DetailType string `json:"detailType,omitempty"`
}

// DefaultInput is the input of a spec that gives none: what the trigger
// knows, as JSON (the context attributes EventBridge Scheduler offers).
const DefaultInput = `{"jobId": {{jobId}}, "logId": {{logId}}, "param": {{param|json}}, "scheduleTime": "{{scheduleTime}}", "shardIndex": {{shardIndex}}, "shardTotal": {{shardTotal}}}`

// ParseAWS reads an AWS job's spec from its GLUE source and checks it
// (strict JSON, then CheckAWS). The error is Problems.
func ParseAWS(source string) (AWSSpec, error) {
	var s AWSSpec
	if strings.TrimSpace(source) == "" {
		return AWSSpec{}, Problems{{Field: "arn", Message: "is required (the source of an AWS job is its target: {\"arn\": …})"}}
	}
	if err := strictjson.Decode([]byte(source), &s, strictjson.Options{DisallowUnknown: true}); err != nil {
		var se *strictjson.Error
		field := ""
		if errors.As(err, &se) {
			field = se.Path
		}
		return AWSSpec{}, Problems{{Field: field, Message: "not an AWS target spec: " + err.Error()}}
	}
	if err := s.Check(); err != nil {
		return AWSSpec{}, err
	}
	return s, nil
}

// Check validates every field; the error is Problems. It does not
// consult an AllowList: the caller does (admin at save, the built-in
// executor at each fire).
func (s AWSSpec) Check() error {
	var p Problems
	a, err := ParseARN(s.ARN)
	if strings.TrimSpace(s.ARN) == "" {
		p.add("arn", "is required")
	} else if err != nil {
		p.add("arn", "%v", err)
	}
	s.checkInput(&p, a.Service)
	s.checkFields(&p, a)
	if len(p) > 0 {
		return p
	}
	return nil
}

// checkInput adds the input's problems for a target of service ("" when
// the ARN did not parse).
func (s AWSSpec) checkInput(p *Problems, service string) {
	if len(s.Input) > MaxInputLen {
		p.add("input", "is %d bytes, at most %d allowed", len(s.Input), MaxInputLen)
	} else if t, err := ParseTemplate(s.Input); err != nil {
		p.add("input", "%v", err)
	} else if service != "" && needsJSON(service) && s.Input != "" {
		// Rendered with sample values of every kind: a template that is
		// JSON only for some parameters fails at fire, named there.
		if out := t.Render(Vars{Param: "x"}, encRaw); !json.Valid([]byte(out)) {
			p.add("input", "%s takes JSON: the input rendered with param \"x\" is not JSON (write {{param|json}} for a string)", serviceTitle[service])
		}
	}
}

// checkFields adds the problems of the fields that belong to one service
// each (a set field of another service's is one).
func (s AWSSpec) checkFields(p *Problems, a ARN) {
	only := func(field, val, service string) {
		if val != "" && a.Service != "" && a.Service != service {
			p.add(field, "applies only to %s targets", serviceTitle[service])
		}
	}
	only("invocationType", s.InvocationType, ServiceLambda)
	if s.InvocationType != "" && s.InvocationType != InvokeSync && s.InvocationType != InvokeAsync {
		p.add("invocationType", "must be %s or %s, got %q", InvokeSync, InvokeAsync, clip(s.InvocationType))
	}
	only("subject", s.Subject, ServiceSNS)
	checkText(p, "subject", s.Subject, MaxSubjectLen)
	only("source", s.Source, ServiceEvents)
	checkText(p, "source", s.Source, MaxEventNameLen)
	if strings.HasPrefix(s.Source, "aws.") {
		p.add("source", "sources starting with aws. are AWS's own")
	}
	only("detailType", s.DetailType, ServiceEvents)
	checkText(p, "detailType", s.DetailType, MaxEventNameLen)
	fifo := (a.Service == ServiceSQS || a.Service == ServiceSNS) && strings.HasSuffix(a.Resource, ".fifo")
	switch {
	case fifo && s.MessageGroupID == "":
		p.add("messageGroupId", "is required by a FIFO %s", a.Resource)
	case !fifo && s.MessageGroupID != "" && a.Service != "":
		p.add("messageGroupId", "applies only to FIFO queues and topics")
	}
	if s.MessageGroupID != "" {
		checkText(p, "messageGroupId", s.MessageGroupID, 128)
		if _, err := ParseTemplate(s.MessageGroupID); err != nil {
			p.add("messageGroupId", "%v", err)
		}
	}
	if s.Subject != "" {
		if _, err := ParseTemplate(s.Subject); err != nil {
			p.add("subject", "%v", err)
		}
	}
}

var serviceTitle = map[string]string{
	ServiceLambda: "Lambda", ServiceSQS: "SQS", ServiceSNS: "SNS", ServiceEvents: "EventBridge", ServiceStates: "Step Functions",
}

func needsJSON(service string) bool {
	return service == ServiceLambda || service == ServiceEvents || service == ServiceStates
}

// checkText bounds a one-line field.
func checkText(p *Problems, field, v string, max int) {
	switch {
	case len(v) > max:
		p.add(field, "is %d bytes, at most %d allowed", len(v), max)
	case strings.ContainsAny(v, "\r\n\x00"):
		p.add(field, "must not contain line breaks or NUL")
	}
}

// Canonical is the spec's JSON as it is stored (fixed field order).
func (s AWSSpec) Canonical() string {
	b, _ := json.Marshal(s) // strings always marshal
	return string(b)
}

// AWSRequest is one rendered AWS call.
type AWSRequest struct {
	ARN ARN
	// Input is the rendered payload, message, detail or execution input.
	Input          string
	InvocationType string // Lambda: InvokeSync or InvokeAsync
	MessageGroupID string
	Subject        string
	Source         string
	DetailType     string
	// Token is unique to the run (job and log id): an SQS FIFO message's
	// deduplication id and a Step Functions execution's name, so that a
	// call sent twice for one run starts one execution.
	Token string
}

// Render fills the spec's templates with v. It fails when the rendered
// input is not JSON where the service needs it, or too long.
func (s AWSSpec) Render(v Vars) (AWSRequest, error) {
	a, err := ParseARN(s.ARN)
	if err != nil {
		return AWSRequest{}, fmt.Errorf("arn: %w", err)
	}
	in := s.Input
	if in == "" {
		in = DefaultInput
	}
	t, err := ParseTemplate(in)
	if err != nil {
		return AWSRequest{}, fmt.Errorf("input: %w", err)
	}
	r := AWSRequest{ARN: a, Input: t.Render(v, encRaw), InvocationType: s.InvocationType, Source: s.Source, DetailType: s.DetailType,
		Token: "xjob-" + strconv.FormatInt(v.JobID, 10) + "-" + strconv.FormatInt(v.LogID, 10)}
	if len(r.Input) > MaxRenderedLen {
		return AWSRequest{}, fmt.Errorf("input: rendered to %d bytes, at most %d allowed", len(r.Input), MaxRenderedLen)
	}
	if needsJSON(a.Service) && !json.Valid([]byte(r.Input)) {
		return AWSRequest{}, fmt.Errorf("input: %s takes JSON, the rendered input is not (write {{param|json}} for a string)", serviceTitle[a.Service])
	}
	if a.Service == ServiceLambda && r.InvocationType == "" {
		r.InvocationType = InvokeSync
	}
	if a.Service == ServiceEvents {
		r.Source = cmp.Or(r.Source, DefaultEventSource)
		r.DetailType = cmp.Or(r.DetailType, DefaultDetailType)
	}
	for _, f := range []struct {
		name string
		src  string
		dst  *string
	}{{"messageGroupId", s.MessageGroupID, &r.MessageGroupID}, {"subject", s.Subject, &r.Subject}} {
		t, err := ParseTemplate(f.src)
		if err != nil {
			return AWSRequest{}, fmt.Errorf("%s: %w", f.name, err)
		}
		*f.dst = t.Render(v, encRaw)
		if strings.ContainsAny(*f.dst, "\r\n\x00") {
			return AWSRequest{}, fmt.Errorf("%s: the rendered value holds a line break or NUL", f.name)
		}
	}
	if s.MessageGroupID != "" && r.MessageGroupID == "" {
		return AWSRequest{}, errors.New("messageGroupId: rendered empty")
	}
	return r, nil
}

// Kind is how the built-in executor names a target in a log: the
// service's title and the resource's name, never the account.
func (r AWSRequest) Kind() string {
	return serviceTitle[r.ARN.Service] + " " + r.ARN.Name()
}
