package target

import (
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
