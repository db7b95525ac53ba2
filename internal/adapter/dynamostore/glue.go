package dynamostore

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/xjobdev/xjob"
)

// A GLUE source longer than inlineGlue lives in an item of its own in the
// jobs table, so that the job item stays small: the due index projects
// the whole job item and every scan advance rewrites its entry there (a
// delete and a put at the item's size, on top of the table write), so a
// 100 KB source inline made each advance cost about 200 write units. The
// source item is keyed by a random negative id (no job has one), carries
// none of the index attributes, and is never changed: a new source is a
// new item, written before the job item that names it (attrGlueRef), and
// the item the job named before is deleted after the job's write (best
// effort: a crash in between leaves an unused source item). A job item
// that still holds a long source inline (written before sources moved out)
// is read as it is and moves its source out on its next write.
//
// While its source is apart, the job item's glueType carries glueApart:
// a release that does not know source items (a rollback) reads a GLUE
// type no executor accepts, so the job's runs fail with that type in
// their message instead of running an empty source.
const inlineGlue = 1024

// glueApart marks the stored glueType of a job whose source is apart.
const glueApart = "+apart"

// Job and source item attributes.
const (
	attrGlueType    = "glueType"    // S: the job's GLUE type (+ glueApart while its source is apart)
	attrGlueSource  = "glueSource"  // S: the source, inline (job item) or in a source item
	attrGlueRef     = "glueRef"     // N: the job's source item is id −glueRef; 0 or absent: inline
	attrPrevGlueRef = "prevGlueRef" // N: glueRef before the last update (to delete the old source)
	attrGlueOf      = "glueOf"      // N: a source item's job
)

// putGlue moves j's source out of fields (jobFields(j)) into a new source
// item when it is long, and sets fields' glueRef; ref is the new source
// item's (0: the source stays inline).
func (db *DB) putGlue(ctx context.Context, j xjob.Job, fields item) (ref int64, err error) {
	fields[attrGlueRef] = n(0)
	if len(j.GlueSource) <= inlineGlue {
		return 0, nil
	}
	ref = 1 + rand.Int64N(1<<52)
	_, err = db.api.PutItem(ctx, &dynamodb.PutItemInput{TableName: &db.t.Jobs,
		Item: item{AttrID: n(-ref), attrGlueOf: n(j.ID), attrGlueSource: s(j.GlueSource)}})
	if err != nil {
		return 0, fmt.Errorf("job %d glue source: %w", j.ID, err)
	}
	fields[attrGlueSource], fields[attrGlueRef] = s(""), n(ref)
	fields[attrGlueType] = s(string(j.GlueType) + glueApart)
	return ref, nil
}

// dropGlue deletes a source item no job names any more (best effort).
func (db *DB) dropGlue(ctx context.Context, ref int64) {
	if ref > 0 {
		_, _ = db.api.DeleteItem(context.WithoutCancel(ctx), &dynamodb.DeleteItemInput{TableName: &db.t.Jobs, Key: jobKey(-ref)})
	}
}

// dropReplacedGlue deletes the source item a write replaced: prev is the
// glueRef the job item held before it, ref the one it holds now.
func (db *DB) dropReplacedGlue(ctx context.Context, prev, ref int64) {
	if prev != ref {
		db.dropGlue(ctx, prev)
	}
}

// decodeJobsGlue decodes job items and fills in the sources kept in
// source items, read in one batch (strongly consistent when the jobs were:
// a source item is written just before the job that names it). A job
// whose source item is gone was read before an update that replaced it:
// it is read again, strongly consistent, with its current source.
func (db *DB) decodeJobsGlue(ctx context.Context, items []item, consistent bool) ([]xjob.Job, error) {
	jobs, err := decodeJobs(items)
	if err != nil {
		return nil, err
	}
	var keys []item
	for _, it := range items {
		if ref := apartRef(it); ref > 0 {
			keys = append(keys, jobKey(-ref))
		}
	}
	if len(keys) == 0 {
		return jobs, nil
	}
	sources, err := db.batchGet(ctx, db.t.Jobs, keys, consistent)
	if err != nil {
		return nil, fmt.Errorf("glue sources: %w", err)
	}
	byRef := make(map[int64]string, len(sources))
	for _, src := range sources {
		byRef[-src.int(AttrID)] = src.str(attrGlueSource)
	}
	for i, it := range items {
		ref := apartRef(it)
		if ref <= 0 {
			continue
		}
		src, ok := byRef[ref]
		if !ok {
			if jobs[i], err = db.rereadJob(ctx, jobs[i].ID); err != nil {
				return nil, err
			}
			continue
		}
		jobs[i].GlueSource = src
	}
	return jobs, nil
}

// rereadJob reads a job whose source item was not found (read before an
// update replaced it, or not yet visible to an eventually consistent
// read) strongly consistent, with its source, until the two agree.
func (db *DB) rereadJob(ctx context.Context, id int64) (xjob.Job, error) {
	var missing int64
	for range 5 {
		it, err := db.getItem(ctx, db.t.Jobs, jobKey(id))
		if err != nil {
			return xjob.Job{}, fmt.Errorf("job %d: %w", id, err)
		}
		j, err := decodeJob(it)
		ref := apartRef(it)
		if err != nil || ref <= 0 {
			return j, err
		}
		src, err := db.getItem(ctx, db.t.Jobs, jobKey(-ref))
		switch {
		case err == nil:
			j.GlueSource = src.str(attrGlueSource)
			return j, nil
		case !errors.Is(err, xjob.ErrNotFound):
			return xjob.Job{}, fmt.Errorf("job %d glue source: %w", id, err)
		case ref == missing:
			// Two strongly consistent reads agree: no writer leaves this.
			return xjob.Job{}, fmt.Errorf("job %d: glue source item %d is missing", id, -ref)
		}
		missing = ref
	}
	return xjob.Job{}, fmt.Errorf("job %d: its glue source changed under every read: %w", id, xjob.ErrConflict)
}

// apartRef is the reference of a job item's source item, or 0 when the
// source is inline. An inline source wins over a reference: only a write
// by a release that does not know source items leaves both.
func apartRef(it item) int64 {
	if it.str(attrGlueSource) != "" {
		return 0
	}
	return it.int(attrGlueRef)
}

// prevGlueExpr records the job item's glueRef before an update in
// attrPrevGlueRef, so the update's new image names the source item it
// replaced.
func prevGlueExpr(u *update) {
	u.SetExpr(attrPrevGlueRef, "if_not_exists("+u.name(attrGlueRef)+", "+u.val(n(0))+")")
}
