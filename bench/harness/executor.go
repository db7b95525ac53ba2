package harness

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/xjobdev/xjob/pkg/protocol"
)

// Receipt is one /run call the executor received.
type Receipt struct {
	JobID int64
	LogID int64
	// At is the receive time, Unix microseconds (wall clock, same host as
	// the scheduler, so it compares with scheduled fire times directly).
	At int64
}

// Executor is a minimal, fast xxl-job executor: it answers /run at once,
// records a receipt, and reports success to the admin's /api/callback in
// batches (as the SDK does, but without per-run log files, which would
// measure the disk rather than the scheduler).
type Executor struct {
	srv      *http.Server
	addr     string
	adminURL atomic.Pointer[[]string] // callback targets, tried in turn
	adminAt  atomic.Int64             // the target that answered last
	token    atomic.Pointer[string]   // access token sent with callbacks ("" or nil: none)

	mu       sync.Mutex
	receipts []Receipt
	seen     map[int64]bool // log ids received, what /log answers from

	cbq      chan protocol.HandleCallbackParam
	cbFailed atomic.Int64
	cbSent   atomic.Int64
	cbBatch  atomic.Int64 // results per callback request at most (0: 1000)
	drain    bool         // one sender that drains the queue per request (StartXXLExecutor)
	stop     chan struct{}
	stopped  chan struct{}

	// onCallback, when set, hears the log ids of every callback request
	// the admin took and when the request returned (OnCallback).
	onCallback atomic.Pointer[func(logIDs []int64, returned time.Time)]
}

// StartExecutor listens on a loopback port and starts the callback batcher.
func StartExecutor() (*Executor, error) { return startExecutor(false) }

// StartXXLExecutor is an executor whose callbacks behave like xxl-job's
// callback thread: one sender per process that takes a result, drains
// whatever else has queued meanwhile and sends it all in one request,
// then waits for the next. A fleet of them sends a few results per
// request each (one when sparse), not a thousand.
func StartXXLExecutor() (*Executor, error) { return startExecutor(true) }

func startExecutor(drain bool) (*Executor, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("executor listen: %w", err)
	}
	e := &Executor{
		addr:    "http://" + ln.Addr().String(),
		cbq:     make(chan protocol.HandleCallbackParam, 1<<20),
		seen:    map[int64]bool{},
		drain:   drain,
		stop:    make(chan struct{}),
		stopped: make(chan struct{}),
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /run", e.run)
	ok := func(w http.ResponseWriter, _ *http.Request) { writeOK(w) }
	mux.HandleFunc("POST /beat", ok)
	mux.HandleFunc("POST /idleBeat", ok)
	mux.HandleFunc("POST /kill", ok)
	mux.HandleFunc("POST /log", e.log)
	e.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	e.SetAccessToken(LocalAccessToken)
	go func() { _ = e.srv.Serve(ln) }()
	go e.callbacks()
	return e, nil
}

// Address is what a manual executor group lists.
func (e *Executor) Address() string { return e.addr }

// SetAdmin names the admin base URL callbacks go to ("" pauses them).
func (e *Executor) SetAdmin(url string) {
	if url == "" {
		e.SetAdmins()
		return
	}
	e.SetAdmins(url)
}

// SetAdmins names several admin base URLs (the nodes of a cluster, as an
// xxl-job executor's comma-separated admin addresses): a callback goes to
// the one that took the last, and to the next when that one fails. None
// pauses callbacks.
func (e *Executor) SetAdmins(urls ...string) {
	urls = slices.Clone(urls)
	e.adminURL.Store(&urls)
}

// LocalAccessToken is the executor access token the bench gives every
// xjob local it starts (executor routes always require one), and the one
// an Executor sends until SetAccessToken names another.
const LocalAccessToken = "bench-access-token"

// SetAccessToken makes callbacks carry the xxl-job access token.
func (e *Executor) SetAccessToken(token string) { e.token.Store(&token) }

var okBody = []byte(`{"code":200}`)

func writeOK(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(okBody)
}

