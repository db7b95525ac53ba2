package dynamostore

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/internal/fire"
	"github.com/xjobdev/xjob/pkg/driver"
)

func jobKey(id int64) item { return item{AttrID: n(id)} }

// jobFields are a job's mutable attributes, as JobUpdate replaces them.
func jobFields(j xjob.Job) item {
	return item{
		AttrGroupID:       n(j.GroupID),
		"jobName":         s(j.Name),
		"description":     s(j.Description),
		"author":          s(j.Author),
		"alarmEmail":      s(j.AlarmEmail),
		"scheduleType":    s(string(j.ScheduleType)),
		"scheduleConf":    s(j.ScheduleConf),
		"timeZone":        s(j.TimeZone),
		"misfireStrategy": s(string(j.MisfireStrategy)),
		"afterCompletion": s(string(j.AfterCompletion.OrKeep())),
		"routeStrategy":   s(string(j.RouteStrategy)),
		"handler":         s(j.Handler),
		"param":           s(j.Param),
		"blockStrategy":   s(string(j.BlockStrategy)),
		"timeoutSeconds":  n(int64(j.TimeoutSeconds)),
		"failRetryCount":  n(int64(j.FailRetryCount)),
		attrGlueType:      s(string(j.GlueType)),
		attrGlueSource:    s(j.GlueSource),
		"glueRemark":      s(j.GlueRemark),
		"glueUpdatedAt":   n(j.GlueUpdatedAt),
		"childJobIds":     s(formatIDs(j.ChildJobIDs)),
		"triggerStatus":   n(int64(j.TriggerStatus)),
		"triggerLastTime": n(j.TriggerLastTime),
		"triggerNextTime": n(j.TriggerNextTime),
		"revision":        n(j.Revision),
		"updatedAt":       n(j.UpdatedAt),
		"declared":        s(j.Declared),
		"applied":         s(j.Applied),
	}
}

func formatIDs(ids []int64) string {
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = strconv.FormatInt(id, 10)
	}
	return strings.Join(parts, ",")
}

func decodeJob(it item) (xjob.Job, error) {
	j := xjob.Job{
		ID:              it.int(AttrID),
		Name:            it.str("jobName"),
		Declared:        it.str("declared"),
		Applied:         it.str("applied"),
		GroupID:         it.int(AttrGroupID),
		Description:     it.str("description"),
		Author:          it.str("author"),
		AlarmEmail:      it.str("alarmEmail"),
		ScheduleType:    xjob.ScheduleType(it.str("scheduleType")),
		ScheduleConf:    it.str("scheduleConf"),
		TimeZone:        it.str("timeZone"),
		MisfireStrategy: xjob.MisfireStrategy(it.str("misfireStrategy")),
		AfterCompletion: xjob.AfterCompletion(it.str("afterCompletion")).OrKeep(),
		RouteStrategy:   xjob.RouteStrategy(it.str("routeStrategy")),
		Handler:         it.str("handler"),
		Param:           it.str("param"),
		BlockStrategy:   xjob.BlockStrategy(it.str("blockStrategy")),
		TimeoutSeconds:  int(it.int("timeoutSeconds")),
		FailRetryCount:  int(it.int("failRetryCount")),
		GlueType:        xjob.GlueType(strings.TrimSuffix(it.str(attrGlueType), glueApart)),
		GlueSource:      it.str(attrGlueSource),
		GlueRemark:      it.str("glueRemark"),
		GlueUpdatedAt:   it.int("glueUpdatedAt"),
		TriggerStatus:   xjob.TriggerStatus(it.int("triggerStatus")),
		TriggerLastTime: it.int("triggerLastTime"),
		TriggerNextTime: it.int("triggerNextTime"),
		Shard:           int(it.int(AttrShard)),
		Version:         it.int("version"),
		Revision:        it.int("revision"),
		SlowMinute:      it.int("slowMinute"),
		SlowCount:       int(it.int("slowCount")),
		CreatedAt:       it.int("createdAt"),
		UpdatedAt:       it.int("updatedAt"),
	}
	var err error
	if j.ChildJobIDs, err = xjob.ParseChildJobIDs(it.str("childJobIds")); err != nil {
		return xjob.Job{}, fmt.Errorf("job %d child ids: %w", j.ID, err)
	}
	return j, nil
}

func decodeJobs(items []item) ([]xjob.Job, error) {
	out := make([]xjob.Job, 0, len(items))
	for _, it := range items {
		j, err := decodeJob(it)
		if err != nil {
			return nil, err
		}
		out = append(out, j)
	}
	return out, nil
}

