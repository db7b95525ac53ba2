package target

import (
	"encoding/json"
	"strings"
	"testing"
)

// FuzzParse: any GLUE source is either refused with named problems or
// accepted as a spec whose canonical form parses to itself and renders
// without panicking; a rendered header never holds a line break.
func FuzzParse(f *testing.F) {
	f.Add(`{"url":"https://h/{{param}}?a={{logId|json}}","method":"POST","body":"{{param|json}}","successCodes":"200-299,304"}`)
	f.Add(`{"url":"http://h","headers":{"X":"{{param}}"},"secretHeaders":{"Authorization":"ref:0123456789abcdef"}}`)
	f.Add(`{"url":"https://{{param}}/"}`)
	f.Add(`{"url":"http://[::1]:80/x"}`)
	f.Add(`{{`)
	f.Fuzz(func(t *testing.T, src string) {
		s, err := Parse(src)
		if err != nil {
			if _, ok := err.(Problems); !ok {
				t.Fatalf("Parse error is %T, want Problems", err)
			}
			return
		}
		c := s.Canonical()
		again, err := Parse(c)
		if err != nil || again.Canonical() != c {
			t.Fatalf("canonical form %q does not round-trip: %v", c, err)
		}
		req, err := s.Render(Vars{Param: "x\r\ny", LogID: 1}, nil)
		if err != nil {
			return
		}
		for k, v := range req.Header {
			if strings.ContainsAny(v, "\r\n") {
				t.Fatalf("header %s rendered with a line break", k)
			}
		}
	})
}

// FuzzParseAWS: any GLUE source of an AWS job is refused with named
// problems or accepted as a spec whose canonical form parses to itself,
// whose ARN an allow list of that one ARN accepts, and which renders
// either to an error or to an input that is JSON where the service needs
// it.
func FuzzParseAWS(f *testing.F) {
	f.Add(`{"arn":"arn:aws:lambda:us-east-1:123456789012:function:f","input":"{\"p\": {{param|json}}}"}`)
	f.Add(`{"arn":"arn:aws:sqs:us-east-1:123456789012:q.fifo","messageGroupId":"{{jobId}}"}`)
	f.Add(`{"arn":"arn:aws:events:us-east-1:123456789012:event-bus/default","source":"s","detailType":"d"}`)
	f.Add(`{"arn":"arn:aws:states:us-east-1:123456789012:stateMachine:m","input":"{}"}`)
	f.Add(`{"arn":"arn:aws:sns:us-east-1:123456789012:t","subject":"{{param}}"}`)
	f.Fuzz(func(t *testing.T, src string) {
		s, err := ParseAWS(src)
		if err != nil {
			if _, ok := err.(Problems); !ok {
				t.Fatalf("ParseAWS error is %T, want Problems", err)
			}
			return
		}
		c := s.Canonical()
		again, err := ParseAWS(c)
		if err != nil || again.Canonical() != c {
			t.Fatalf("canonical form %q does not round-trip: %v", c, err)
		}
		al, err := ParseAllowList(s.ARN)
		if err != nil || !al.Allows(s.ARN) || al.Len() != 1 {
			t.Fatalf("allow list of the spec's own ARN %q: %v", s.ARN, err)
		}
		r, err := s.Render(Vars{Param: "x\ny", LogID: 1})
		if err != nil {
			return
		}
		if needsJSON(r.ARN.Service) && !json.Valid([]byte(r.Input)) {
			t.Fatalf("rendered %s input %q is not JSON", r.ARN.Service, r.Input)
		}
		if strings.ContainsAny(r.Subject+r.MessageGroupID, "\r\n") {
			t.Fatalf("rendered a line break into a one-line field")
		}
	})
}