func (e *Executor) run(w http.ResponseWriter, r *http.Request) {
	at := time.Now().UnixMicro()
	var p protocol.TriggerParam
	if err := json.NewDecoder(r.Body).Decode(&p); err != nil {
		http.Error(w, "bad body", http.StatusBadRequest)
		return
	}
	e.mu.Lock()
	e.receipts = append(e.receipts, Receipt{JobID: p.JobID, LogID: p.LogID, At: at})
	e.seen[p.LogID] = true
	e.mu.Unlock()
	writeOK(w)
	select {
	case e.cbq <- protocol.HandleCallbackParam{LogID: p.LogID, LogDateTim: p.LogDateTime, HandleCode: protocol.SuccessCode}:
	default:
		e.cbFailed.Add(1) // queue full: the result is never reported
	}
}

// log answers /log as an executor with one log file per run does: a file
// exists for every log id it received. The dispatcher asks this before
// re-sending a log it took over from a dispatcher that died mid-trigger.
func (e *Executor) log(w http.ResponseWriter, r *http.Request) {
	var p protocol.LogParam
	if err := json.NewDecoder(r.Body).Decode(&p); err != nil {
		http.Error(w, "bad body", http.StatusBadRequest)
		return
	}
	e.mu.Lock()
	seen := e.seen[p.LogID]
	e.mu.Unlock()
	res := protocol.LogResult{FromLineNum: p.FromLineNum, LogContent: protocol.MsgLogFileNotExists, IsEnd: true}
	if seen {
		res = protocol.LogResult{FromLineNum: p.FromLineNum, ToLineNum: 1, LogContent: "run\n"}
	}
	content, _ := json.Marshal(res)
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(protocol.ReturnT{Code: protocol.SuccessCode, Content: content})
}

// Receipts returns a copy of everything received so far.
func (e *Executor) Receipts() []Receipt {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]Receipt(nil), e.receipts...)
}

// Count is the number of receipts so far.
func (e *Executor) Count() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.receipts)
}

// Reset forgets the receipts (between phases that reuse the executor).
func (e *Executor) Reset() {
	e.mu.Lock()
	e.receipts = nil
	e.mu.Unlock()
}

// SetCallbackBatch limits the results per callback request (1: one
// result per request, as an executor without a batching callback thread).
func (e *Executor) SetCallbackBatch(n int) { e.cbBatch.Store(int64(n)) }

// OnCallback makes every callback request the admin took call f with
// its results' log ids and the time the request returned (nil: none).
// f runs on the sending goroutine: it must be quick.
func (e *Executor) OnCallback(f func(logIDs []int64, returned time.Time)) {
	if f == nil {
		e.onCallback.Store(nil)
		return
	}
	e.onCallback.Store(&f)
}

// CallbackStats reports callbacks delivered and given up.
func (e *Executor) CallbackStats() (sent, failed int64) { return e.cbSent.Load(), e.cbFailed.Load() }

// callbacks drains the queue in batches of up to 1000 every 50 ms. A batch
// the admin does not take (down during chaos) is retried for 60 s.
func (e *Executor) callbacks() {
	defer close(e.stopped)
	client := &http.Client{Timeout: 5 * time.Second}
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	batch := make([]protocol.HandleCallbackParam, 0, 1000)
	// send posts one request, retrying for 60 s while the admin does not
	// take it.
	send := func(batch []protocol.HandleCallbackParam) {
		body, _ := json.Marshal(batch)
		deadline := time.Now().Add(60 * time.Second)
		for {
			if err := e.post(client, body); err == nil {
				returned := time.Now()
				e.cbSent.Add(int64(len(batch)))
				if f := e.onCallback.Load(); f != nil {
					ids := make([]int64, len(batch))
					for i, p := range batch {
						ids[i] = p.LogID
					}
					(*f)(ids, returned)
				}
				return
			}
			if time.Now().After(deadline) {
				e.cbFailed.Add(int64(len(batch)))
				return
			}
			select {
			case <-e.stop:
				e.cbFailed.Add(int64(len(batch)))
				return
			case <-time.After(200 * time.Millisecond):
			}
		}
	}
	// With a small batch limit (an executor that sends a result as soon
	// as it has it, W3) requests go out concurrently, as such executors'
	// job threads each send their own: one sender could not post a
	// thousand a second and would push the requests past the window.
	var inflight sync.WaitGroup
	defer inflight.Wait()
	senders := make(chan struct{}, 64)
	flush := func() {
		if len(batch) == 0 {
			return
		}
		if limit := int(e.cbBatch.Load()); limit > 0 && limit < 10 {
			b := slices.Clone(batch)
			batch = batch[:0]
			senders <- struct{}{}
			inflight.Go(func() {
				defer func() { <-senders }()
				send(b)
			})
			return
		}
		send(batch)
		batch = batch[:0]
	}
	if e.drain {
		for {
			select {
			case <-e.stop:
				return
			case p := <-e.cbq:
				batch = append(batch[:0], p)
			}
		more:
			for {
				select {
				case p := <-e.cbq:
					batch = append(batch, p)
				default:
					break more
				}
			}
			send(batch)
		}
	}
	for {
		select {
		case <-e.stop:
			return
		case p := <-e.cbq:
			batch = append(batch, p)
			if limit := int(e.cbBatch.Load()); len(batch) == cap(batch) || limit > 0 && len(batch) >= limit {
				flush()
			}
		case <-tick.C:
			flush()
		}
	}
}

