package dynamostore

import (
	"context"
	"errors"
	"fmt"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/pkg/driver"
)

// The log methods change logs through their pages (logpage.go): every
// single-item method is its batch method with one item, so there is one
// path for each change.

// LogCreate stores a new log under its occurrence; when the occurrence has
// a log already it returns that log and xjob.ErrConflict (no take-over:
// that is LogCreateMany's and LogClaim's).
func (db *DB) LogCreate(ctx context.Context, l xjob.Log) (xjob.Log, error) {
	res, err := db.createLogs(ctx, []xjob.Log{l}, false)
	switch {
	case err != nil:
		return xjob.Log{}, fmt.Errorf("dynamo log create %s: %w", l.OccurrenceID, err)
	case res[0].Err != nil:
		return xjob.Log{}, res[0].Err
	case res[0].Outcome != driver.ClaimCreated:
		return res[0].Log, fmt.Errorf("dynamo log create %s: %w", l.OccurrenceID, xjob.ErrConflict)
	}
	return res[0].Log, nil
}

// LogCreateMany claims a batch of occurrences: one conditional write per
// page the batch touches (a ring bucket's fires share a few pages).
func (db *DB) LogCreateMany(ctx context.Context, logs []xjob.Log) ([]driver.LogCreated, error) {
	res, err := db.createLogs(ctx, logs, true)
	if err != nil {
		return nil, fmt.Errorf("dynamo log create many: %w", err)
	}
	return res, nil
}

