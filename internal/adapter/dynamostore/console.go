package dynamostore

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/pkg/driver"
)

// Console table partitions (see TableConsole).
const (
	consoleUsers      = "user"
	consoleGluePrefix = "glue#"
)

func userKey(username string) item { return item{AttrPK: s(consoleUsers), AttrSK: s(username)} }

func userItem(u xjob.User) item {
	return item{AttrPK: s(consoleUsers), AttrSK: s(u.Username), "passwordHash": s(u.PasswordHash),
		"role": n(int64(u.Role)), "groupIds": s(formatIDs(u.GroupIDs)), "locale": s(u.Locale),
		"version": n(u.Version), "createdAt": n(u.CreatedAt), "updatedAt": n(u.UpdatedAt)}
}

func decodeUser(it item) (xjob.User, error) {
	u := xjob.User{Username: it.str(AttrSK), PasswordHash: it.str("passwordHash"), Role: xjob.Role(it.int("role")),
		Locale: it.str("locale"), Version: it.int("version"), CreatedAt: it.int("createdAt"), UpdatedAt: it.int("updatedAt")}
	ids, err := xjob.ParseChildJobIDs(it.str("groupIds"))
	if err != nil {
		return xjob.User{}, fmt.Errorf("user %s group ids: %w", u.Username, err)
	}
	u.GroupIDs = ids
	return u, nil
}

// UserInsert stores a new user with Version 1; xjob.ErrConflict if the
// username is taken.
func (db *DB) UserInsert(ctx context.Context, u xjob.User) (xjob.User, error) {
	u.Version = 1
	var e expr
	_, err := db.api.PutItem(ctx, &dynamodb.PutItemInput{TableName: &db.t.Console, Item: userItem(u),
		ConditionExpression: aws.String("attribute_not_exists(" + e.name(AttrSK) + ")"), ExpressionAttributeNames: e.names})
	if condFailed(err) {
		err = fmt.Errorf("username %q is taken: %w", u.Username, xjob.ErrConflict)
	}
	if err != nil {
		return xjob.User{}, fmt.Errorf("dynamo user insert: %w", err)
	}
	return u, nil
}

// UserGet returns one user or xjob.ErrNotFound.
func (db *DB) UserGet(ctx context.Context, username string) (xjob.User, error) {
	it, err := db.getItem(ctx, db.t.Console, userKey(username))
	if err == nil {
		var u xjob.User
		if u, err = decodeUser(it); err == nil {
			return u, nil
		}
	}
	return xjob.User{}, fmt.Errorf("dynamo user get %q: %w", username, err)
}

// UserList queries the users partition (in username order) and filters.
func (db *DB) UserList(ctx context.Context, p driver.UserListParams) ([]xjob.User, error) {
	var e expr
	items, err := db.queryAll(ctx, &dynamodb.QueryInput{TableName: &db.t.Console, ConsistentRead: aws.Bool(true),
		KeyConditionExpression:   aws.String(e.name(AttrPK) + " = " + e.val(s(consoleUsers))),
		ExpressionAttributeNames: e.names, ExpressionAttributeValues: e.values})
	if err != nil {
		return nil, fmt.Errorf("dynamo user list: %w", err)
	}
	var out []xjob.User
	for _, it := range items {
		u, err := decodeUser(it)
		if err != nil {
			return nil, fmt.Errorf("dynamo user list: %w", err)
		}
		if strings.Contains(u.Username, p.Username) && (p.Role == nil || *p.Role == u.Role) {
			out = append(out, u)
		}
	}
	return out, nil
}

// UserUpdate replaces a user if its version is ExpectVersion.
func (db *DB) UserUpdate(ctx context.Context, p driver.UserUpdateParams) (xjob.User, error) {
	u := p.User
	var up update
	up.Set("passwordHash", s(u.PasswordHash))
	up.Set("role", n(int64(u.Role)))
	up.Set("groupIds", s(formatIDs(u.GroupIDs)))
	up.Set("locale", s(u.Locale))
	up.Set("updatedAt", n(u.UpdatedAt))
	up.Incr("version")
	cond := up.name("version") + " = " + up.val(n(p.ExpectVersion))
	out, err := db.api.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: &db.t.Console, Key: userKey(u.Username),
		UpdateExpression: aws.String(up.String()), ConditionExpression: &cond,
		ExpressionAttributeNames: up.names, ExpressionAttributeValues: up.values, ReturnValues: types.ReturnValueAllNew})
	if condFailed(err) {
		err = db.missingOr(ctx, db.t.Console, userKey(u.Username), xjob.ErrConflict)
	}
	if err != nil {
		return xjob.User{}, fmt.Errorf("dynamo user update %q: %w", u.Username, err)
	}
	got, err := decodeUser(out.Attributes)
	if err != nil {
		return xjob.User{}, fmt.Errorf("dynamo user update %q: %w", u.Username, err)
	}
	return got, nil
}

// UserDelete removes a user.
func (db *DB) UserDelete(ctx context.Context, username string) error {
	var e expr
	_, err := db.api.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: &db.t.Console, Key: userKey(username),
		ConditionExpression: aws.String("attribute_exists(" + e.name(AttrSK) + ")"), ExpressionAttributeNames: e.names})
	if condFailed(err) {
		err = xjob.ErrNotFound
	}
	if err != nil {
		return fmt.Errorf("dynamo user delete %q: %w", username, err)
	}
	return nil
}