// post sends one callback request to the admin that took the last one,
// then to each other in turn until one takes it.
func (e *Executor) post(client *http.Client, body []byte) error {
	admins := e.adminURL.Load()
	if admins == nil || len(*admins) == 0 {
		return errors.New("no admin")
	}
	var errs []error
	for range len(*admins) {
		at := e.adminAt.Load()
		err := e.postTo(client, (*admins)[int(at)%len(*admins)], body)
		if err == nil {
			return nil
		}
		errs = append(errs, err)
		e.adminAt.CompareAndSwap(at, at+1)
	}
	return errors.Join(errs...)
}

func (e *Executor) postTo(client *http.Client, admin string, body []byte) error {
	req, err := http.NewRequest(http.MethodPost, admin+"/"+protocol.PathCallback, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	if tok := e.token.Load(); tok != nil && *tok != "" {
		req.Header.Set(protocol.AccessTokenHeader, *tok)
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	var rt protocol.ReturnT
	if resp.StatusCode != http.StatusOK || json.Unmarshal(data, &rt) != nil || rt.Code != protocol.SuccessCode {
		return fmt.Errorf("callback: HTTP %d %s", resp.StatusCode, data)
	}
	return nil
}

// Close stops the server and the batcher (pending callbacks are dropped).
func (e *Executor) Close() {
	close(e.stop)
	<-e.stopped
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_ = e.srv.Shutdown(ctx)
}

// Fleet is several executors serving one group, as a deployment's
// executor processes do.
type Fleet []*Executor

// StartFleet starts n executors (StartXXLExecutor when xxl, else
// StartExecutor).
func StartFleet(n int, xxl bool) (Fleet, error) {
	var f Fleet
	for range max(n, 1) {
		e, err := startExecutor(xxl)
		if err != nil {
			f.Close()
			return nil, err
		}
		f = append(f, e)
	}
	return f, nil
}

// Addresses lists the executors' addresses.
func (f Fleet) Addresses() []string {
	out := make([]string, len(f))
	for i, e := range f {
		out[i] = e.Address()
	}
	return out
}

// SetAdmin, SetAccessToken and SetCallbackBatch set every executor's.
func (f Fleet) SetAdmin(url string) {
	for _, e := range f {
		e.SetAdmin(url)
	}
}
func (f Fleet) SetAccessToken(t string) {
	for _, e := range f {
		e.SetAccessToken(t)
	}
}
func (f Fleet) SetCallbackBatch(n int) {
	for _, e := range f {
		e.SetCallbackBatch(n)
	}
}

// OnCallback sets every executor's (Executor.OnCallback).
func (f Fleet) OnCallback(fn func(logIDs []int64, returned time.Time)) {
	for _, e := range f {
		e.OnCallback(fn)
	}
}

// Receipts merges every executor's receipts.
func (f Fleet) Receipts() []Receipt {
	var out []Receipt
	for _, e := range f {
		out = append(out, e.Receipts()...)
	}
	return out
}

// CallbackStats sums the executors' callback counts.
func (f Fleet) CallbackStats() (sent, failed int64) {
	for _, e := range f {
		s, fl := e.CallbackStats()
		sent, failed = sent+s, failed+fl
	}
	return sent, failed
}

// Close stops every executor.
func (f Fleet) Close() {
	for _, e := range f {
		e.Close()
	}
}
