package dynamostore

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/pkg/driver"
)

func groupKey(id int64) item { return item{AttrID: n(id)} }

func decodeGroup(it item) xjob.Group {
	return xjob.Group{ID: it.int(AttrID), AppName: it.str("appName"), Title: it.str("title"),
		AddressType: xjob.AddressType(it.int("addressType")), AddressList: it.strs("addressList"),
		Version: it.int("version"), UpdatedAt: it.int("updatedAt")}
}

// GroupInsert stores a new group with Version 1 under g.ID, or a fresh id
// when it is 0. A taken id is xjob.ErrConflict.
func (db *DB) GroupInsert(ctx context.Context, g xjob.Group) (xjob.Group, error) {
	id, err := db.takeID(ctx, db.groupIDs, g.ID)
	if err != nil {
		return xjob.Group{}, fmt.Errorf("dynamo group insert: %w", err)
	}
	g.ID, g.Version = id, 1
	var e expr
	_, err = db.api.PutItem(ctx, &dynamodb.PutItemInput{TableName: &db.t.Groups,
		Item: item{AttrID: n(g.ID), "appName": s(g.AppName), "title": s(g.Title), "addressType": n(int64(g.AddressType)),
			"addressList": list(g.AddressList), "version": n(1), "updatedAt": n(g.UpdatedAt)},
		ConditionExpression: aws.String("attribute_not_exists(" + e.name(AttrID) + ")"), ExpressionAttributeNames: e.names})
	if condFailed(err) {
		err = fmt.Errorf("id %d already used: %w", id, xjob.ErrConflict)
	}
	if err != nil {
		return xjob.Group{}, fmt.Errorf("dynamo group insert: %w", err)
	}
	return g, nil
}

// GroupGet returns one group or xjob.ErrNotFound.
func (db *DB) GroupGet(ctx context.Context, id int64) (xjob.Group, error) {
	it, err := db.getItem(ctx, db.t.Groups, groupKey(id))
	if err != nil {
		return xjob.Group{}, fmt.Errorf("dynamo group get %d: %w", id, err)
	}
	return decodeGroup(it), nil
}

// GroupGetEventual is GroupGet with an eventually consistent read, half
// the read units of GroupGet's: what the ring's dispatcher reads on every
// invocation (W5 paid 0.54 strongly consistent read units a trigger for
// it), where a group edited in the last second may still dispatch as it
// was, as it would have a second earlier. Paths that act on an edit just
// made (the admin's manual trigger) use GroupGet. A group it does not find is
// read again strongly consistent, so a group created just before a job's
// first fire (a FIRE_ONCE_NOW, a manual trigger) is never "missing" for
// a replica that has yet to see it.
func (db *DB) GroupGetEventual(ctx context.Context, id int64) (xjob.Group, error) {
	key := groupKey(id)
	out, err := db.api.GetItem(ctx, &dynamodb.GetItemInput{TableName: &db.t.Groups, Key: key, ConsistentRead: aws.Bool(false)})
	if err != nil {
		return xjob.Group{}, fmt.Errorf("dynamo group get %d: %w", id, err)
	}
	if len(out.Item) > 0 {
		return decodeGroup(out.Item), nil
	}
	return db.GroupGet(ctx, id)
}

// GroupList scans the groups table (a few hundred items at most: one per
// executor application, created by people, not by load) and filters by
// substring, in id order.
func (db *DB) GroupList(ctx context.Context, p driver.GroupListParams) ([]xjob.Group, error) {
	items, err := db.scanAll(ctx, &dynamodb.ScanInput{TableName: &db.t.Groups})
	if err != nil {
		return nil, fmt.Errorf("dynamo group list: %w", err)
	}
	var out []xjob.Group
	for _, it := range items {
		g := decodeGroup(it)
		if strings.Contains(g.AppName, p.AppName) && strings.Contains(g.Title, p.Title) {
			out = append(out, g)
		}
	}
	slices.SortFunc(out, func(a, b xjob.Group) int { return cmp.Compare(a.ID, b.ID) })
	return out, nil
}

// GroupUpdate replaces a group if its version is ExpectVersion.
func (db *DB) GroupUpdate(ctx context.Context, p driver.GroupUpdateParams) (xjob.Group, error) {
	g := p.Group
	var u update
	u.Set("appName", s(g.AppName))
	u.Set("title", s(g.Title))
	u.Set("addressType", n(int64(g.AddressType)))
	u.Set("addressList", list(g.AddressList))
	u.Set("updatedAt", n(g.UpdatedAt))
	u.Incr("version")
	cond := u.name("version") + " = " + u.val(n(p.ExpectVersion))
	out, err := db.api.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: &db.t.Groups, Key: groupKey(g.ID),
		UpdateExpression: aws.String(u.String()), ConditionExpression: &cond,
		ExpressionAttributeNames: u.names, ExpressionAttributeValues: u.values, ReturnValues: types.ReturnValueAllNew})
	if condFailed(err) {
		err = db.missingOr(ctx, db.t.Groups, groupKey(g.ID), xjob.ErrConflict)
	}
	if err != nil {
		return xjob.Group{}, fmt.Errorf("dynamo group update %d: %w", g.ID, err)
	}
	return decodeGroup(out.Attributes), nil
}

// GroupSetAddresses stores a rebuilt address list without bumping the
// version (the registry's rebuild must not make a person's edit lose).
func (db *DB) GroupSetAddresses(ctx context.Context, id int64, addresses []string, updatedAt int64) error {
	var u update
	u.Set("addressList", list(addresses))
	u.Set("updatedAt", n(updatedAt))
	cond := "attribute_exists(" + u.name(AttrID) + ")"
	_, err := db.api.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: &db.t.Groups, Key: groupKey(id),
		UpdateExpression: aws.String(u.String()), ConditionExpression: &cond,
		ExpressionAttributeNames: u.names, ExpressionAttributeValues: u.values})
	if condFailed(err) {
		err = xjob.ErrNotFound
	}
	return wrapErr("dynamo group set addresses", id, err)
}

// GroupDelete removes a group.
func (db *DB) GroupDelete(ctx context.Context, id int64) error {
	var e expr
	_, err := db.api.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: &db.t.Groups, Key: groupKey(id),
		ConditionExpression: aws.String("attribute_exists(" + e.name(AttrID) + ")"), ExpressionAttributeNames: e.names})
	if condFailed(err) {
		err = xjob.ErrNotFound
	}
	return wrapErr("dynamo group delete", id, err)
}
