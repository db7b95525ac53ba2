package dynamostore

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/internal/fallback"
	"github.com/xjobdev/xjob/pkg/clock"
	"github.com/xjobdev/xjob/pkg/driver"
)

var (
	_ driver.Store      = (*DB)(nil)
	_ driver.LogExpirer = (*DB)(nil)
)

// API is the part of the DynamoDB client the store calls; *dynamodb.Client
// implements it. It is an interface so a caller can wrap the client (request
// counting for cost accounting, fault injection) without this package
// knowing.
type API interface {
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	PutItem(ctx context.Context, in *dynamodb.PutItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
	DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error)
	Query(ctx context.Context, in *dynamodb.QueryInput, opts ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error)
	Scan(ctx context.Context, in *dynamodb.ScanInput, opts ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error)
	BatchGetItem(ctx context.Context, in *dynamodb.BatchGetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error)
	BatchWriteItem(ctx context.Context, in *dynamodb.BatchWriteItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.BatchWriteItemOutput, error)
	CreateTable(ctx context.Context, in *dynamodb.CreateTableInput, opts ...func(*dynamodb.Options)) (*dynamodb.CreateTableOutput, error)
	DescribeTable(ctx context.Context, in *dynamodb.DescribeTableInput, opts ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error)
}

// Default table names (the infra templates create tables with these names
// under a stack prefix; see Tables.WithPrefix).
const (
	TableJobs   = "jobs"
	TableGroups = "groups"
	// TableLogs holds log pages (doc.go, "Log pages"), and the failed and
	// parked lists. Its key schema differs from the per-log "logs" table
	// of earlier versions, hence the new name.
	TableLogs     = "logpages"
	TableRegistry = "registry"
	TableLeases   = "leases"
	TableReports  = "reports"
	TableCounters = "counters"
	// TableConsole holds the console's records, apart from the scheduling
	// tables: users (AttrPK "user", AttrSK username) and saved GLUE sources
	// (AttrPK "glue#<jobId>", AttrSK SortKey(savedAt, random)), and the
	// jobs' name claims (AttrPK "jobname#<name>", AttrSK the job id; see
	// names.go).
	TableConsole = "console"
)

// Index names. They are part of the deployed schema: the infra templates
// declare them and the infra cross-check test compares.
const (
	// IndexJobsDue is the sparse due index on (AttrDueShard, AttrDueKey):
	// only running jobs carry AttrDueShard.
	IndexJobsDue = "due"
	// IndexJobsByGroup lists one group's jobs in id order (keys only).
	IndexJobsByGroup = "byGroup"
	// IndexJobsByShard lists every job, one scan shard per partition, in
	// id order (keys only): the unfiltered job list merges the shards.
	// Every job carries its fixed shard from insert, so DynamoDB fills the
	// index from existing items when it is added to a deployed table, and
	// job writes other than insert and delete never touch it.
	IndexJobsByShard = "byShard"
	// IndexLogsByTime lists log pages by their latest trigger time, in
	// 16 partitions (the jobs' shard among 16).
	IndexLogsByTime = "byTime"
)

// Key and index attribute names, with their DynamoDB types in comments.
const (
	AttrID          = "id"          // N: jobs, groups, logs partition key
	AttrShard       = "shard"       // N: a job's scan shard, jobs byShard partition key
	AttrDueShard    = "dueShard"    // N: jobs due index partition key, present only while running
	AttrDueKey      = "dueKey"      // S: jobs due index sort key, SortKey(nextTriggerTime, id)
	AttrGroupID     = "groupId"     // N: jobs byGroup partition key
	AttrTimeKey     = "tkey"        // S: log pages' byTime sort key, SortKey(latest trigger time, page)
	AttrTimePart    = "part"        // N: log pages' byTime partition key, the jobs' shard among 16
	AttrRegistryKey = "registryKey" // S: registry partition key (appname)
	AttrMember      = "member"      // S: registry sort key, group + "#" + address
	AttrName        = "name"        // S: leases and counters partition key
	AttrDay         = "day"         // S: reports partition key (yyyy-mm-dd)
	AttrPurgeAt     = "purgeAt"     // N: TTL attribute (Unix seconds) of logs, registry entries, console items, misfire leases
	AttrPK          = "pk"          // S: console and log table partition key
	AttrSK          = "sk"          // S: console and log table sort key
)

