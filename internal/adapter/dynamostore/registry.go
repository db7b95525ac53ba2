package dynamostore

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/pkg/driver"
)

func registryKey(e xjob.RegistryEntry) item {
	return item{AttrRegistryKey: s(e.Key), AttrMember: s(e.Group + "#" + e.Value)}
}

func decodeEntry(it item) xjob.RegistryEntry {
	return xjob.RegistryEntry{Group: it.str("registryGroup"), Key: it.str(AttrRegistryKey),
		Value: it.str("registryValue"), UpdatedAt: it.int("updatedAt")}
}

// RegistryUpsert writes a heartbeat. The write is conditional on the stored
// UpdatedAt not being newer, so a delayed heartbeat never ages an entry; a
// lost condition is success.
func (db *DB) RegistryUpsert(ctx context.Context, e xjob.RegistryEntry) error {
	var u update
	u.Set("registryGroup", s(e.Group))
	u.Set("registryValue", s(e.Value))
	u.Set("updatedAt", n(e.UpdatedAt))
	if at, ok := purgeAt(e.UpdatedAt, db.opts.RegistryTTL); ok {
		u.Set(AttrPurgeAt, n(at))
	}
	cond := "attribute_not_exists(" + u.name("updatedAt") + ") OR " + u.name("updatedAt") + " <= " + u.val(n(e.UpdatedAt))
	_, err := db.api.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: &db.t.Registry, Key: registryKey(e),
		UpdateExpression: aws.String(u.String()), ConditionExpression: &cond,
		ExpressionAttributeNames: u.names, ExpressionAttributeValues: u.values})
	if err != nil && !condFailed(err) {
		return fmt.Errorf("dynamo registry upsert: %w", err)
	}
	return nil
}

// RegistryRemove deletes one entry.
func (db *DB) RegistryRemove(ctx context.Context, e xjob.RegistryEntry) error {
	if _, err := db.api.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: &db.t.Registry, Key: registryKey(e)}); err != nil {
		return fmt.Errorf("dynamo registry remove: %w", err)
	}
	return nil
}

// RegistryList queries one appname's partition, or scans the table for all
// keys (one item per live executor address: small).
func (db *DB) RegistryList(ctx context.Context, p driver.RegistryListParams) ([]xjob.RegistryEntry, error) {
	var items []item
	var err error
	if p.Key != "" {
		var e expr
		in := &dynamodb.QueryInput{TableName: &db.t.Registry,
			KeyConditionExpression: aws.String(e.name(AttrRegistryKey) + " = " + e.val(s(p.Key))),
			FilterExpression:       aws.String(e.name("updatedAt") + " >= " + e.val(n(p.Since)))}
		in.ExpressionAttributeNames, in.ExpressionAttributeValues = e.names, e.values
		for {
			res, qerr := db.api.Query(ctx, in)
			if qerr != nil {
				err = qerr
				break
			}
			for _, it := range res.Items {
				items = append(items, it)
			}
			if len(res.LastEvaluatedKey) == 0 {
				break
			}
			in.ExclusiveStartKey = res.LastEvaluatedKey
		}
	} else {
		var e expr
		in := &dynamodb.ScanInput{TableName: &db.t.Registry,
			FilterExpression: aws.String(e.name("updatedAt") + " >= " + e.val(n(p.Since)))}
		in.ExpressionAttributeNames, in.ExpressionAttributeValues = e.names, e.values
		items, err = db.scanAll(ctx, in)
	}
	if err != nil {
		return nil, fmt.Errorf("dynamo registry list: %w", err)
	}
	out := make([]xjob.RegistryEntry, 0, len(items))
	for _, it := range items {
		out = append(out, decodeEntry(it))
	}
	slices.SortFunc(out, func(a, b xjob.RegistryEntry) int {
		return cmp.Or(cmp.Compare(a.Group, b.Group), cmp.Compare(a.Key, b.Key), cmp.Compare(a.Value, b.Value))
	})
	return out, nil
}

