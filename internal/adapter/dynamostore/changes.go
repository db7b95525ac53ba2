package dynamostore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/internal/fire"
	"github.com/xjobdev/xjob/pkg/driver"
)

// Staged change sets (driver.ChangeStore).
//
// DynamoDB transactions hold at most 100 items and 4 MB, and a manifest
// holds up to 5,000 jobs, so a change set is staged instead:
//
//	(none) ──stage──▶ staged ──commit──▶ committed ──write──▶ written ──clean──▶ (none)
//	                    │                                │
//	                    └─ resume: chunks and head removed (rolled back)
//	                                                     └─ resume: written again to the end (rolled forward)
//
// Stage writes the head (console table, AttrPK consoleChanges, AttrSK the
// set's id, state "staged") and then the set itself, resolved (every id
// allocated) and JSON-encoded, in chunks under AttrPK "changes#<id>".
// Commit flips the head to "committed" conditionally on it still being
// "staged": this one write is the set's commit point. The writes that
// follow are idempotent (a put conditional on the item being absent or
// written by this set, an update that sets absolute values, a delete), so
// writing a committed set again after a crash is safe. The admin holds a
// lease around an apply and its resume, so a resume never meets a set that
// another process is still staging.
const (
	consoleChanges       = "changes"
	consoleChangesPrefix = "changes#"
	changeChunkBytes     = 300 << 10 // under the 400 KB item limit
	changeStaged         = "staged"
	changeCommitted      = "committed"
	// AttrChangeSet marks the jobs and groups a set inserted, so that
	// writing the set again recognises its own inserts.
	attrChangeSet = "changeSet"
	// changeWriters bounds the item writes of one set in flight.
	changeWriters = 16
)

// stagedSet is a change set with every reference resolved, as staged.
type stagedSet struct {
	GroupInserts []xjob.Group               `json:"groupInserts,omitempty"`
	GroupUpdates []driver.GroupUpdateParams `json:"groupUpdates,omitempty"`
	GroupDeletes []int64                    `json:"groupDeletes,omitempty"`
	JobInserts   []stagedJob                `json:"jobInserts,omitempty"`
	JobUpdates   []stagedUpdate             `json:"jobUpdates,omitempty"`
	JobDeletes   []int64                    `json:"jobDeletes,omitempty"`
}

// stagedJob carries the job fields that xjob.Job leaves out of its JSON.
type stagedJob struct {
	xjob.Job
	Applied string `json:"appliedSpec"`
}

type stagedUpdate struct {
	Job           stagedJob `json:"job"`
	ExpectVersion int64     `json:"expectVersion"`
	// Timing is set when the update changes the schedule revision: then
	// the trigger times and the due index entry are the set's, else the
	// scan's progress on the job is left as it is.
	Timing bool `json:"timing"`
}

// ChangeApply stages, commits and writes cs (see the state diagram above).
// A failed condition is found before anything is staged; a failure after
// the commit point is returned, and ChangeResume finishes the set.
func (db *DB) ChangeApply(ctx context.Context, cs driver.ChangeSet) (driver.ChangeResult, error) {
	if cs.Empty() {
		return driver.ChangeResult{}, nil
	}
	set, res, err := db.resolveChanges(ctx, cs)
	if err != nil {
		return driver.ChangeResult{}, fmt.Errorf("dynamo change apply: %w", err)
	}
	id, err := db.stageChanges(ctx, set)
	if err != nil {
		return driver.ChangeResult{}, fmt.Errorf("dynamo change apply: %w", err)
	}
	if err := db.commitChanges(ctx, id); err != nil {
		return driver.ChangeResult{}, fmt.Errorf("dynamo change apply: %w", err)
	}
	if err := db.writeChanges(ctx, id, set); err != nil {
		return res, fmt.Errorf("dynamo change apply: committed, not all written (resumed at the next apply, start of the web function or maintenance run): %w", err)
	}
	if err := db.dropChanges(ctx, id); err != nil {
		return res, fmt.Errorf("dynamo change apply: written, staged copy not removed: %w", err)
	}
	return res, nil
}