// Tables names the store's tables.
type Tables struct {
	Jobs, Groups, Logs, Registry, Leases, Reports, Counters, Console string
}

// TablesWithPrefix returns the default table names as prefix + "-" + name,
// the way the infra templates name them after the stack.
func TablesWithPrefix(prefix string) Tables {
	p := func(n string) string {
		if prefix == "" {
			return n
		}
		return prefix + "-" + n
	}
	return Tables{Jobs: p(TableJobs), Groups: p(TableGroups), Logs: p(TableLogs),
		Registry: p(TableRegistry), Leases: p(TableLeases), Reports: p(TableReports), Counters: p(TableCounters),
		Console: p(TableConsole)}
}

// Options configure a DB.
type Options struct {
	// Tables are the table names (required; see TablesWithPrefix).
	Tables Tables
	// Shards is the number of scan shards (default 16). Like SQLite's, it
	// must not change once jobs exist: a job's shard is fixed at insert.
	Shards int
	// LogPartitions spreads the failed and parked lists over this many
	// partition key values (default 4), so that no single partition takes
	// a storm of failures. Never lower it on a live table: entries keep
	// the partition they were written with.
	LogPartitions int
	// LogPages is how many log pages a fire second has: 1, 2, 4, 8 or 16
	// (default 16). A log's page part is its job's shard among 16 masked
	// to LogPages (logid.go). Dense loads want 16 (a page write costs the
	// whole page, so small pages keep each result's write small); a
	// sparse deployment, whose fires are mostly alone in their second,
	// wants 1 (one page write a second for all its jobs instead of one
	// per job). Like Shards it must not change once logs exist: a job's
	// logs are listed from its partition of the time index, which this
	// picks.
	LogPages int
	// LogTTL is the logs' retention (default 30 days): a page's and a
	// list entry's TTL attribute is its latest trigger time + LogTTL, and
	// DynamoDB's TTL deletes them, for free but up to days late. Readers
	// never return a log past its retention (see doc.go, "Retention"), so
	// the store is a driver.LogExpirer and nothing pays for a purge.
	// Negative: no TTL attribute and no expiry; the caller purges with
	// LogDeleteBefore.
	LogTTL time.Duration
	// Clock tells the reads which logs are past their retention (default
	// the wall clock).
	Clock clock.Clock
	// RegistryTTL sets the registry entries' TTL attribute to heartbeat
	// time + RegistryTTL (default 1 day; negative: none).
	RegistryTTL time.Duration
}

func (o *Options) applyDefaults() error {
	t := o.Tables
	for _, n := range []string{t.Jobs, t.Groups, t.Logs, t.Registry, t.Leases, t.Reports, t.Counters, t.Console} {
		if n == "" {
			return errors.New("dynamostore: every table name is required (see TablesWithPrefix)")
		}
	}
	if o.Shards <= 0 {
		o.Shards = 16
	}
	if o.LogPartitions <= 0 {
		o.LogPartitions = 4
	}
	if o.LogPages == 0 {
		o.LogPages = logParts
	}
	if !ValidLogPages(o.LogPages) {
		return fmt.Errorf("dynamostore: LogPages %d must be 1, 2, 4, 8 or 16 (a log's page part is its job's shard among 16 masked to LogPages)", o.LogPages)
	}
	if o.LogTTL == 0 {
		o.LogTTL = 30 * 24 * time.Hour
	}
	if o.RegistryTTL == 0 {
		o.RegistryTTL = 24 * time.Hour
	}
	o.Clock = fallback.Clock(o.Clock)
	return nil
}

// DB is the DynamoDB store. It implements driver.Store and is safe for
// concurrent use.
type DB struct {
	api  API
	opts Options
	t    Tables

	jobIDs, groupIDs *idBlock
	idHash           func(occurrenceID string) uint64 // logIDHash
	span             atomic.Int64                     // widest log page span recorded (noteSpan)
	namesReady       atomic.Bool                      // the name claims backfill is done (backfillNames)
	recent           recentPages                      // pages just written or read (mutatePage)
}