// RegistryDeleteBefore scans for stale entries and deletes each with a
// condition that it is still stale, so a heartbeat arriving meanwhile
// survives. The scan is bounded: the table holds live executors and the
// stale ones this sweep (and TTL) removes, not a history.
func (db *DB) RegistryDeleteBefore(ctx context.Context, before int64) (int, error) {
	var e expr
	in := &dynamodb.ScanInput{TableName: &db.t.Registry,
		FilterExpression: aws.String(e.name("updatedAt") + " < " + e.val(n(before)))}
	in.ExpressionAttributeNames, in.ExpressionAttributeValues = e.names, e.values
	items, err := db.scanAll(ctx, in)
	if err != nil {
		return 0, fmt.Errorf("dynamo registry delete before: %w", err)
	}
	deleted := 0
	for _, it := range items {
		var c expr
		cond := c.name("updatedAt") + " < " + c.val(n(before))
		_, err := db.api.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: &db.t.Registry,
			Key: item{AttrRegistryKey: it[AttrRegistryKey], AttrMember: it[AttrMember]}, ConditionExpression: &cond,
			ExpressionAttributeNames: c.names, ExpressionAttributeValues: c.values})
		switch {
		case err == nil:
			deleted++
		case !condFailed(err):
			return deleted, fmt.Errorf("dynamo registry delete before: %w", err)
		}
	}
	return deleted, nil
}

// LeaseAcquire takes the named lease in at most two conditional writes:
// first as its current owner (token kept, expiry extended), then as a new
// owner of a free or expired lease (token + 1, created at 1). A PurgeAt
// is written as AttrPurgeAt, the leases table's TTL attribute; a lease
// acquired without one keeps its item for good (shard leases: the token
// must keep growing).
func (db *DB) LeaseAcquire(ctx context.Context, p driver.LeaseAcquireParams) (driver.Lease, error) {
	if p.Owner == "" {
		return driver.Lease{}, &xjob.ValidationError{Problems: []xjob.FieldProblem{{Field: "owner", Message: "is required"}}}
	}
	key := item{AttrName: s(p.Name)}
	expires := p.Now + p.TTL.Milliseconds()

	var u update
	u.Set("expiresAt", n(expires))
	if p.PurgeAt > 0 {
		u.Set(AttrPurgeAt, n(purgeSeconds(p.PurgeAt)))
	}
	cond := u.name("owner") + " = " + u.val(s(p.Owner))
	out, err := db.api.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: &db.t.Leases, Key: key,
		UpdateExpression: aws.String(u.String()), ConditionExpression: &cond,
		ExpressionAttributeNames: u.names, ExpressionAttributeValues: u.values, ReturnValues: types.ReturnValueAllNew})
	if err == nil {
		return decodeLease(out.Attributes), nil
	}
	if !condFailed(err) {
		return driver.Lease{}, fmt.Errorf("dynamo lease acquire %s: %w", p.Name, err)
	}

	var v update
	v.Set("owner", s(p.Owner))
	v.Set("expiresAt", n(expires))
	if p.PurgeAt > 0 {
		v.Set(AttrPurgeAt, n(purgeSeconds(p.PurgeAt)))
	}
	v.Add("token", 1)
	cond = "attribute_not_exists(" + v.name("owner") + ") OR " + v.name("expiresAt") + " <= " + v.val(n(p.Now))
	out, err = db.api.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: &db.t.Leases, Key: key,
		UpdateExpression: aws.String(v.String()), ConditionExpression: &cond,
		ExpressionAttributeNames: v.names, ExpressionAttributeValues: v.values, ReturnValues: types.ReturnValueAllNew})
	if condFailed(err) {
		err = xjob.ErrLeaseHeld
	}
	if err != nil {
		return driver.Lease{}, fmt.Errorf("dynamo lease acquire %s: %w", p.Name, err)
	}
	return decodeLease(out.Attributes), nil
}