// resolveChanges checks every condition of cs against the tables and
// allocates the ids of its inserts.
func (db *DB) resolveChanges(ctx context.Context, cs driver.ChangeSet) (stagedSet, driver.ChangeResult, error) {
	var set stagedSet
	var res driver.ChangeResult
	gids := slices.Clone(cs.GroupDeletes)
	for _, g := range cs.GroupInserts {
		gids = append(gids, g.ID)
	}
	for _, p := range cs.GroupUpdates {
		gids = append(gids, p.Group.ID)
	}
	groups, err := db.versionsOf(ctx, db.t.Groups, groupKey, gids)
	if err != nil {
		return set, res, err
	}
	jids := slices.Clone(cs.JobDeletes)
	for _, j := range cs.JobInserts {
		jids = append(jids, j.ID)
	}
	for _, p := range cs.JobUpdates {
		jids = append(jids, p.Job.ID)
	}
	jobs, err := db.versionsOf(ctx, db.t.Jobs, jobKey, jids)
	if err != nil {
		return set, res, err
	}
	if err := checkVersions("group", groups, cs.GroupUpdates, func(p driver.GroupUpdateParams) (int64, int64) {
		return p.Group.ID, p.ExpectVersion
	}); err != nil {
		return set, res, err
	}
	if err := checkVersions("job", jobs, cs.JobUpdates, func(p driver.JobUpdateParams) (int64, int64) {
		return p.Job.ID, p.ExpectVersion
	}); err != nil {
		return set, res, err
	}
	for _, id := range cs.GroupDeletes {
		if _, ok := groups[id]; !ok {
			return set, res, fmt.Errorf("group %d: %w", id, xjob.ErrNotFound)
		}
	}
	for _, id := range cs.JobDeletes {
		if _, ok := jobs[id]; !ok {
			return set, res, fmt.Errorf("job %d: %w", id, xjob.ErrNotFound)
		}
	}
	for _, g := range cs.GroupInserts {
		if _, taken := groups[g.ID]; g.ID != 0 && taken {
			return set, res, fmt.Errorf("group id %d is taken: %w", g.ID, xjob.ErrConflict)
		}
	}
	for _, j := range cs.JobInserts {
		if _, taken := jobs[j.ID]; j.ID != 0 && taken {
			return set, res, fmt.Errorf("job id %d is taken: %w", j.ID, xjob.ErrConflict)
		}
	}
	// Every condition holds: allocate ids (a rolled-back set only skips some).
	for _, g := range cs.GroupInserts {
		if g.ID, err = db.takeID(ctx, db.groupIDs, g.ID); err != nil {
			return set, res, err
		}
		g.Version = 1
		res.GroupIDs = append(res.GroupIDs, g.ID)
		set.GroupInserts = append(set.GroupInserts, g)
	}
	for _, j := range cs.JobInserts {
		if j.ID, err = db.takeID(ctx, db.jobIDs, j.ID); err != nil {
			return set, res, err
		}
		res.JobIDs = append(res.JobIDs, j.ID)
	}
	for i, j := range cs.JobInserts {
		j.ID = res.JobIDs[i]
		if j.GroupID, err = driver.ResolveRef(j.GroupID, res.GroupIDs); err != nil {
			return set, res, err
		}
		if j.ChildJobIDs, err = driver.ResolveRefs(j.ChildJobIDs, res.JobIDs); err != nil {
			return set, res, err
		}
		j.Shard = fire.ShardOf(j.ID, db.opts.Shards)
		j.Version, j.Revision, j.SlowMinute, j.SlowCount = 1, 1, 0, 0
		set.JobInserts = append(set.JobInserts, stagedJob{Job: j, Applied: j.Applied})
	}
	set.GroupUpdates = cs.GroupUpdates
	for _, p := range cs.JobUpdates {
		j := p.Job
		if j.GroupID, err = driver.ResolveRef(j.GroupID, res.GroupIDs); err != nil {
			return set, res, err
		}
		if j.ChildJobIDs, err = driver.ResolveRefs(j.ChildJobIDs, res.JobIDs); err != nil {
			return set, res, err
		}
		set.JobUpdates = append(set.JobUpdates, stagedUpdate{Job: stagedJob{Job: j, Applied: j.Applied},
			ExpectVersion: p.ExpectVersion, Timing: j.Revision != jobs[j.ID].revision})
	}
	set.GroupDeletes, set.JobDeletes = cs.GroupDeletes, cs.JobDeletes
	return set, res, nil
}