// JobInsert stores a new job under job.ID, or a freshly allocated id when
// it is 0; its shard is derived from the id, and a running job enters the
// due index. A taken id is xjob.ErrConflict.
func (db *DB) JobInsert(ctx context.Context, job xjob.Job) (xjob.Job, error) {
	id, err := db.takeID(ctx, db.jobIDs, job.ID)
	if err != nil {
		return xjob.Job{}, fmt.Errorf("dynamo job insert: %w", err)
	}
	job.ID, job.Shard = id, fire.ShardOf(id, db.opts.Shards)
	job.Version, job.Revision, job.SlowMinute, job.SlowCount = 1, 1, 0, 0
	it := jobFields(job)
	it[AttrID], it[AttrShard], it["version"], it["createdAt"] = n(job.ID), n(int64(job.Shard)), n(1), n(job.CreatedAt)
	it["slowMinute"], it["slowCount"] = n(0), n(0)
	if job.TriggerStatus == xjob.StatusRunning {
		it[AttrDueShard], it[AttrDueKey] = n(int64(job.Shard)), s(SortKey(job.TriggerNextTime, job.ID))
	}
	gen, err := db.claimName(ctx, job.Name, job.ID, 1, true)
	if err != nil {
		return xjob.Job{}, fmt.Errorf("dynamo job insert: %w", err)
	}
	ref, err := db.putGlue(ctx, job, it)
	if err != nil {
		return xjob.Job{}, fmt.Errorf("dynamo job insert: %w", err)
	}
	var e expr
	_, err = db.api.PutItem(ctx, &dynamodb.PutItemInput{TableName: &db.t.Jobs, Item: it,
		ConditionExpression: aws.String("attribute_not_exists(" + e.name(AttrID) + ")"), ExpressionAttributeNames: e.names})
	if condFailed(err) {
		err = fmt.Errorf("id %d already used (counter behind the table?): %w", id, xjob.ErrConflict)
	}
	if err != nil {
		db.dropGlue(ctx, ref)
		return xjob.Job{}, fmt.Errorf("dynamo job insert: %w", err)
	}
	if err := db.confirmName(ctx, job.Name, job.ID, gen); err != nil {
		return xjob.Job{}, fmt.Errorf("dynamo job insert: %w", err)
	}
	return job, nil
}

// JobGet returns one job (strongly consistent read) or xjob.ErrNotFound.
func (db *DB) JobGet(ctx context.Context, id int64) (xjob.Job, error) {
	it, err := db.getItem(ctx, db.t.Jobs, jobKey(id))
	if err != nil {
		return xjob.Job{}, fmt.Errorf("dynamo job get %d: %w", id, err)
	}
	jobs, err := db.decodeJobsGlue(ctx, []item{it}, true)
	if err != nil {
		return xjob.Job{}, fmt.Errorf("dynamo job get %d: %w", id, err)
	}
	return jobs[0], nil
}

// JobGetMany reads the jobs among ids with BatchGetItem.
func (db *DB) JobGetMany(ctx context.Context, ids []int64) ([]xjob.Job, error) {
	keys := make([]item, 0, len(ids))
	seen := map[int64]bool{}
	for _, id := range ids {
		if !seen[id] {
			seen[id] = true
			keys = append(keys, jobKey(id))
		}
	}
	items, err := db.batchGet(ctx, db.t.Jobs, keys)
	if err != nil {
		return nil, fmt.Errorf("dynamo job get many: %w", err)
	}
	jobs, err := db.decodeJobsGlue(ctx, items, false)
	if err != nil {
		return nil, fmt.Errorf("dynamo job get many: %w", err)
	}
	return jobs, nil
}

