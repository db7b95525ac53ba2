package harness

import (
	"slices"
	"testing"
)

func TestMinuteFires(t *testing.T) {
	t.Parallel()
	// A 70 s window starting at second 58 of a minute.
	win := Interval{From: 58_000, To: 128_000}
	got := minuteFires([]int64{10, 11, 12}, func(i int) int { return []int{58, 0, 30}[i] }, win)
	want := map[int64][]int64{10: {58_000, 118_000}, 11: {60_000, 120_000}, 12: {90_000}}
	for id, w := range want {
		if !slices.Equal(got[id], w) {
			t.Errorf("job %d fires %v, want %v", id, got[id], w)
		}
	}
}