// New returns a store over existing tables (CreateTables makes them).
func New(api API, opts Options) (*DB, error) {
	if err := opts.applyDefaults(); err != nil {
		return nil, err
	}
	db := &DB{api: api, opts: opts, t: opts.Tables}
	db.jobIDs = &idBlock{name: "job", size: 1}
	db.groupIDs = &idBlock{name: "group", size: 1}
	db.idHash = logIDHash
	return db, nil
}

// Shards returns the number of scan shards.
func (db *DB) Shards() int { return db.opts.Shards }

// LogPages returns the number of log pages a fire second has.
func (db *DB) LogPages() int { return db.opts.LogPages }

// ValidLogPages reports whether n is a LogPages the store accepts: a
// power of two that divides 16, the part bits a log id carries.
func ValidLogPages(n int) bool {
	return n >= 1 && n <= logParts && n&(n-1) == 0
}

// idBlock hands out ids from a block reserved with one atomic ADD on the
// counters table.
type idBlock struct {
	name string
	size int64

	mu         sync.Mutex
	next, last int64 // next id to hand out; last id of the block
}

func (db *DB) nextID(ctx context.Context, b *idBlock) (int64, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.next == 0 || b.next > b.last {
		var e expr
		out, err := db.api.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName:                 &db.t.Counters,
			Key:                       item{AttrName: s(b.name)},
			UpdateExpression:          aws.String("ADD " + e.name("value") + " " + e.val(n(b.size))),
			ExpressionAttributeNames:  e.names,
			ExpressionAttributeValues: e.values,
			ReturnValues:              types.ReturnValueUpdatedNew,
		})
		if err != nil {
			return 0, fmt.Errorf("allocate %s id: %w", b.name, err)
		}
		hi := item(out.Attributes).int("value")
		b.next, b.last = hi-b.size+1, hi
	}
	id := b.next
	b.next++
	return id, nil
}

// takeID returns id, or a new one from b when id is 0. An explicit id
// (an import keeping xxl-job's ids) first raises b's counter to at least
// id, so that ids allocated later never collide with it; the caller's
// conditional put then refuses an id that is already taken. Blocks cached
// by other processes are unaffected only because job and group blocks are
// one id long.
func (db *DB) takeID(ctx context.Context, b *idBlock, id int64) (int64, error) {
	if id == 0 {
		return db.nextID(ctx, b)
	}
	var e expr
	v := e.name("value")
	_, err := db.api.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 &db.t.Counters,
		Key:                       item{AttrName: s(b.name)},
		UpdateExpression:          aws.String("SET " + v + " = " + e.val(n(id))),
		ConditionExpression:       aws.String("attribute_not_exists(" + v + ") OR " + v + " < " + e.val(n(id))),
		ExpressionAttributeNames:  e.names,
		ExpressionAttributeValues: e.values,
	})
	if err != nil && !condFailed(err) {
		return 0, fmt.Errorf("reserve %s id %d: %w", b.name, id, err)
	}
	return id, nil
}

// SortKey encodes (a, b) as a fixed-width string whose byte order is the
// numeric order of the pair: each int64 has its sign bit flipped and is
// written as 16 hex digits. The due index sorts by SortKey(next fire time,
// job id) and the log indexes by SortKey(trigger time, log id), so ties are
// ordered by id and a keyset cursor needs a single key condition.
func SortKey(a, b int64) string {
	return fmt.Sprintf("%016x#%016x", uint64(a)^(1<<63), uint64(b)^(1<<63))
}

var (
	minKey = SortKey(math.MinInt64, math.MinInt64)
	maxKey = SortKey(math.MaxInt64, math.MaxInt64)
)

// item is one DynamoDB item, with typed readers. A missing or mistyped
// attribute reads as the zero value: the store writes every attribute it
// reads, so that only happens for optional ones.
type item map[string]types.AttributeValue

func (it item) int(name string) int64 {
	if v, ok := it[name].(*types.AttributeValueMemberN); ok {
		i, _ := strconv.ParseInt(v.Value, 10, 64)
		return i
	}
	return 0
}