type stored struct{ version, revision int64 }

// versionsOf reads the version and revision of every record among ids
// (0s ignored) with one consistent batch read.
func (db *DB) versionsOf(ctx context.Context, table string, key func(int64) item, ids []int64) (map[int64]stored, error) {
	var keys []item
	seen := map[int64]bool{}
	for _, id := range ids {
		if id > 0 && !seen[id] {
			seen[id] = true
			keys = append(keys, key(id))
		}
	}
	items, err := db.batchGet(ctx, table, keys, true)
	if err != nil {
		return nil, err
	}
	out := make(map[int64]stored, len(items))
	for _, it := range items {
		out[it.int(AttrID)] = stored{version: it.int("version"), revision: it.int("revision")}
	}
	return out, nil
}

func checkVersions[U any](kind string, have map[int64]stored, ups []U, idv func(U) (int64, int64)) error {
	for _, u := range ups {
		id, want := idv(u)
		st, ok := have[id]
		switch {
		case !ok:
			return fmt.Errorf("%s %d: %w", kind, id, xjob.ErrNotFound)
		case st.version != want:
			return fmt.Errorf("%s %d changed since version %d: %w", kind, id, want, xjob.ErrConflict)
		}
	}
	return nil
}

func changeHeadKey(id string) item { return item{AttrPK: s(consoleChanges), AttrSK: s(id)} }

// stageChanges writes the head ("staged") and the set's chunks.
func (db *DB) stageChanges(ctx context.Context, set stagedSet) (string, error) {
	data, err := json.Marshal(set)
	if err != nil {
		return "", fmt.Errorf("encode change set: %w", err)
	}
	var b [12]byte
	_, _ = rand.Read(b[:])
	id := hex.EncodeToString(b[:])
	chunks := (len(data) + changeChunkBytes - 1) / changeChunkBytes
	head := changeHeadKey(id)
	head["state"], head["chunks"] = s(changeStaged), n(int64(chunks))
	if _, err := db.api.PutItem(ctx, &dynamodb.PutItemInput{TableName: &db.t.Console, Item: head}); err != nil {
		return "", fmt.Errorf("stage change set: %w", err)
	}
	for i := range chunks {
		part := data[i*changeChunkBytes : min(len(data), (i+1)*changeChunkBytes)]
		it := item{AttrPK: s(consoleChangesPrefix + id), AttrSK: s(fmt.Sprintf("%06d", i)), "data": s(string(part))}
		if _, err := db.api.PutItem(ctx, &dynamodb.PutItemInput{TableName: &db.t.Console, Item: it}); err != nil {
			return "", fmt.Errorf("stage change set chunk %d: %w", i, err)
		}
	}
	return id, nil
}

// commitChanges is the set's commit point.
func (db *DB) commitChanges(ctx context.Context, id string) error {
	var u update
	u.Set("state", s(changeCommitted))
	cond := u.name("state") + " = " + u.val(s(changeStaged))
	_, err := db.api.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: &db.t.Console, Key: changeHeadKey(id),
		UpdateExpression: aws.String(u.String()), ConditionExpression: &cond,
		ExpressionAttributeNames: u.names, ExpressionAttributeValues: u.values})
	if condFailed(err) {
		return fmt.Errorf("change set %s was rolled back by another process: %w", id, xjob.ErrConflict)
	}
	if err != nil {
		return fmt.Errorf("commit change set: %w", err)
	}
	return nil
}