func decodeLease(it item) driver.Lease {
	return driver.Lease{Name: it.str(AttrName), Owner: it.str("owner"), Token: it.int("token"), ExpiresAt: it.int("expiresAt")}
}

// leaseHeldBy is the condition that l's owner still holds it with l's token.
func leaseHeldBy(e *expr, l driver.Lease) string {
	return e.name("owner") + " = " + e.val(s(l.Owner)) + " AND " + e.name("token") + " = " + e.val(n(l.Token))
}

// LeaseRenew extends a lease still held with the same owner and token.
func (db *DB) LeaseRenew(ctx context.Context, p driver.LeaseRenewParams) (driver.Lease, error) {
	l := p.Lease
	if l.Owner == "" {
		return driver.Lease{}, fmt.Errorf("dynamo lease renew %s: %w", l.Name, xjob.ErrLeaseLost)
	}
	var u update
	u.Set("expiresAt", n(p.Now+p.TTL.Milliseconds()))
	cond := leaseHeldBy(&u.expr, l)
	out, err := db.api.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: &db.t.Leases, Key: item{AttrName: s(l.Name)},
		UpdateExpression: aws.String(u.String()), ConditionExpression: &cond,
		ExpressionAttributeNames: u.names, ExpressionAttributeValues: u.values, ReturnValues: types.ReturnValueAllNew})
	if condFailed(err) {
		err = xjob.ErrLeaseLost
	}
	if err != nil {
		return driver.Lease{}, fmt.Errorf("dynamo lease renew %s: %w", l.Name, err)
	}
	return decodeLease(out.Attributes), nil
}

// LeaseRelease frees the lease (the owner attribute is removed), keeping
// its token.
func (db *DB) LeaseRelease(ctx context.Context, l driver.Lease) error {
	if l.Owner == "" {
		return fmt.Errorf("dynamo lease release %s: %w", l.Name, xjob.ErrLeaseLost)
	}
	var u update
	u.Remove("owner")
	u.Set("expiresAt", n(0))
	cond := leaseHeldBy(&u.expr, l)
	_, err := db.api.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: &db.t.Leases, Key: item{AttrName: s(l.Name)},
		UpdateExpression: aws.String(u.String()), ConditionExpression: &cond,
		ExpressionAttributeNames: u.names, ExpressionAttributeValues: u.values})
	if condFailed(err) {
		err = xjob.ErrLeaseLost
	}
	if err != nil {
		return fmt.Errorf("dynamo lease release %s: %w", l.Name, err)
	}
	return nil
}

// LeaseGet returns the lease's current state (Owner empty when released).
func (db *DB) LeaseGet(ctx context.Context, name string) (driver.Lease, error) {
	it, err := db.getItem(ctx, db.t.Leases, item{AttrName: s(name)})
	if err != nil {
		return driver.Lease{}, fmt.Errorf("dynamo lease get %s: %w", name, err)
	}
	return decodeLease(it), nil
}

// ReportAdd adds the deltas to the (day, group) item's counters with ADD
// (creating it). Group 0 keeps the day's bare key, as items written
// before the report was per group have, so those go on counting as
// group 0; a group's item is keyed "day#group", which also spreads one
// day's writes over as many items as there are groups.
func (db *DB) ReportAdd(ctx context.Context, d xjob.ReportDay) error {
	var u update
	u.Add("runningCount", int64(d.RunningCount))
	u.Add("sucCount", int64(d.SucCount))
	u.Add("failCount", int64(d.FailCount))
	_, err := db.api.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: &db.t.Reports, Key: item{AttrDay: s(reportKey(d.Day, d.GroupID))},
		UpdateExpression: aws.String(u.String()), ExpressionAttributeNames: u.names, ExpressionAttributeValues: u.values})
	if err != nil {
		return fmt.Errorf("dynamo report add %s group %d: %w", d.Day, d.GroupID, err)
	}
	return nil
}

// reportKey is the reports table key of a day's counters of one group.
func reportKey(day string, group int64) string {
	if group == 0 {
		return day
	}
	return day + "#" + strconv.FormatInt(group, 10)
}

