package callback

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/xjobdev/xjob/pkg/clock"
	"github.com/xjobdev/xjob/pkg/driver"
	"github.com/xjobdev/xjob/pkg/protocol"
)

// takes is a Callbacker that records what it was given and answers with
// errFor's verdicts (nil: none).
type takes struct {
	got    [][]int64
	errFor map[int64]error
}

func (t *takes) Callback(_ context.Context, items []protocol.HandleCallbackParam) []error {
	var ids []int64
	errs := make([]error, len(items))
	for i, it := range items {
		ids = append(ids, it.LogID)
		errs[i] = t.errFor[it.LogID]
	}
	t.got = append(t.got, ids)
	return errs
}

func (t *takes) items() int {
	n := 0
	for _, g := range t.got {
		n += len(g)
	}
	return n
}

func results(ids ...int64) []protocol.HandleCallbackParam {
	out := make([]protocol.HandleCallbackParam, len(ids))
	for i, id := range ids {
		out[i] = protocol.HandleCallbackParam{LogID: id, HandleCode: 200}
	}
	return out
}

func TestSparseChoosesByRecentItems(t *testing.T) {
	type step struct {
		advance time.Duration
		items   int
		direct  bool
	}
	tests := []struct {
		name  string
		o     SparseOptions
		steps []step
	}{
		{"a few results a second are written at once", SparseOptions{},
			[]step{{0, 1, true}, {time.Second, 2, true}, {time.Second, 1, true}, {time.Second, 4, true}}},
		{"a batching executor's request is recorded", SparseOptions{},
			[]step{{0, 5, false}, {0, 1, true}}},
		{"past the window's budget requests are recorded", SparseOptions{Items: 6},
			[]step{{0, 3, true}, {0, 3, true}, {0, 1, false}, {time.Second, 1, false}}},
		{"what is recorded counts too", SparseOptions{Items: 6},
			[]step{{0, 5, false}, {0, 2, false}}},
		{"the budget frees up as the window moves", SparseOptions{Items: 6, Window: 3 * time.Second},
			[]step{{0, 4, true}, {time.Second, 2, true}, {time.Second, 1, false}, {time.Second, 1, true}, {time.Second, 4, true}}},
		{"a long pause clears every second", SparseOptions{Items: 4},
			[]step{{0, 4, true}, {0, 1, false}, {time.Hour, 4, true}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			clk := clock.NewFake(time.Date(2026, 11, 26, 10, 0, 0, 300e6, time.UTC))
			direct, queued := &takes{}, &takes{}
			tc.o.Clock = clk
			s := NewSparse(direct, queued, tc.o)
			id := int64(0)
			for i, st := range tc.steps {
				clk.Advance(st.advance)
				var ids []int64
				for range st.items {
					id++
					ids = append(ids, id)
				}
				d, q := direct.items(), queued.items()
				for _, err := range s.Callback(context.Background(), results(ids...)) {
					if err != nil {
						t.Fatalf("step %d: %v", i, err)
					}
				}
				gotDirect := direct.items() - d
				if want := map[bool]int{true: st.items}[st.direct]; gotDirect != want || queued.items()-q != st.items-want {
					t.Errorf("step %d (%d items): direct took %d, queue %d; want direct %v", i, st.items, gotDirect, queued.items()-q, st.direct)
				}
			}
		})
	}
}

func TestSparseRecordsWhatItCouldNotWrite(t *testing.T) {
	storeDown := errors.New("throttled")
	direct := &takes{errFor: map[int64]error{1: storeDown, 2: ErrLogNotFound, 3: ErrRepeatCallback}}
	queued := &takes{errFor: map[int64]error{}}
	s := NewSparse(direct, queued, SparseOptions{Clock: clock.NewFake(time.Unix(1e9, 0))})
	errs := s.Callback(context.Background(), results(1, 2, 3, 4))
	if len(queued.got) != 1 || len(queued.got[0]) != 1 || queued.got[0][0] != 1 {
		t.Fatalf("queued %v, want only the item the store failed (1)", queued.got)
	}
	want := []error{nil, ErrLogNotFound, ErrRepeatCallback, nil}
	for i := range want {
		if !errors.Is(errs[i], want[i]) || (want[i] == nil) != (errs[i] == nil) {
			t.Errorf("item %d: %v, want %v", i+1, errs[i], want[i])
		}
	}
	// A failed record is the executor's to resend.
	queued.errFor[1] = errors.New("queue down")
	if errs := s.Callback(context.Background(), results(1)); errs[0] == nil {
		t.Error("neither path took the result, yet the executor heard it was recorded")
	}
}

// seesQuiet is a Callbacker that notes whether its context asked for
// one-round writes.
type seesQuiet struct{ quiet []bool }

func (s *seesQuiet) Callback(ctx context.Context, items []protocol.HandleCallbackParam) []error {
	s.quiet = append(s.quiet, driver.IsOneRound(ctx))
	return make([]error, len(items))
}

// Only the direct path writes in one round: the queue's applier, which
// merges many results into each page write, retries a lost round itself.
func TestSparseDirectWritesInOneRound(t *testing.T) {
	t.Parallel()
	direct, queued := &seesQuiet{}, &seesQuiet{}
	s := NewSparse(direct, queued, SparseOptions{Clock: clock.NewFake(time.Unix(1e9, 0))})
	s.Callback(context.Background(), results(1))
	s.Callback(context.Background(), results(2, 3, 4, 5, 6))
	if len(direct.quiet) != 1 || !direct.quiet[0] {
		t.Errorf("direct saw quiet %v, want [true]", direct.quiet)
	}
	if len(queued.quiet) != 1 || queued.quiet[0] {
		t.Errorf("queue saw quiet %v, want [false]", queued.quiet)
	}
}

// contendedOnce is a direct Callbacker whose pages lose their first round
// for the ids in first and every round for the ids in always.
type contendedOnce struct {
	takes
	first, always map[int64]bool
}

func (c *contendedOnce) Callback(ctx context.Context, items []protocol.HandleCallbackParam) []error {
	errs := c.takes.Callback(ctx, items)
	for i, it := range items {
		if c.always[it.LogID] || c.first[it.LogID] {
			errs[i] = fmt.Errorf("log page: %w", driver.ErrContended)
			delete(c.first, it.LogID)
		}
	}
	return errs
}

// A result whose page lost its round gets one more direct round, and only
// a result that loses that one too is recorded on the queue.
func TestSparseGivesAContendedPageASecondRound(t *testing.T) {
	t.Parallel()
	direct := &contendedOnce{takes: takes{errFor: map[int64]error{}},
		first: map[int64]bool{2: true, 3: true}, always: map[int64]bool{3: true}}
	queued := &takes{errFor: map[int64]error{}}
	s := NewSparse(direct, queued, SparseOptions{Clock: clock.NewFake(time.Unix(1e9, 0))})
	for i, err := range s.Callback(context.Background(), results(1, 2, 3)) {
		if err != nil {
			t.Errorf("item %d: %v", i+1, err)
		}
	}
	if want := [][]int64{{1, 2, 3}, {2, 3}}; !reflect.DeepEqual(direct.got, want) {
		t.Errorf("direct took %v, want %v", direct.got, want)
	}
	if want := [][]int64{{3}}; !reflect.DeepEqual(queued.got, want) {
		t.Errorf("queued %v, want %v (only the result that lost both rounds)", queued.got, want)
	}
}