func (it item) str(name string) string {
	if v, ok := it[name].(*types.AttributeValueMemberS); ok {
		return v.Value
	}
	return ""
}

func (it item) strs(name string) []string {
	l, ok := it[name].(*types.AttributeValueMemberL)
	if !ok || len(l.Value) == 0 {
		return nil
	}
	out := make([]string, 0, len(l.Value))
	for _, v := range l.Value {
		if sv, ok := v.(*types.AttributeValueMemberS); ok {
			out = append(out, sv.Value)
		}
	}
	return out
}

func n(v int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(v, 10)}
}
func s(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }

func list(vs []string) types.AttributeValue {
	l := make([]types.AttributeValue, len(vs))
	for i, v := range vs {
		l[i] = s(v)
	}
	return &types.AttributeValueMemberL{Value: l}
}

// expr builds expression placeholders. Every attribute goes through a name
// placeholder, so DynamoDB's reserved words (name, owner, day, value…)
// never bite.
type expr struct {
	names  map[string]string
	values map[string]types.AttributeValue
}

func (e *expr) name(attr string) string {
	if e.names == nil {
		e.names = map[string]string{}
	}
	e.names["#"+attr] = attr
	return "#" + attr
}

func (e *expr) val(v types.AttributeValue) string {
	if e.values == nil {
		e.values = map[string]types.AttributeValue{}
	}
	k := ":v" + strconv.Itoa(len(e.values))
	e.values[k] = v
	return k
}

// update collects SET/REMOVE/ADD clauses of an update expression.
type update struct {
	expr
	set, remove, add []string
}

func (u *update) Set(attr string, v types.AttributeValue) {
	u.set = append(u.set, u.name(attr)+" = "+u.val(v))
}
func (u *update) SetExpr(attr, rhs string) { u.set = append(u.set, u.name(attr)+" = "+rhs) }
func (u *update) Remove(attr string)       { u.remove = append(u.remove, u.name(attr)) }
func (u *update) Add(attr string, v int64) { u.add = append(u.add, u.name(attr)+" "+u.val(n(v))) }
func (u *update) Incr(attr string) {
	u.SetExpr(attr, u.name(attr)+" + "+u.val(n(1)))
}

func (u *update) String() string {
	var parts []string
	if len(u.set) > 0 {
		parts = append(parts, "SET "+strings.Join(u.set, ", "))
	}
	if len(u.remove) > 0 {
		parts = append(parts, "REMOVE "+strings.Join(u.remove, ", "))
	}
	if len(u.add) > 0 {
		parts = append(parts, "ADD "+strings.Join(u.add, ", "))
	}
	return strings.Join(parts, " ")
}

// condFailed reports whether err is a lost conditional write.
func condFailed(err error) bool {
	var cf *types.ConditionalCheckFailedException
	return errors.As(err, &cf)
}

// missingOr tells a lost conditional write apart from a missing item: it
// reads the item (only on the failure path) and returns xjob.ErrNotFound
// when there is none, else lost.
func (db *DB) missingOr(ctx context.Context, table string, key item, lost error) error {
	out, err := db.api.GetItem(ctx, &dynamodb.GetItemInput{TableName: &table, Key: key,
		ConsistentRead: aws.Bool(true), ProjectionExpression: aws.String("#k"),
		ExpressionAttributeNames: map[string]string{"#k": firstKey(key)}})
	switch {
	case err != nil:
		return err
	case len(out.Item) == 0:
		return xjob.ErrNotFound
	}
	return lost
}

func firstKey(key item) string {
	for k := range key {
		return k
	}
	return ""
}

// getItem reads one item with a strongly consistent read (the store's
// callers read what they just wrote); xjob.ErrNotFound if there is none.
func (db *DB) getItem(ctx context.Context, table string, key item) (item, error) {
	out, err := db.api.GetItem(ctx, &dynamodb.GetItemInput{TableName: &table, Key: key, ConsistentRead: aws.Bool(true)})
	if err != nil {
		return nil, err
	}
	if len(out.Item) == 0 {
		return nil, xjob.ErrNotFound
	}
	return out.Item, nil
}

