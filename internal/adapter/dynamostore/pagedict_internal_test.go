package dynamostore

import (
	"bytes"
	"compress/flate"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/internal/fire"
	"github.com/xjobdev/xjob/internal/testenv/emulator"
	"github.com/xjobdev/xjob/pkg/driver"
)

// oldBody is a page body as releases before pageBodyDict1 wrote it: a raw
// deflate stream (flate.BestSpeed, no dictionary) of json.Marshal's output.
func oldBody(t *testing.T, logs []xjob.Log) []byte {
	t.Helper()
	stored := make([]storedLog, len(logs))
	for i, l := range logs {
		stored[i] = storedLog{Log: l, ClaimUntil: l.ClaimUntil, Version: l.Version}
	}
	raw, err := json.Marshal(stored)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	w, _ := flate.NewWriter(&buf, flate.BestSpeed)
	if _, err := w.Write(raw); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// The dictionary is part of the stored format: bodies written with it
// can only be read with the same bytes.
func TestPageDictFrozen(t *testing.T) {
	t.Parallel()
	sum := sha256.Sum256([]byte(pageDict1))
	const want = "1796e6625a9a33d23f6edd0701907de326004766519b01e5de695b97b091b040"
	if got := hex.EncodeToString(sum[:]); got != want {
		t.Fatalf("pageDict1 changed (sha256 %s, want %s): a new dictionary needs a new marker byte, and readers keep the old one", got, want)
	}
}

// Both body formats decode to the same logs; the new one is the one
// written, and a decoder that knows only raw deflate streams (an older
// release) rejects it rather than read it as something else.
func TestPageBodyFormats(t *testing.T) {
	t.Parallel()
	logs := realisticPage(3)
	logs[1].TriggerMsg += "<b>&amp;</b> \u00e9\u4efb\u52a1"
	newBody, err := encodeLogs(slices.Clone(logs))
	if err != nil {
		t.Fatal(err)
	}
	if newBody[0] != pageBodyDict1 {
		t.Fatalf("body starts with %#x, want the marker %#x", newBody[0], pageBodyDict1)
	}
	tests := []struct {
		name string
		body []byte
	}{
		{"raw deflate (before the dictionary)", oldBody(t, logs)},
		{"dictionary", newBody},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := decodeLogs(tc.body)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, logs) {
				t.Fatalf("decoded %+v\nwant %+v", got, logs)
			}
		})
	}
	if _, err := io.ReadAll(flate.NewReader(bytes.NewReader(newBody))); err == nil {
		t.Fatal("a raw deflate reader decoded a dictionary body")
	}
}

// A one-log page (a sparse deployment's) compresses far under the 1 KB a
// write unit covers, and a dense page's logs stay as small as before or
// smaller: the sizes that page writes and storage are billed by.
func TestPageBodySizes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		logs   int
		maxLog int // bytes per log at most
	}{
		{1, 160},
		{2, 100},
		{16, 45},
		{62, 32},
	}
	for _, tc := range tests {
		logs := realisticPage(tc.logs)
		body, err := encodeLogs(logs)
		if err != nil {
			t.Fatal(err)
		}
		old := oldBody(t, logs)
		if len(body) > len(old) || len(body) > tc.logs*tc.maxLog {
			t.Errorf("%d logs: %d bytes (%d a log), raw deflate %d: want at most %d a log and no more than raw deflate",
				tc.logs, len(body), len(body)/tc.logs, len(old), tc.maxLog)
		}
	}
}

