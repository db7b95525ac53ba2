package protocol

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// plainSeeds are bodies the hand decoder reads and bodies it must leave
// to encoding/json.
var plainSeeds = []string{
	`[{"logId":7,"logDateTim":1700000000000,"handleCode":500,"handleMsg":"boom"}]`,
	`[{"logId":7,"logDateTim":1700000000000,"handleCode":200},{"logId":8,"logDateTim":1700000000001,"handleCode":200,"handleMsg":"ok"}]`,
	" [ { \"logId\" : 1 , \"handleMsg\" : null } ] \n",
	`[]`, `[{}]`, `[{"logDateTime":5,"handleCode":-0}]`,
	`[{"logId":1,"logId":2,"handleMsg":"a","handleMsg":null}]`,
	`[{"handleMsg":"日本語 ok"}]`, `[{"handleMsg":"\u00e9"}]`, `[{"handleMsg":"a\nb"}]`,
	`[{"LOGID":7}]`, `[{"logId":1.0}]`, `[{"logId":1e3}]`, `[{"logId":01}]`, `[{"logId":"7"}]`,
	`[{"logId":12345678901234567890}]`, `[{"executeResult":{"code":500}}]`, `[{"other":1}]`,
	`[{"logId":1}]x`, `[{"logId":1},]`, `[{"logId":1,}]`, `[null]`, `[{"logId":nul}]`, "[{\"handleMsg\":\"\xff\"}]",
	`{"callbackList":[]}`, ``, `[`, `[{"logId":`, `[{"logId":-}]`, `[{"handleMsg":"x"`,
}

// What the hand decoder accepts it decodes as encoding/json does; the
// common bodies it accepts, the others it declines.
func TestPlainCallbacks(t *testing.T) {
	t.Parallel()
	accepted := map[string]bool{
		plainSeeds[0]: true, plainSeeds[1]: true, plainSeeds[2]: true, plainSeeds[3]: true, plainSeeds[4]: true,
		plainSeeds[5]: true, plainSeeds[6]: true, plainSeeds[7]: true,
	}
	for _, body := range plainSeeds {
		t.Run(strings.ReplaceAll(body[:min(len(body), 30)], "/", "_"), func(t *testing.T) {
			t.Parallel()
			got, ok := decodePlainCallbacks([]byte(body))
			if ok != accepted[body] {
				t.Fatalf("accepted = %v, want %v", ok, accepted[body])
			}
			if ok {
				matchJSON(t, []byte(body), got)
			}
		})
	}
}

// matchJSON fails t unless json.Unmarshal reads body as items.
func matchJSON(t *testing.T, body []byte, items []HandleCallbackParam) {
	t.Helper()
	var want []HandleCallbackParam
	if err := json.Unmarshal(body, &want); err != nil {
		t.Fatalf("hand decoder accepted %q, which encoding/json refuses: %v", body, err)
	}
	if !reflect.DeepEqual(items, want) {
		t.Fatalf("%q: hand decoder %+v, encoding/json %+v", body, items, want)
	}
}

// FuzzPlainCallbacksMatchJSON: a body the hand decoder accepts is one
// encoding/json accepts, with the same items.
func FuzzPlainCallbacksMatchJSON(f *testing.F) {
	for _, s := range plainSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		if items, ok := decodePlainCallbacks(body); ok {
			matchJSON(t, body, items)
		}
	})
}

func BenchmarkDecodeCallbacks(b *testing.B) {
	var sb strings.Builder
	sb.WriteByte('[')
	for i := range 16 {
		if i > 0 {
			sb.WriteByte(',')
		}
		sb.WriteString(`{"logId":123456789,"logDateTim":1800000000000,"handleCode":200,"handleMsg":"job done"}`)
	}
	sb.WriteByte(']')
	body := []byte(sb.String())
	b.Run("json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var items []HandleCallbackParam
			if err := json.Unmarshal(body, &items); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("plain", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, ok := decodePlainCallbacks(body); !ok {
				b.Fatal("declined")
			}
		}
	})
}