// writeChanges writes a committed set, phase by phase in the set's order,
// the items of one phase a few at a time.
func (db *DB) writeChanges(ctx context.Context, id string, set stagedSet) error {
	phases := []func() error{
		func() error {
			return each(ctx, set.GroupInserts, func(g xjob.Group) error { return db.putGroup(ctx, id, g) })
		},
		func() error {
			return each(ctx, set.GroupUpdates, func(p driver.GroupUpdateParams) error { return db.setGroup(ctx, p.Group) })
		},
		func() error {
			return each(ctx, set.JobInserts, func(j stagedJob) error { return db.putJob(ctx, id, j) })
		},
		func() error {
			return each(ctx, set.JobUpdates, func(u stagedUpdate) error { return db.setJob(ctx, u) })
		},
		func() error {
			return each(ctx, set.JobDeletes, func(jid int64) error { return db.deleteJobItem(ctx, jid) })
		},
		func() error {
			return each(ctx, set.GroupDeletes, func(gid int64) error { return db.deleteAny(ctx, db.t.Groups, groupKey(gid)) })
		},
	}
	for _, phase := range phases {
		if err := phase(); err != nil {
			return err
		}
	}
	return nil
}

// each runs fn over xs, changeWriters at a time, and returns the first error.
func each[T any](ctx context.Context, xs []T, fn func(T) error) error {
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
	)
	sem := make(chan struct{}, changeWriters)
	for _, x := range xs {
		if ctx.Err() != nil {
			break
		}
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			if err := fn(x); err != nil {
				mu.Lock()
				if first == nil {
					first = err
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if first == nil {
		first = ctx.Err()
	}
	return first
}

// putGroup inserts a group unless this set already did.
func (db *DB) putGroup(ctx context.Context, set string, g xjob.Group) error {
	var e expr
	cond := "attribute_not_exists(" + e.name(AttrID) + ") OR " + e.name(attrChangeSet) + " = " + e.val(s(set))
	_, err := db.api.PutItem(ctx, &dynamodb.PutItemInput{TableName: &db.t.Groups,
		Item: item{AttrID: n(g.ID), "appName": s(g.AppName), "title": s(g.Title), "addressType": n(int64(g.AddressType)),
			"addressList": list(g.AddressList), "version": n(1), "updatedAt": n(g.UpdatedAt), attrChangeSet: s(set)},
		ConditionExpression: &cond, ExpressionAttributeNames: e.names, ExpressionAttributeValues: e.values})
	if condFailed(err) {
		err = fmt.Errorf("id %d taken since the set was checked: %w", g.ID, xjob.ErrConflict)
	}
	return wrapErr("group insert", g.ID, err)
}

// setGroup writes a group's new values; the version moves on, so an
// editor holding the old one loses its conditional write.
func (db *DB) setGroup(ctx context.Context, g xjob.Group) error {
	var u update
	u.Set("appName", s(g.AppName))
	u.Set("title", s(g.Title))
	u.Set("addressType", n(int64(g.AddressType)))
	u.Set("addressList", list(g.AddressList))
	u.Set("updatedAt", n(g.UpdatedAt))
	u.Incr("version")
	cond := "attribute_exists(" + u.name(AttrID) + ")"
	_, err := db.api.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: &db.t.Groups, Key: groupKey(g.ID),
		UpdateExpression: aws.String(u.String()), ConditionExpression: &cond,
		ExpressionAttributeNames: u.names, ExpressionAttributeValues: u.values})
	if condFailed(err) {
		err = xjob.ErrNotFound
	}
	return wrapErr("group update", g.ID, err)
}

