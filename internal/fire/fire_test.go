package fire_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/internal/fire"
)

// A ring message says its format; one written before messages carried a
// version reads as version 1, and one of a newer version is refused, not
// guessed at.
func TestRingBucketDecode(t *testing.T) {
	v1 := fire.RingBucket{Shard: 2, Second: 1_700_000_000,
		Items: []fire.RingItem{{JobID: 7, FireTime: 1_700_000_000_250, Revision: 3}}}
	for _, tc := range []struct {
		name    string
		body    string
		want    fire.RingBucket
		version int // a *RingVersionError of this version; 0: none
		bad     bool
	}{
		{name: "unversioned, as written before versions", body: `{"shard":2,"second":1700000000,"items":[{"j":7,"t":1700000000250,"r":3}]}`, want: v1},
		{name: "version 1", body: `{"v":1,"shard":2,"second":1700000000,"items":[{"j":7,"t":1700000000250,"r":3}]}`, want: v1},
		{name: "newer version", body: `{"v":2,"shard":2,"second":1700000000,"items":[{"j":7,"t":1700000000250,"r":3}]}`, version: 2},
		{name: "much newer, unknown fields", body: `{"v":9,"buckets":[]}`, version: 9},
		{name: "negative version", body: `{"v":-1,"shard":2}`, bad: true},
		{name: "version not a number", body: `{"v":"2","shard":2}`, bad: true},
		{name: "not an object", body: `[1,2]`, bad: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got fire.RingBucket
			err := json.Unmarshal([]byte(tc.body), &got)
			var verr *fire.VersionError
			switch {
			case tc.version != 0:
				if !errors.As(err, &verr) || verr.Version != tc.version {
					t.Fatalf("err = %v, want a RingVersionError of version %d", err, tc.version)
				}
			case tc.bad:
				if err == nil || errors.As(err, &verr) {
					t.Fatalf("err = %v, want a malformed-message error", err)
				}
			case err != nil:
				t.Fatalf("decode: %v", err)
			case !reflect.DeepEqual(got, tc.want):
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

// Every bucket is written with the current version, and reads back as it
// was.
func TestRingBucketEncode(t *testing.T) {
	b := fire.RingBucket{Shard: 1, Second: 5, Items: []fire.RingItem{{JobID: 1, FireTime: 5000, Revision: 1}}}
	body, err := json.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	var wire struct {
		V int `json:"v"`
	}
	if err := json.Unmarshal(body, &wire); err != nil || wire.V != fire.RingVersion {
		t.Fatalf("%s: v = %d (%v), want %d", body, wire.V, err, fire.RingVersion)
	}
	var back fire.RingBucket
	if err := json.Unmarshal(body, &back); err != nil || !reflect.DeepEqual(back, b) {
		t.Fatalf("round trip: %+v (%v), want %+v", back, err, b)
	}
}

// A dispatch lane message says its format as a ring message does: one
// without "v" is version 1, a newer one is refused with a VersionError of
// kind "dispatch", and every task is written with the current version.
func TestDispatchTaskVersions(t *testing.T) {
	task := fire.DispatchTask{Occurrence: fire.Occurrence{JobID: 7, Type: xjob.TriggerCron, FireTime: 1_700_000_000_000},
		Revision: 3, EnqueuedAt: 1_699_999_999_000}
	for _, tc := range []struct {
		name    string
		body    string
		version int // a *VersionError of this version; 0: none
		bad     bool
	}{
		{name: "unversioned, as written before versions", body: `{"occurrence":{"jobId":7,"triggerType":"CRON","fireTime":1700000000000},"revision":3,"enqueuedAt":1699999999000}`},
		{name: "version 1", body: `{"v":1,"occurrence":{"jobId":7,"triggerType":"CRON","fireTime":1700000000000},"revision":3,"enqueuedAt":1699999999000}`},
		{name: "newer version", body: `{"v":2,"occurrence":{"jobId":7}}`, version: 2},
		{name: "version zero is one", body: `{"v":0,"occurrence":{"jobId":7,"triggerType":"CRON","fireTime":1700000000000},"revision":3,"enqueuedAt":1699999999000}`},
		{name: "negative version", body: `{"v":-3}`, bad: true},
		{name: "not an object", body: `"task"`, bad: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got fire.DispatchTask
			err := json.Unmarshal([]byte(tc.body), &got)
			var verr *fire.VersionError
			switch {
			case tc.version != 0:
				if !errors.As(err, &verr) || verr.Version != tc.version || verr.Kind != "dispatch" || verr.Newest != fire.DispatchVersion {
					t.Fatalf("err = %v, want a dispatch VersionError of version %d", err, tc.version)
				}
			case tc.bad:
				if err == nil || errors.As(err, &verr) {
					t.Fatalf("err = %v, want a malformed-message error", err)
				}
			case err != nil:
				t.Fatalf("decode: %v", err)
			case !reflect.DeepEqual(got, task):
				t.Fatalf("got %+v, want %+v", got, task)
			}
		})
	}
	body, err := json.Marshal(task)
	if err != nil {
		t.Fatal(err)
	}
	var wire struct {
		V int `json:"v"`
	}
	if err := json.Unmarshal(body, &wire); err != nil || wire.V != fire.DispatchVersion {
		t.Fatalf("%s: v = %d (%v), want %d", body, wire.V, err, fire.DispatchVersion)
	}
}

// An occurrence id is the same string whatever builds it: logs are
// claimed by it across versions and processes, so its bytes must not
// move (scheduled by job and time, the others by type and ref).
func TestOccurrenceID(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("r", 128)
	cases := []struct {
		occ   fire.Occurrence
		shard int
		want  string
	}{
		{fire.Occurrence{JobID: 7, Type: xjob.TriggerCron, FireTime: 1795000000000}, 0, "j7/t1795000000000/s0"},
		{fire.Occurrence{JobID: 7, Type: xjob.TriggerMisfire, FireTime: 1795000000000}, 3, "j7/t1795000000000/s3"},
		{fire.Occurrence{JobID: 9223372036854775807, Type: xjob.TriggerCron, FireTime: -1}, 12, "j9223372036854775807/t-1/s12"},
		{fire.Occurrence{JobID: 1, Type: xjob.TriggerManual, Ref: "abc"}, 0, "j1/MANUAL/rabc/s0"},
		{fire.Occurrence{JobID: 1, Type: xjob.TriggerParent, Ref: long}, 1, "j1/PARENT/r" + long + "/s1"},
	}
	for _, c := range cases {
		t.Run(c.want[:min(len(c.want), 24)], func(t *testing.T) {
			t.Parallel()
			if got := c.occ.ID(c.shard); got != c.want {
				t.Errorf("ID(%d) = %q, want %q", c.shard, got, c.want)
			}
		})
	}
}

func BenchmarkOccurrenceID(b *testing.B) {
	o := fire.Occurrence{JobID: 12345, Type: xjob.TriggerCron, FireTime: 1795000000000}
	b.ReportAllocs()
	for b.Loop() {
		_ = o.ID(0)
	}
}