// A page stored in the old format is read, changed and listed as before;
// its next write stores it in the new format with every log kept.
func TestOldFormatPageStillRead(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	db, err := New(emulator.DynamoDB(t), Options{Tables: TablesWithPrefix(emulator.UniqueName("t"))})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.CreateTables(ctx); err != nil {
		t.Fatal(err)
	}
	const sched = 1_795_000_000_000
	other := int64(2) // a job whose logs share job 1's pages
	for fire.ShardOf(other, logParts) != fire.ShardOf(1, logParts) {
		other++
	}
	claim := func(job int64) xjob.Log {
		occ := fire.Occurrence{JobID: job, Type: xjob.TriggerCron, FireTime: sched}
		return xjob.Log{OccurrenceID: occ.ID(0), JobID: job, GroupID: 1, TriggerType: xjob.TriggerCron, ScheduledTime: sched,
			TriggerTime: sched, ClaimUntil: sched + 30_000}
	}
	res, err := db.LogCreateMany(ctx, []xjob.Log{claim(1), claim(other)})
	if err != nil || res[0].Err != nil || res[1].Err != nil {
		t.Fatalf("create: %v %+v", err, res)
	}
	a, b := res[0].Log, res[1].Log
	if pageOfLog(a.ID) != pageOfLog(b.ID) {
		t.Fatalf("logs %d and %d are in different pages", a.ID, b.ID)
	}
	// Rewrite the page's body as an older release would have stored it.
	it, err := db.getItem(ctx, db.t.Logs, pageKey(pageOfLog(a.ID)))
	if err != nil {
		t.Fatal(err)
	}
	stored, err := decodeLogs(it[attrPageBody].(*types.AttributeValueMemberB).Value)
	if err != nil {
		t.Fatal(err)
	}
	stored[0].TriggerMsg = "Trigger type: CRON<br>old <release>"
	it[attrPageBody] = &types.AttributeValueMemberB{Value: oldBody(t, stored)}
	if _, err := db.api.PutItem(ctx, &dynamodb.PutItemInput{TableName: &db.t.Logs, Item: it}); err != nil {
		t.Fatal(err)
	}
	db.recent = recentPages{} // as another environment: no remembered page
	got, err := db.LogGet(ctx, a.ID)
	if err != nil || got.TriggerMsg != "Trigger type: CRON<br>old <release>" {
		t.Fatalf("old-format log = %+v, %v", got, err)
	}
	if _, err := db.LogFinish(ctx, driver.LogFinishParams{ID: b.ID, HandleTime: sched + 9, HandleCode: xjob.CodeSuccess, HandleMsg: "done"}); err != nil {
		t.Fatal(err)
	}
	it, err = db.getItem(ctx, db.t.Logs, pageKey(pageOfLog(a.ID)))
	if err != nil {
		t.Fatal(err)
	}
	if body := it[attrPageBody].(*types.AttributeValueMemberB).Value; body[0] != pageBodyDict1 {
		t.Fatalf("rewritten page starts with %#x, want the new format", body[0])
	}
	logs, err := db.LogGetMany(ctx, []int64{a.ID, b.ID})
	if err != nil || len(logs) != 2 {
		t.Fatalf("logs after the rewrite: %+v, %v", logs, err)
	}
	for _, l := range logs {
		switch {
		case l.ID == a.ID && !strings.Contains(l.TriggerMsg, "old <release>"):
			t.Errorf("old log lost its message: %+v", l)
		case l.ID == b.ID && (l.HandleCode != xjob.CodeSuccess || l.HandleMsg != "done"):
			t.Errorf("result not recorded: %+v", l)
		}
	}
	if _, err := db.LogFinish(ctx, driver.LogFinishParams{ID: b.ID, HandleTime: sched + 10, HandleCode: xjob.CodeFail}); !errors.Is(err, xjob.ErrConflict) {
		t.Fatalf("second result: %v, want a conflict", err)
	}
}

// FuzzPageBody: any stored body decodes or fails cleanly (never panics),
// and any log round-trips through the written format.
func FuzzPageBody(f *testing.F) {
	f.Add([]byte{pageBodyDict1}, "Trigger type: CRON<br>", "ok")
	f.Add([]byte{0x01, 0x02}, "<span>\u4efb\u52a1</span>", "")
	f.Fuzz(func(t *testing.T, body []byte, triggerMsg, handleMsg string) {
		_, _ = decodeLogs(body)
		_, _ = decodeLogs(append([]byte{pageBodyDict1}, body...))
		logs := realisticPage(2)
		logs[0].TriggerMsg, logs[1].HandleMsg = triggerMsg, handleMsg
		enc, err := encodeLogs(slices.Clone(logs))
		if err != nil {
			t.Fatal(err)
		}
		got, err := decodeLogs(enc)
		if err != nil {
			t.Fatal(err)
		}
		// JSON carries valid UTF-8 only (invalid bytes come back as U+FFFD).
		if utf8.ValidString(triggerMsg) && utf8.ValidString(handleMsg) && !slices.Equal(got, logs) {
			t.Fatalf("round trip: %+v\nwant %+v", got, logs)
		}
	})
}