// putJob inserts a job unless this set already did.
func (db *DB) putJob(ctx context.Context, set string, sj stagedJob) error {
	job := sj.Job
	job.Applied = sj.Applied
	it := jobFields(job)
	it[AttrID], it[AttrShard], it["version"], it["createdAt"] = n(job.ID), n(int64(job.Shard)), n(1), n(job.CreatedAt)
	it["slowMinute"], it["slowCount"], it[attrChangeSet] = n(0), n(0), s(set)
	if job.TriggerStatus == xjob.StatusRunning {
		it[AttrDueShard], it[AttrDueKey] = n(int64(job.Shard)), s(SortKey(job.TriggerNextTime, job.ID))
	}
	ref, err := db.putGlue(ctx, job, it)
	if err != nil {
		return wrapErr("job insert", job.ID, err)
	}
	var e expr
	cond := "attribute_not_exists(" + e.name(AttrID) + ") OR " + e.name(attrChangeSet) + " = " + e.val(s(set))
	out, err := db.api.PutItem(ctx, &dynamodb.PutItemInput{TableName: &db.t.Jobs, Item: it,
		ConditionExpression: &cond, ExpressionAttributeNames: e.names, ExpressionAttributeValues: e.values,
		ReturnValues: types.ReturnValueAllOld})
	if condFailed(err) {
		err = fmt.Errorf("id %d taken since the set was checked: %w", job.ID, xjob.ErrConflict)
	}
	if err != nil {
		db.dropGlue(ctx, ref)
	} else {
		db.dropReplacedGlue(ctx, item(out.Attributes).int(attrGlueRef), ref) // a repeat of this set's insert
	}
	return wrapErr("job insert", job.ID, err)
}

// setJob writes a job's new values. Without a timing change the scan's
// progress (trigger times, due entry) is left as it is; with one, the
// set's values replace it and the new revision makes the ring drop what
// the scan pushed under the old one.
func (db *DB) setJob(ctx context.Context, su stagedUpdate) error {
	j := su.Job.Job
	j.Applied = su.Job.Applied
	fields := jobFields(j)
	ref, err := db.putGlue(ctx, j, fields)
	if err != nil {
		return wrapErr("job update", j.ID, err)
	}
	var u update
	prevGlueExpr(&u)
	for k, v := range fields {
		if !su.Timing && (k == "triggerLastTime" || k == "triggerNextTime") {
			continue
		}
		u.Set(k, v)
	}
	u.Incr("version")
	if su.Timing {
		if j.TriggerStatus == xjob.StatusRunning {
			u.SetExpr(AttrDueShard, u.name(AttrShard))
			u.Set(AttrDueKey, s(SortKey(j.TriggerNextTime, j.ID)))
		} else {
			u.Remove(AttrDueShard)
			u.Remove(AttrDueKey)
		}
	}
	cond := "attribute_exists(" + u.name(AttrID) + ")"
	out, err := db.api.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: &db.t.Jobs, Key: jobKey(j.ID),
		UpdateExpression: aws.String(u.String()), ConditionExpression: &cond,
		ExpressionAttributeNames: u.names, ExpressionAttributeValues: u.values, ReturnValues: types.ReturnValueUpdatedNew})
	if condFailed(err) {
		err = xjob.ErrNotFound
	}
	if err != nil {
		db.dropGlue(ctx, ref)
	} else {
		db.dropReplacedGlue(ctx, item(out.Attributes).int(attrPrevGlueRef), ref)
	}
	return wrapErr("job update", j.ID, err)
}

// deleteJobItem deletes a job, whether or not it is there, and its GLUE
// source item.
func (db *DB) deleteJobItem(ctx context.Context, id int64) error {
	out, err := db.api.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: &db.t.Jobs, Key: jobKey(id),
		ReturnValues: types.ReturnValueAllOld})
	if err == nil {
		db.dropGlue(ctx, item(out.Attributes).int(attrGlueRef))
	}
	return err
}

func (db *DB) deleteAny(ctx context.Context, table string, key item) error {
	_, err := db.api.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: &table, Key: key})
	return err
}