func gluePK(jobID int64) string { return consoleGluePrefix + strconv.FormatInt(jobID, 10) }

// GlueVersionAdd stores a saved source under SortKey(savedAt, random) and
// deletes the job's versions beyond keep (a query of keys, newest first).
func (db *DB) GlueVersionAdd(ctx context.Context, v xjob.GlueVersion, keep int) error {
	var b [8]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go ≥ 1.24)
	tie := int64(binary.BigEndian.Uint64(b[:]) & math.MaxInt64)
	_, err := db.api.PutItem(ctx, &dynamodb.PutItemInput{TableName: &db.t.Console, Item: item{
		AttrPK: s(gluePK(v.JobID)), AttrSK: s(SortKey(v.CreatedAt, tie)), "jobId": n(v.JobID),
		"glueType": s(string(v.GlueType)), "source": s(v.Source), "remark": s(v.Remark), "createdAt": n(v.CreatedAt)}})
	if err != nil {
		return fmt.Errorf("dynamo glue version add job %d: %w", v.JobID, err)
	}
	keys, err := db.glueKeys(ctx, v.JobID)
	if err != nil {
		return fmt.Errorf("dynamo glue version add job %d: %w", v.JobID, err)
	}
	if len(keys) > max(keep, 1) {
		if err := db.deleteConsole(ctx, keys[max(keep, 1):]); err != nil {
			return fmt.Errorf("dynamo glue version add job %d: trim: %w", v.JobID, err)
		}
	}
	return nil
}

// glueKeys returns the keys of a job's saved sources, newest first.
func (db *DB) glueKeys(ctx context.Context, jobID int64) ([]item, error) {
	var e expr
	items, err := db.queryAll(ctx, &dynamodb.QueryInput{TableName: &db.t.Console, ConsistentRead: aws.Bool(true),
		KeyConditionExpression: aws.String(e.name(AttrPK) + " = " + e.val(s(gluePK(jobID)))),
		ProjectionExpression:   aws.String(e.name(AttrPK) + ", " + e.name(AttrSK)), ScanIndexForward: aws.Bool(false),
		ExpressionAttributeNames: e.names, ExpressionAttributeValues: e.values})
	return items, err
}

func (db *DB) deleteConsole(ctx context.Context, keys []item) error {
	reqs := make([]types.WriteRequest, len(keys))
	for i, k := range keys {
		reqs[i] = types.WriteRequest{DeleteRequest: &types.DeleteRequest{Key: k}}
	}
	return db.batchWrite(ctx, db.t.Console, reqs)
}

// GlueVersionList returns a job's saved sources, newest first.
func (db *DB) GlueVersionList(ctx context.Context, jobID int64, limit int) ([]xjob.GlueVersion, error) {
	var e expr
	out, err := db.api.Query(ctx, &dynamodb.QueryInput{TableName: &db.t.Console, ConsistentRead: aws.Bool(true),
		KeyConditionExpression: aws.String(e.name(AttrPK) + " = " + e.val(s(gluePK(jobID)))),
		ScanIndexForward:       aws.Bool(false), Limit: aws.Int32(int32(clampLimit(limit, xjob.MaxGlueVersions, 1000))),
		ExpressionAttributeNames: e.names, ExpressionAttributeValues: e.values})
	if err != nil {
		return nil, fmt.Errorf("dynamo glue version list job %d: %w", jobID, err)
	}
	vs := make([]xjob.GlueVersion, 0, len(out.Items))
	for _, it := range out.Items {
		it := item(it)
		vs = append(vs, xjob.GlueVersion{JobID: it.int("jobId"), GlueType: xjob.GlueType(it.str("glueType")),
			Source: it.str("source"), Remark: it.str("remark"), CreatedAt: it.int("createdAt")})
	}
	return vs, nil
}

// GlueVersionDeleteJob removes every saved source of a job.
func (db *DB) GlueVersionDeleteJob(ctx context.Context, jobID int64) error {
	keys, err := db.glueKeys(ctx, jobID)
	if err == nil && len(keys) > 0 {
		err = db.deleteConsole(ctx, keys)
	}
	if err != nil {
		return fmt.Errorf("dynamo glue version delete job %d: %w", jobID, err)
	}
	return nil
}

// queryAll follows a query's pages.
func (db *DB) queryAll(ctx context.Context, in *dynamodb.QueryInput) ([]item, error) {
	return followPages(in.ExclusiveStartKey, func(start map[string]types.AttributeValue) (readPage, error) {
		in.ExclusiveStartKey = start
		res, err := db.api.Query(ctx, in)
		if err != nil {
			return readPage{}, err
		}
		return readPage{res.Items, res.LastEvaluatedKey}, nil
	})
}

// readPage is one response of a paged read (Query or Scan).
type readPage struct {
	items []map[string]types.AttributeValue
	last  map[string]types.AttributeValue
}

// followPages collects the items of a paged read from start on, calling
// read with each LastEvaluatedKey until there is none.
func followPages(start map[string]types.AttributeValue, read func(start map[string]types.AttributeValue) (readPage, error)) ([]item, error) {
	var out []item
	for {
		p, err := read(start)
		if err != nil {
			return nil, err
		}
		for _, it := range p.items {
			out = append(out, it)
		}
		if len(p.last) == 0 {
			return out, nil
		}
		start = p.last
	}
}
