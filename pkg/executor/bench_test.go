package executor

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/xjobdev/xjob/pkg/protocol"
)

// BenchmarkRunToCallback measures a trigger from /run (Serve, no HTTP in
// front) through a no-op handler to its result being accepted by an
// httptest admin, with 64 jobs in parallel and callbacks batched.
func BenchmarkRunToCallback(b *testing.B) {
	var got atomic.Int64
	done := make(chan struct{}, 1)
	var want atomic.Int64
	admin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var batch []protocol.HandleCallbackParam
		_ = json.NewDecoder(r.Body).Decode(&batch)
		if got.Add(int64(len(batch))) >= want.Load() {
			select {
			case done <- struct{}{}:
			default:
			}
		}
		_, _ = io.WriteString(w, `{"code":200}`)
	}))
	defer admin.Close()
	e, err := New(Config{AccessToken: tok16,
		AdminAddresses: []string{admin.URL}, LogDir: b.TempDir(), LogRetentionDays: -1,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		b.Fatal(err)
	}
	_ = e.Register("noop", func(context.Context, *Job) error { return nil })
	if err := e.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() { _ = e.Shutdown(context.Background()) }()
	want.Store(int64(b.N))
	bodies := make([][]byte, b.N)
	for i := range bodies {
		bodies[i], _ = json.Marshal(protocol.TriggerParam{JobID: int64(i % 64), ExecutorHandler: "noop",
			LogID: int64(i + 1), LogDateTime: t0.UnixMilli(), GlueType: "BEAN", BroadcastTotal: 1})
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if rt := e.Serve(context.Background(), Request{Method: "POST", URI: "/run", Body: bodies[i]}); rt.Code != 200 {
			b.Fatalf("run: %+v", rt)
		}
	}
	<-done
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "runs/s")
}