// JobUpdate replaces a job's mutable attributes if its version is
// ExpectVersion. ID, shard, creation time and the slow counters are kept;
// the due index attributes follow the new status. The new name is
// claimed before the write and the old one released after it (names.go).
func (db *DB) JobUpdate(ctx context.Context, p driver.JobUpdateParams) (xjob.Job, error) {
	j := p.Job
	if _, err := db.claimName(ctx, j.Name, j.ID, p.ExpectVersion+1, false); err != nil {
		return xjob.Job{}, fmt.Errorf("dynamo job update %d: %w", j.ID, err)
	}
	fields := jobFields(j)
	ref, err := db.putGlue(ctx, j, fields)
	if err != nil {
		return xjob.Job{}, fmt.Errorf("dynamo job update %d: %w", j.ID, err)
	}
	var u update
	u.SetExpr(attrPrevName, u.name("jobName"))
	prevGlueExpr(&u)
	for k, v := range fields {
		u.Set(k, v)
	}
	u.Incr("version")
	if j.TriggerStatus == xjob.StatusRunning {
		u.SetExpr(AttrDueShard, u.name(AttrShard))
		u.Set(AttrDueKey, s(SortKey(j.TriggerNextTime, j.ID)))
	} else {
		u.Remove(AttrDueShard)
		u.Remove(AttrDueKey)
	}
	cond := u.name("version") + " = " + u.val(n(p.ExpectVersion))
	out, err := db.api.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: &db.t.Jobs, Key: jobKey(j.ID),
		UpdateExpression: aws.String(u.String()), ConditionExpression: &cond,
		ExpressionAttributeNames: u.names, ExpressionAttributeValues: u.values, ReturnValues: types.ReturnValueAllNew})
	if condFailed(err) {
		err = db.missingOr(ctx, db.t.Jobs, jobKey(j.ID), xjob.ErrConflict)
	}
	if err != nil {
		db.dropGlue(ctx, ref)
		return xjob.Job{}, fmt.Errorf("dynamo job update %d: %w", j.ID, err)
	}
	rec := item(out.Attributes)
	db.dropReplacedGlue(ctx, rec.int(attrPrevGlueRef), ref)
	if prev := rec.str(attrPrevName); prev != j.Name {
		if err := db.releaseName(ctx, prev, j.ID, rec.int("version")); err != nil {
			return xjob.Job{}, fmt.Errorf("dynamo job update %d: %w", j.ID, err)
		}
	}
	updated, err := decodeJob(rec)
	updated.GlueSource = j.GlueSource
	return updated, err
}

// JobAdvance records a scan's progress, conditional on the version. Its
// new due key moves the job within the due index; Stop takes it out.
func (db *DB) JobAdvance(ctx context.Context, p driver.JobAdvanceParams) error {
	var u update
	if p.Stop {
		u.Set("triggerStatus", n(int64(xjob.StatusStopped)))
		u.Set("triggerLastTime", n(0))
		u.Set("triggerNextTime", n(0))
		u.Remove(AttrDueShard)
		u.Remove(AttrDueKey)
	} else {
		u.Set("triggerLastTime", n(p.TriggerLastTime))
		u.Set("triggerNextTime", n(p.TriggerNextTime))
		// Written whatever the status: without dueShard (stopped jobs) the
		// item stays out of the sparse index.
		u.Set(AttrDueKey, s(SortKey(p.TriggerNextTime, p.ID)))
	}
	u.Incr("version")
	cond := u.name("version") + " = " + u.val(n(p.ExpectVersion))
	_, err := db.api.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: &db.t.Jobs, Key: jobKey(p.ID),
		UpdateExpression: aws.String(u.String()), ConditionExpression: &cond,
		ExpressionAttributeNames: u.names, ExpressionAttributeValues: u.values})
	if condFailed(err) {
		err = db.missingOr(ctx, db.t.Jobs, jobKey(p.ID), xjob.ErrConflict)
	}
	if err != nil {
		return fmt.Errorf("dynamo job advance %d: %w", p.ID, err)
	}
	return nil
}

// JobAdvanceMany runs the advances as parallel single-item conditional
// updates (perKey: items of one job in order, at most batchConcurrency
// jobs at once). DynamoDB transactions are not used: items are
// independent, a transaction caps at 100 items and costs twice the
// writes, and one conflict would fail all of them.
func (db *DB) JobAdvanceMany(ctx context.Context, ps []driver.JobAdvanceParams) ([]error, error) {
	errs := make([]error, len(ps))
	err := perKey(ctx, len(ps), func(i int) int64 { return ps[i].ID }, func(ctx context.Context, i int) error {
		err := db.JobAdvance(ctx, ps[i])
		if err == nil || errors.Is(err, xjob.ErrConflict) || errors.Is(err, xjob.ErrNotFound) {
			errs[i] = err
			return nil
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("dynamo job advance many: %w", err)
	}
	return errs, nil
}

// JobRecordSlow counts a slow dispatch in minute without touching the
// version: ADD within the stored minute, or start the count of a newer
// minute; a count for an older minute is dropped.
func (db *DB) JobRecordSlow(ctx context.Context, id int64, minute int64) error {
	for range 5 {
		var u update
		u.Add("slowCount", 1)
		cond := u.name("slowMinute") + " = " + u.val(n(minute))
		_, err := db.api.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: &db.t.Jobs, Key: jobKey(id),
			UpdateExpression: aws.String(u.String()), ConditionExpression: &cond,
			ExpressionAttributeNames: u.names, ExpressionAttributeValues: u.values})
		if err == nil || !condFailed(err) {
			return wrapErr("dynamo job record slow", id, err)
		}
		var v update
		v.Set("slowMinute", n(minute))
		v.Set("slowCount", n(1))
		cond = v.name("slowMinute") + " < " + v.val(n(minute))
		_, err = db.api.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: &db.t.Jobs, Key: jobKey(id),
			UpdateExpression: aws.String(v.String()), ConditionExpression: &cond,
			ExpressionAttributeNames: v.names, ExpressionAttributeValues: v.values})
		if err == nil || !condFailed(err) {
			return wrapErr("dynamo job record slow", id, err)
		}
		// Missing, a newer minute stored (drop this count), or another
		// writer just started this minute (count again).
		it, err := db.getItem(ctx, db.t.Jobs, jobKey(id))
		if err != nil {
			return wrapErr("dynamo job record slow", id, err)
		}
		if it.int("slowMinute") > minute {
			return nil
		}
	}
	return fmt.Errorf("dynamo job record slow %d: %w", id, xjob.ErrConflict)
}

