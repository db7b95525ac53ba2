package execclient

import (
	"bytes"
	"fmt"
	"io"
	"testing"
	"testing/iotest"
)

// readReply's short cut answers as readReplySlow does, whatever the
// body and however it arrives.
func TestReadReplyMatchesSlow(t *testing.T) {
	t.Parallel()
	bodies := []string{`{"code":200}`, ` {"code":500}` + "\r\n", `{"code":-1}`, `{"code":0}`, `{"code":-0}`,
		`{"code":200,"msg":null}`, `{"code":"200"}`, `{"code":0200}`, `{"code":+1}`, `{"code":1e2}`,
		`{"code":1234567890}`, `{"code":200}x`, `{"code":200} {}`, "\v{\"code\":200}", `{"code": 200}`,
		`{"code":}`, `{"code":200`, ``, `not json`, `{"code":200,"msg":"` + string(bytes.Repeat([]byte("m"), 100)) + `"}`}
	for _, b := range bodies {
		for _, limit := range []int64{4, 12, 13, 1 << 20} {
			t.Run(fmt.Sprintf("%q/%d", b, limit), func(t *testing.T) {
				t.Parallel()
				checkReply(t, []byte(b), limit)
			})
		}
	}
}

func checkReply(t *testing.T, body []byte, limit int64) {
	t.Helper()
	const u = "http://e:1/run"
	// Each way of delivering the body, compared with readReplySlow on the
	// same delivery (the decoder answers once a value is complete, so
	// what arrived by then matters to both).
	for name, r := range map[string]func() io.Reader{
		"whole":      func() io.Reader { return bytes.NewReader(body) },
		"byte":       func() io.Reader { return iotest.OneByteReader(bytes.NewReader(body)) },
		"eof-with":   func() io.Reader { return iotest.DataErrReader(bytes.NewReader(body)) },
		"error-tail": func() io.Reader { return io.MultiReader(bytes.NewReader(body), iotest.ErrReader(io.ErrClosedPipe)) },
	} {
		want := fmt.Sprintf("%+v", readReplySlow(r(), limit, u))
		if got := fmt.Sprintf("%+v", readReply(r(), limit, u)); got != want {
			t.Errorf("%s %q limit %d:\n got %s\nwant %s", name, body, limit, got, want)
		}
	}
}

func FuzzReadReply(f *testing.F) {
	for _, s := range []string{`{"code":200}`, ` {"code":-7} `, `{"code":200,"msg":"x"}`, `{"code":01}`, `[]`} {
		f.Add([]byte(s), int64(1<<20))
	}
	f.Fuzz(func(t *testing.T, body []byte, limit int64) {
		if limit < 0 || limit > 1<<20 {
			return
		}
		checkReply(t, body, limit)
	})
}

func BenchmarkReadReply(b *testing.B) {
	body := []byte(`{"code":200}`)
	b.Run("slow", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = readReplySlow(bytes.NewReader(body), 1<<20, "http://e:1/run")
		}
	})
	b.Run("fast", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = readReply(bytes.NewReader(body), 1<<20, "http://e:1/run")
		}
	})
}