func (db *DB) createLogs(ctx context.Context, logs []xjob.Log, takeOver bool) ([]driver.LogCreated, error) {
	out := make([]driver.LogCreated, len(logs))
	pages, ks := make([]int64, len(logs)), make([]int64, len(logs))
	var valid []int
	for i, l := range logs {
		if l.OccurrenceID == "" {
			out[i].Err = &xjob.ValidationError{Problems: []xjob.FieldProblem{{Field: "occurrenceId", Message: "is required"}}}
			continue
		}
		pages[i], ks[i] = logPlace(db.idHash, db.opts.LogPages, l.OccurrenceID, l.JobID)
		valid = append(valid, i)
	}
	claim := claimChange(logs, valid, ks, takeOver, out)
	page := func(v int) int64 { return pages[valid[v]] }
	err := perGroup(ctx, len(valid), page, func(ctx context.Context, items []int) error {
		return db.claimPage(ctx, page(items[0]), func(p *logPage) (bool, error) { return claim(p, items) })
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// claimChange is createLogs' change of one page: it claims the page's
// items and sets their outcomes (all of them, from the page it is given:
// it may run again on a fresher page).
func claimChange(logs []xjob.Log, valid []int, ks []int64, takeOver bool, out []driver.LogCreated) func(p *logPage, items []int) (bool, error) {
	return func(p *logPage, items []int) (bool, error) {
		changed := false
		byOcc := p.occurrences()
		for _, v := range items {
			i := valid[v]
			l := logs[i]
			if id, ok := byOcc[l.OccurrenceID]; ok {
				j := p.find(id)
				prev := p.logs[j]
				outcome := driver.ClaimOutcomeOf(prev, l)
				if !takeOver && outcome == driver.ClaimTakenOver {
					outcome = driver.ClaimHeld
				}
				if outcome != driver.ClaimTakenOver {
					out[i] = driver.LogCreated{Outcome: outcome, Log: prev}
					continue
				}
				taken := driver.TakeOver(prev, l)
				taken.Version++
				p.logs[j] = taken
				out[i] = driver.LogCreated{Outcome: driver.ClaimTakenOver, Log: taken, Prev: prev}
				changed = true
				continue
			}
			l.Version = 1
			created, err := p.insert(l, ks[i])
			if err != nil {
				return false, err
			}
			byOcc[created.OccurrenceID] = created.ID
			out[i] = driver.LogCreated{Outcome: driver.ClaimCreated, Log: created}
			changed = true
		}
		return changed, nil
	}
}

// LogGet returns one log (strongly consistent read of its page) or
// xjob.ErrNotFound.
func (db *DB) LogGet(ctx context.Context, id int64) (xjob.Log, error) {
	p, err := db.readPage(ctx, pageOfLog(id))
	if err != nil {
		return xjob.Log{}, fmt.Errorf("dynamo log get %d: %w", id, err)
	}
	if j := p.find(id); j >= 0 {
		return p.logs[j], nil
	}
	return xjob.Log{}, fmt.Errorf("dynamo log get %d: %w", id, xjob.ErrNotFound)
}

// LogGetMany reads the pages of ids (strongly consistent: a callback may
// follow its trigger closely) and returns the logs among ids.
func (db *DB) LogGetMany(ctx context.Context, ids []int64) ([]xjob.Log, error) {
	found, err := db.readLogs(ctx, ids, true)
	if err != nil {
		return nil, fmt.Errorf("dynamo log get many: %w", err)
	}
	logs := make([]xjob.Log, 0, len(found))
	for _, l := range found {
		logs = append(logs, l)
	}
	return logs, nil
}

// changeLogs applies change to each log ids names, page by page; change
// returns the item's outcome: nil when it changed the log, which is then
// stored with its version bumped and returned in logs. A missing log's
// outcome is xjob.ErrNotFound.
func (db *DB) changeLogs(ctx context.Context, ids []int64, change func(i int, l *xjob.Log) error) (logs []xjob.Log, errs []error, err error) {
	return db.changeLogsIn(ctx, ids, pageAttempts, change)
}

// changeLogsIn is changeLogs in at most attempts rounds per page (see
// mutatePageIn). A page that lost its one round is no failure of the
// call: each of its items' outcome is driver.ErrContended, and the other
// pages' outcomes stand (they are written).
func (db *DB) changeLogsIn(ctx context.Context, ids []int64, attempts int, change func(i int, l *xjob.Log) error) (logs []xjob.Log, errs []error, err error) {
	logs, errs = make([]xjob.Log, len(ids)), make([]error, len(ids))
	changePage := func(p *logPage, items []int) (bool, error) {
		changed := false
		for _, i := range items {
			j := p.find(ids[i])
			if j < 0 {
				errs[i] = xjob.ErrNotFound
				continue
			}
			l := p.logs[j]
			if errs[i] = change(i, &l); errs[i] == nil {
				l.Version++
				p.logs[j], logs[i] = l, l
				changed = true
			}
		}
		return changed, nil
	}
	page := func(i int) int64 { return pageOfLog(ids[i]) }
	err = perGroup(ctx, len(ids), page, func(ctx context.Context, items []int) error {
		err := db.mutatePageIn(ctx, page(items[0]), attempts, func(p *logPage) (bool, error) { return changePage(p, items) })
		if attempts == 1 && errors.Is(err, driver.ErrContended) {
			for _, i := range items {
				logs[i], errs[i] = xjob.Log{}, err
			}
			return nil
		}
		return err
	})
	return logs, errs, err
}

// LogClaim takes over an untriggered log, conditional on its version.
func (db *DB) LogClaim(ctx context.Context, p driver.LogClaimParams) (xjob.Log, error) {
	logs, errs, err := db.changeLogs(ctx, []int64{p.ID}, func(_ int, l *xjob.Log) error {
		if l.Version != p.ExpectVersion || l.TriggerCode != xjob.CodeNone {
			return xjob.ErrConflict
		}
		l.ClaimUntil, l.TriggerTime = p.ClaimUntil, p.TriggerTime
		return nil
	})
	if err == nil {
		err = errs[0]
	}
	if err != nil {
		return xjob.Log{}, fmt.Errorf("dynamo log claim %d: %w", p.ID, err)
	}
	return logs[0], nil
}

// LogTriggered records the executor's reply to /run if none is recorded
// (a result that came first stays).
func (db *DB) LogTriggered(ctx context.Context, p driver.LogTriggeredParams) error {
	errs, err := db.LogTriggeredMany(ctx, []driver.LogTriggeredParams{p})
	if err == nil {
		err = errs[0]
	}
	return wrapErr("dynamo log triggered", p.ID, err)
}

// LogTriggeredMany records replies to /run: one write per page. A reply
// replaces a provisional claim's record (and ends it).
func (db *DB) LogTriggeredMany(ctx context.Context, ps []driver.LogTriggeredParams) ([]error, error) {
	ids := make([]int64, len(ps))
	for i, p := range ps {
		if p.TriggerCode == xjob.CodeNone {
			return nil, fmt.Errorf("dynamo log triggered %d: trigger code 0 records nothing", p.ID)
		}
		ids[i] = p.ID
	}
	_, errs, err := db.changeLogs(ctx, ids, func(i int, l *xjob.Log) error {
		if l.TriggerCode != xjob.CodeNone && !l.Provisional() {
			return xjob.ErrConflict
		}
		l.ExecutorAddress, l.TriggerCode, l.TriggerMsg = ps[i].ExecutorAddress, ps[i].TriggerCode, ps[i].TriggerMsg
		l.Delivery = ""
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("dynamo log triggered many: %w", err)
	}
	for i := range errs {
		errs[i] = wrapErr("dynamo log triggered", ids[i], errs[i])
	}
	return errs, nil
}

// LogFinish records the first result.
func (db *DB) LogFinish(ctx context.Context, p driver.LogFinishParams) (xjob.Log, error) {
	res, err := db.LogFinishMany(ctx, []driver.LogFinishParams{p})
	if err != nil {
		return xjob.Log{}, err
	}
	return res[0].Log, res[0].Err
}

// LogFinishMany records results (first result wins): one write per page.
func (db *DB) LogFinishMany(ctx context.Context, ps []driver.LogFinishParams) ([]driver.LogFinished, error) {
	ids := make([]int64, len(ps))
	for i, p := range ps {
		if p.HandleCode == xjob.CodeNone {
			return nil, fmt.Errorf("dynamo log finish %d: handle code 0 records nothing", p.ID)
		}
		ids[i] = p.ID
	}
	// A caller that asked for one round (driver.OneRound) gets a page
	// that lost it back as driver.ErrContended on each of its items.
	attempts := pageAttempts
	if driver.IsOneRound(ctx) {
		attempts = 1
	}
	logs, errs, err := db.changeLogsIn(ctx, ids, attempts, func(i int, l *xjob.Log) error {
		if l.HandleCode != xjob.CodeNone {
			return xjob.ErrConflict
		}
		l.HandleTime, l.HandleCode, l.HandleMsg = ps[i].HandleTime, ps[i].HandleCode, ps[i].HandleMsg
		// The result confirms a provisional claim's call: nothing may
		// take the log over any more (Provisional is false once handled),
		// and the page forgets whose claim it was.
		l.Delivery = ""
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("dynamo log finish many: %w", err)
	}
	out := make([]driver.LogFinished, len(ps))
	for i, e := range errs {
		if e != nil {
			out[i] = driver.LogFinished{Err: fmt.Errorf("dynamo log finish %d: %w", ids[i], e)}
		} else {
			out[i].Log = logs[i]
		}
	}
	return out, nil
}

// LogSetAlarm compares-and-sets the alarm status.
func (db *DB) LogSetAlarm(ctx context.Context, p driver.LogSetAlarmParams) error {
	_, errs, err := db.changeLogs(ctx, []int64{p.ID}, func(_ int, l *xjob.Log) error {
		if l.AlarmStatus != p.From {
			return xjob.ErrConflict
		}
		l.AlarmStatus = p.To
		return nil
	})
	if err == nil {
		err = errs[0]
	}
	return wrapErr("dynamo log set alarm", p.ID, err)
}

// deleteLogs removes the logs ids names, page by page (a page left empty
// is deleted), and returns how many it removed.
func (db *DB) deleteLogs(ctx context.Context, ids []int64) (int, error) {
	gone := make([]bool, len(ids))
	err := db.perPage(ctx, len(ids), func(i int) int64 { return pageOfLog(ids[i]) }, func(p *logPage, items []int) (bool, error) {
		changed := false
		for _, i := range items {
			gone[i] = false
			if j := p.find(ids[i]); j >= 0 {
				p.logs = append(p.logs[:j], p.logs[j+1:]...)
				gone[i], changed = true, true
			}
		}
		return changed, nil
	})
	if err != nil {
		return 0, err
	}
	count := 0
	for _, g := range gone {
		if g {
			count++
		}
	}
	return count, nil
}