func wrapErr(what string, id int64, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s %d: %w", what, id, err)
}

// JobDelete removes a job (and with it its index entries). Its name claim
// stays until the next lookup of the name (names.go): the callback function
// deletes completed one-time jobs and has no access to the console table.
func (db *DB) JobDelete(ctx context.Context, id int64) error {
	var e expr
	out, err := db.api.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: &db.t.Jobs, Key: jobKey(id),
		ConditionExpression: aws.String("attribute_exists(" + e.name(AttrID) + ")"), ExpressionAttributeNames: e.names,
		ReturnValues: types.ReturnValueAllOld})
	if condFailed(err) {
		err = xjob.ErrNotFound
	}
	if err == nil {
		db.dropGlue(ctx, item(out.Attributes).int(attrGlueRef))
	}
	return wrapErr("dynamo job delete", id, err)
}

// JobList pages through jobs in id order; the cursor is the last id
// served. It reads keys-only indexes, never the whole table: with a group,
// that group's partition of byGroup; without one, every scan shard's
// partition of byShard, merged by id (each partition is in id order and
// starts after the cursor, so the merge is the global id order and the
// last id served is still the whole cursor). The matching jobs are then
// batch-read and filtered. Cost ∝ the ids walked up to a full page: one
// index query per partition, plus the jobs read.
func (db *DB) JobList(ctx context.Context, p driver.JobListParams) (driver.JobPage, error) {
	limit := clampLimit(p.Limit, 100, 1000)
	after := int64(math.MinInt64)
	if p.Cursor != "" {
		v, err := strconv.ParseInt(p.Cursor, 10, 64)
		if err != nil {
			return driver.JobPage{}, fmt.Errorf("dynamo job list: %w", badCursor(p.Cursor))
		}
		after = v
	}
	keep := func(j xjob.Job) bool {
		return j.ID > after && (p.GroupID == 0 || j.GroupID == p.GroupID) &&
			(p.Status == nil || j.TriggerStatus == *p.Status) &&
			strings.Contains(j.Description, p.Description) &&
			strings.Contains(j.Handler, p.Handler) && strings.Contains(j.Author, p.Author)
	}
	var streams []*idStream
	if p.GroupID != 0 {
		streams = []*idStream{db.idStream(IndexJobsByGroup, AttrGroupID, p.GroupID, after, min(4*limit, 1000))}
	} else {
		for sh := range db.opts.Shards {
			streams = append(streams, db.idStream(IndexJobsByShard, AttrShard, int64(sh), after, min(limit+1, 1000)))
		}
	}
	var jobs []xjob.Job
	for len(jobs) <= limit {
		ids, err := mergeIDs(ctx, streams, limit+1)
		if err != nil {
			return driver.JobPage{}, fmt.Errorf("dynamo job list: %w", err)
		}
		if len(ids) == 0 {
			break
		}
		keys := make([]item, len(ids))
		for i, id := range ids {
			keys[i] = jobKey(id)
		}
		items, err := db.batchGet(ctx, db.t.Jobs, keys)
		if err != nil {
			return driver.JobPage{}, fmt.Errorf("dynamo job list: %w", err)
		}
		page, err := db.decodeJobsGlue(ctx, items, false)
		if err != nil {
			return driver.JobPage{}, fmt.Errorf("dynamo job list: %w", err)
		}
		slices.SortFunc(page, func(a, b xjob.Job) int { return cmp.Compare(a.ID, b.ID) })
		for _, j := range page {
			if keep(j) {
				jobs = append(jobs, j)
			}
		}
	}
	var page driver.JobPage
	if len(jobs) > limit {
		jobs = jobs[:limit]
		page.Next = strconv.FormatInt(jobs[limit-1].ID, 10)
	}
	page.Jobs = jobs
	return page, nil
}