// parseReportKey splits a reportKey back into day and group.
func parseReportKey(k string) (string, int64) {
	day, g, ok := strings.Cut(k, "#")
	if !ok {
		return day, 0
	}
	id, err := strconv.ParseInt(g, 10, 64)
	if err != nil {
		return day, -1 // no group anyone can ask for
	}
	return day, id
}

// maxReportKeys bounds the keys one group report reads item by item;
// past it (a long range over many groups) a scan reads fewer bytes.
const maxReportKeys = 2000

// ReportList sums the (day, group) items over p's groups per day, in day
// order. A set of groups reads exactly its items (days × groups keys, in
// batches of 100); every group scans the table, one item per day and
// active group retained.
func (db *DB) ReportList(ctx context.Context, p driver.ReportListParams) ([]xjob.ReportDay, error) {
	if p.From > p.To {
		return nil, nil
	}
	items, err := db.reportItems(ctx, p)
	if err != nil {
		return nil, fmt.Errorf("dynamo report list: %w", err)
	}
	want := make(map[int64]bool, len(p.GroupIDs))
	for _, g := range p.GroupIDs {
		want[g] = g != 0
	}
	sums := map[string]*xjob.ReportDay{}
	for _, it := range items {
		day, group := parseReportKey(it.str(AttrDay))
		if day < p.From || day > p.To || (len(want) > 0 && !want[group]) {
			continue
		}
		d := sums[day]
		if d == nil {
			d = &xjob.ReportDay{Day: day}
			sums[day] = d
		}
		d.RunningCount += int(it.int("runningCount"))
		d.SucCount += int(it.int("sucCount"))
		d.FailCount += int(it.int("failCount"))
	}
	out := make([]xjob.ReportDay, 0, len(sums))
	for _, d := range sums {
		out = append(out, *d)
	}
	slices.SortFunc(out, func(a, b xjob.ReportDay) int { return cmp.Compare(a.Day, b.Day) })
	return out, nil
}

// reportItems reads the items ReportList sums: by key for a set of
// groups over a range of real days, by scan otherwise.
func (db *DB) reportItems(ctx context.Context, p driver.ReportListParams) ([]item, error) {
	if keys, ok := reportKeys(p); ok {
		return db.batchGet(ctx, db.t.Reports, keys)
	}
	var e expr
	// "day#group" sorts after "day" and before the next day, and "~"
	// after any digit, so the range holds every group's items of its days.
	in := &dynamodb.ScanInput{TableName: &db.t.Reports,
		FilterExpression: aws.String(e.name(AttrDay) + " BETWEEN " + e.val(s(p.From)) + " AND " + e.val(s(p.To+"#~")))}
	in.ExpressionAttributeNames, in.ExpressionAttributeValues = e.names, e.values
	return db.scanAll(ctx, in)
}

// reportKeys lists the keys of p's groups' items over p's days, when p
// names groups and real dates and there are at most maxReportKeys.
func reportKeys(p driver.ReportListParams) ([]item, bool) {
	if len(p.GroupIDs) == 0 {
		return nil, false
	}
	from, err1 := time.Parse(time.DateOnly, p.From)
	to, err2 := time.Parse(time.DateOnly, p.To)
	if err1 != nil || err2 != nil {
		return nil, false
	}
	days := int(to.Sub(from)/(24*time.Hour)) + 1
	if days*len(p.GroupIDs) > maxReportKeys {
		return nil, false
	}
	keys := make([]item, 0, days*len(p.GroupIDs))
	seen := make(map[int64]bool, len(p.GroupIDs))
	for _, g := range p.GroupIDs {
		if g == 0 || seen[g] {
			continue
		}
		seen[g] = true
		for d := from; !d.After(to); d = d.AddDate(0, 0, 1) {
			keys = append(keys, item{AttrDay: s(reportKey(d.Format(time.DateOnly), g))})
		}
	}
	return keys, true
}