// Backoff of the batch retries (unprocessed items and keys); the SDK's own
// retryer already backs off on throttling errors of whole requests.
const (
	batchAttempts = 10
	batchBaseWait = 20 * time.Millisecond
	batchMaxWait  = time.Second
)

func batchWait(ctx context.Context, attempt int) error {
	d := min(batchBaseWait<<attempt, batchMaxWait)
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// batchGet reads items by key (any number; 100 per request), retrying
// unprocessed keys with backoff. Order is not kept. Reads are eventually
// consistent unless consistent is set.
func (db *DB) batchGet(ctx context.Context, table string, keys []item, consistent ...bool) ([]item, error) {
	strong := len(consistent) > 0 && consistent[0]
	var out []item
	for len(keys) > 0 {
		chunk := keys[:min(len(keys), 100)]
		keys = keys[len(chunk):]
		req := map[string]types.KeysAndAttributes{table: {Keys: toMaps(chunk), ConsistentRead: aws.Bool(strong)}}
		for attempt := 0; len(req) > 0; attempt++ {
			if attempt > 0 {
				if attempt >= batchAttempts {
					return nil, fmt.Errorf("batch get %s: keys still unprocessed after %d attempts", table, attempt)
				}
				if err := batchWait(ctx, attempt); err != nil {
					return nil, err
				}
			}
			res, err := db.api.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{RequestItems: req})
			if err != nil {
				return nil, err
			}
			for _, it := range res.Responses[table] {
				out = append(out, it)
			}
			req = res.UnprocessedKeys
		}
	}
	return out, nil
}

// batchWrite applies write requests (any number; 25 per request),
// retrying unprocessed items with backoff.
func (db *DB) batchWrite(ctx context.Context, table string, reqs []types.WriteRequest) error {
	for len(reqs) > 0 {
		chunk := reqs[:min(len(reqs), 25)]
		reqs = reqs[len(chunk):]
		pending := map[string][]types.WriteRequest{table: chunk}
		for attempt := 0; len(pending) > 0; attempt++ {
			if attempt > 0 {
				if attempt >= batchAttempts {
					return fmt.Errorf("batch write %s: items still unprocessed after %d attempts", table, attempt)
				}
				if err := batchWait(ctx, attempt); err != nil {
					return err
				}
			}
			res, err := db.api.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: pending})
			if err != nil {
				return err
			}
			pending = res.UnprocessedItems
		}
	}
	return nil
}

func toMaps(items []item) []map[string]types.AttributeValue {
	out := make([]map[string]types.AttributeValue, len(items))
	for i, it := range items {
		out[i] = it
	}
	return out
}

// scanAll reads a whole table, following LastEvaluatedKey. Only for tables
// that stay small whatever the load (groups, live executors in the
// registry), and the jobs table once per deployment (backfillNames).
func (db *DB) scanAll(ctx context.Context, in *dynamodb.ScanInput) ([]item, error) {
	return followPages(in.ExclusiveStartKey, func(start map[string]types.AttributeValue) (readPage, error) {
		in.ExclusiveStartKey = start
		res, err := db.api.Scan(ctx, in)
		if err != nil {
			return readPage{}, err
		}
		return readPage{res.Items, res.LastEvaluatedKey}, nil
	})
}

// clampLimit turns a caller's limit into one the store serves.
func clampLimit(v, def, maxN int) int {
	if v <= 0 {
		return def
	}
	return min(v, maxN)
}

// badCursor is the error for a page cursor this store did not issue.
func badCursor(c string) error {
	return &xjob.ValidationError{Problems: []xjob.FieldProblem{{Field: "cursor", Message: fmt.Sprintf("%q is not a valid page cursor", c)}}}
}

// purgeAt is the TTL attribute value for an instant (Unix ms) plus ttl,
// in Unix seconds; ok is false when TTLs are off.
func purgeAt(atMillis int64, ttl time.Duration) (int64, bool) {
	if ttl < 0 {
		return 0, false
	}
	return (atMillis + ttl.Milliseconds()) / 1000, true
}