// dropChanges removes a set's chunks, then its head.
func (db *DB) dropChanges(ctx context.Context, id string) error {
	keys, err := db.changeChunkKeys(ctx, id)
	if err != nil {
		return err
	}
	for _, k := range keys {
		if err := db.deleteAny(ctx, db.t.Console, k); err != nil {
			return err
		}
	}
	return db.deleteAny(ctx, db.t.Console, changeHeadKey(id))
}

func (db *DB) changeChunkKeys(ctx context.Context, id string) ([]item, error) {
	items, err := db.changeChunks(ctx, id)
	if err != nil {
		return nil, err
	}
	keys := make([]item, len(items))
	for i, it := range items {
		keys[i] = item{AttrPK: it[AttrPK], AttrSK: it[AttrSK]}
	}
	return keys, nil
}

func (db *DB) changeChunks(ctx context.Context, id string) ([]item, error) {
	var e expr
	return db.queryAll(ctx, &dynamodb.QueryInput{TableName: &db.t.Console, ConsistentRead: aws.Bool(true),
		KeyConditionExpression:   aws.String(e.name(AttrPK) + " = " + e.val(s(consoleChangesPrefix+id))),
		ExpressionAttributeNames: e.names, ExpressionAttributeValues: e.values})
}

// ChangePending reports whether a set is staged or committed but not yet
// cleaned up: whether ChangeResume has anything to do. One consistent
// read of the heads' partition, so that a periodic resume costs a read,
// not the apply lease's writes, when there is nothing to resume.
func (db *DB) ChangePending(ctx context.Context) (bool, error) {
	var e expr
	out, err := db.api.Query(ctx, &dynamodb.QueryInput{TableName: &db.t.Console, ConsistentRead: aws.Bool(true), Limit: aws.Int32(1),
		KeyConditionExpression:   aws.String(e.name(AttrPK) + " = " + e.val(s(consoleChanges))),
		ExpressionAttributeNames: e.names, ExpressionAttributeValues: e.values})
	if err != nil {
		return false, fmt.Errorf("dynamo change pending: %w", err)
	}
	return len(out.Items) > 0, nil
}

// ChangeResume rolls back every staged set and rolls forward every
// committed one.
func (db *DB) ChangeResume(ctx context.Context) error {
	var e expr
	heads, err := db.queryAll(ctx, &dynamodb.QueryInput{TableName: &db.t.Console, ConsistentRead: aws.Bool(true),
		KeyConditionExpression:   aws.String(e.name(AttrPK) + " = " + e.val(s(consoleChanges))),
		ExpressionAttributeNames: e.names, ExpressionAttributeValues: e.values})
	if err != nil {
		return fmt.Errorf("dynamo change resume: %w", err)
	}
	for _, h := range heads {
		id := h.str(AttrSK)
		if h.str("state") == changeCommitted {
			set, err := db.readChanges(ctx, id, int(h.int("chunks")))
			if err != nil {
				return fmt.Errorf("dynamo change resume %s: %w", id, err)
			}
			if err := db.writeChanges(ctx, id, set); err != nil {
				return fmt.Errorf("dynamo change resume %s: %w", id, err)
			}
		}
		if err := db.dropChanges(ctx, id); err != nil {
			return fmt.Errorf("dynamo change resume %s: %w", id, err)
		}
	}
	return nil
}

func (db *DB) readChanges(ctx context.Context, id string, chunks int) (stagedSet, error) {
	items, err := db.changeChunks(ctx, id)
	if err != nil {
		return stagedSet{}, err
	}
	if len(items) != chunks {
		return stagedSet{}, fmt.Errorf("%d of %d chunks stored", len(items), chunks)
	}
	var data []byte
	for _, it := range items { // sort key order
		data = append(data, it.str("data")...)
	}
	var set stagedSet
	if err := json.Unmarshal(data, &set); err != nil {
		return stagedSet{}, fmt.Errorf("decode: %w", err)
	}
	return set, nil
}

var _ driver.ChangeStore = (*DB)(nil)