// idStream walks one partition of a keys-only jobs index (byGroup or
// byShard) in id order, after a cursor id, a query page at a time.
type idStream struct {
	db   *DB
	in   *dynamodb.QueryInput
	buf  []int64
	done bool
}

func (db *DB) idStream(index, partAttr string, part, after int64, pageSize int) *idStream {
	var e expr
	in := &dynamodb.QueryInput{TableName: &db.t.Jobs, IndexName: aws.String(index),
		KeyConditionExpression: aws.String(e.name(partAttr) + " = " + e.val(n(part)) +
			" AND " + e.name(AttrID) + " > " + e.val(n(after))),
		Limit: aws.Int32(int32(pageSize))}
	in.ExpressionAttributeNames, in.ExpressionAttributeValues = e.names, e.values
	return &idStream{db: db, in: in}
}

// head is the stream's next id without taking it; ok is false at its end.
func (st *idStream) head(ctx context.Context) (id int64, ok bool, err error) {
	for len(st.buf) == 0 && !st.done {
		res, err := st.db.api.Query(ctx, st.in)
		if err != nil {
			return 0, false, err
		}
		for _, k := range res.Items {
			st.buf = append(st.buf, item(k).int(AttrID))
		}
		st.done = len(res.LastEvaluatedKey) == 0
		st.in.ExclusiveStartKey = res.LastEvaluatedKey
	}
	if len(st.buf) == 0 {
		return 0, false, nil
	}
	return st.buf[0], true, nil
}

// mergeIDs takes up to want ids from the streams, smallest first. The
// streams are few (one group, or the scan shards), so a linear pick of
// the smallest head does.
func mergeIDs(ctx context.Context, streams []*idStream, want int) ([]int64, error) {
	var ids []int64
	for len(ids) < want {
		best, bestID := -1, int64(0)
		for i, st := range streams {
			id, ok, err := st.head(ctx)
			if err != nil {
				return nil, err
			}
			if ok && (best < 0 || id < bestID) {
				best, bestID = i, id
			}
		}
		if best < 0 {
			break
		}
		ids = append(ids, bestID)
		streams[best].buf = streams[best].buf[1:]
	}
	return ids, nil
}

// JobsDue queries the sparse due index: dueShard = shard AND dueKey
// BETWEEN SortKey(after) and SortKey(Before, max). One Query page per
// Limit jobs, each read costing its own size: O(due jobs). The index is
// eventually consistent; a stale job loses its conditional advance.
func (db *DB) JobsDue(ctx context.Context, p driver.JobsDueParams) ([]xjob.Job, error) {
	limit := clampLimit(p.Limit, 1000, 100000)
	lo := minKey
	if p.After != (driver.DueCursor{}) {
		if p.After.ID == math.MaxInt64 {
			lo = SortKey(p.After.NextTime+1, math.MinInt64)
		} else {
			lo = SortKey(p.After.NextTime, p.After.ID+1)
		}
	}
	hi := SortKey(p.Before, math.MaxInt64)
	if lo > hi {
		return nil, nil
	}
	var e expr
	in := &dynamodb.QueryInput{TableName: &db.t.Jobs, IndexName: aws.String(IndexJobsDue),
		KeyConditionExpression: aws.String(e.name(AttrDueShard) + " = " + e.val(n(int64(p.Shard))) +
			" AND " + e.name(AttrDueKey) + " BETWEEN " + e.val(s(lo)) + " AND " + e.val(s(hi)))}
	in.ExpressionAttributeNames, in.ExpressionAttributeValues = e.names, e.values
	var jobs []xjob.Job
	for len(jobs) < limit {
		in.Limit = aws.Int32(int32(min(limit-len(jobs), 1000)))
		res, err := db.api.Query(ctx, in)
		if err != nil {
			return nil, fmt.Errorf("dynamo jobs due: %w", err)
		}
		items := make([]item, len(res.Items))
		for i, it := range res.Items {
			items[i] = it
		}
		page, err := db.decodeJobsGlue(ctx, items, false)
		if err != nil {
			return nil, fmt.Errorf("dynamo jobs due: %w", err)
		}
		jobs = append(jobs, page...)
		if len(res.LastEvaluatedKey) == 0 {
			break
		}
		in.ExclusiveStartKey = res.LastEvaluatedKey
	}
	return jobs, nil
}
