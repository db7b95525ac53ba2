package fire_test

import (
	"encoding/json"
	"testing"

	"github.com/xjobdev/xjob/internal/fire"
)

// FuzzRingBucket decodes arbitrary ring messages: no panic, and a message
// that decodes re-encodes at the current version to the same bucket.
func FuzzRingBucket(f *testing.F) {
	for _, s := range []string{
		`{"shard":2,"second":1700000000,"items":[{"j":7,"t":1700000000250,"r":3}]}`,
		`{"v":1,"shard":0,"second":1,"items":[]}`,
		`{"v":2}`, `{"v":-3}`, `{}`, `null`, `[]`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var b fire.RingBucket
		if json.Unmarshal(body, &b) != nil {
			return
		}
		again, err := json.Marshal(b)
		if err != nil {
			t.Fatalf("re-encode: %v", err)
		}
		var back fire.RingBucket
		if err := json.Unmarshal(again, &back); err != nil {
			t.Fatalf("a re-encoded bucket does not decode: %v (%s)", err, again)
		}
		if len(back.Items) != len(b.Items) || back.Shard != b.Shard || back.Second != b.Second {
			t.Fatalf("round trip changed the bucket: %s -> %s", body, again)
		}
	})
}
