package admin

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/pkg/driver"
)

// CreateGroup validates and stores a new executor group. An automatic
// group's address list is not a person's to set: it starts as the app's
// live executors and is kept up to date by the registry.
func (s *Service) CreateGroup(ctx context.Context, in xjob.Group) (xjob.Group, error) {
	in.ID = 0
	return s.createGroup(ctx, in)
}

// createGroup is CreateGroup keeping in.ID when it is not 0; a taken id is
// xjob.ErrConflict.
func (s *Service) createGroup(ctx context.Context, in xjob.Group) (xjob.Group, error) {
	g := in
	if g.ID < 0 || g.ID > math.MaxInt32 {
		return xjob.Group{}, invalid("id", "%d is not a group id", g.ID)
	}
	g.Version, g.UpdatedAt = 0, s.now()
	if err := s.prepareGroup(ctx, &g); err != nil {
		return xjob.Group{}, err
	}
	if err := s.appNameFree(ctx, g.AppName, 0); err != nil {
		return xjob.Group{}, err
	}
	out, err := s.cfg.Store.GroupInsert(ctx, g)
	if err != nil {
		return xjob.Group{}, fmt.Errorf("admin group create: %w", err)
	}
	return out, nil
}

// GetGroup returns one group.
func (s *Service) GetGroup(ctx context.Context, id int64) (xjob.Group, error) {
	g, err := s.cfg.Store.GroupGet(ctx, id)
	if err != nil {
		return xjob.Group{}, mapNotFound(err, "group", id, "admin group get")
	}
	return g, nil
}

// ListGroupsParams filters ListGroups by substrings; empty matches every
// group.
type ListGroupsParams struct {
	AppName string
	Title   string
}

// ListGroups returns groups in id order whose app name and title contain
// the filters.
func (s *Service) ListGroups(ctx context.Context, p ListGroupsParams) ([]xjob.Group, error) {
	gs, err := s.cfg.Store.GroupList(ctx, driver.GroupListParams{AppName: p.AppName, Title: p.Title})
	if err != nil {
		return nil, fmt.Errorf("admin group list: %w", err)
	}
	return gs, nil
}

// UpdateGroupParams is the input of UpdateGroup.
type UpdateGroupParams struct {
	// Group holds the new values; Group.ID names the group.
	Group xjob.Group
	// Version, when not 0, must be the stored version (else xjob.ErrConflict).
	Version int64
}

// UpdateGroup replaces a group's app name, title and address settings.
func (s *Service) UpdateGroup(ctx context.Context, p UpdateGroupParams) (xjob.Group, error) {
	id := p.Group.ID
	old, err := s.cfg.Store.GroupGet(ctx, id)
	if err != nil {
		return xjob.Group{}, mapNotFound(err, "group", id, "admin group read")
	}
	if p.Version != 0 && p.Version != old.Version {
		return xjob.Group{}, staleVersion("group", id, p.Version)
	}
	g := p.Group
	g.Version, g.UpdatedAt = old.Version, s.now()
	if err := s.prepareGroup(ctx, &g); err != nil {
		return xjob.Group{}, err
	}
	if g.AppName != old.AppName {
		if err := s.appNameFree(ctx, g.AppName, id); err != nil {
			return xjob.Group{}, err
		}
	}
	out, err := s.cfg.Store.GroupUpdate(ctx, driver.GroupUpdateParams{Group: g, ExpectVersion: old.Version})
	switch {
	case errors.Is(err, xjob.ErrConflict):
		return xjob.Group{}, staleVersion("group", id, old.Version)
	case err != nil:
		return xjob.Group{}, mapNotFound(err, "group", id, "admin group update")
	}
	return out, nil
}

// appNameFree refuses an app name another group (not id) has: executors,
// apply and export know a group by its app name, so a second group with
// it would be one they cannot tell apart (apply found "no group", export
// listed the name twice). Groups imported with a shared name keep it; only
// a new group, or a renamed one, is checked.
func (s *Service) appNameFree(ctx context.Context, appName string, id int64) error {
	gs, err := s.cfg.Store.GroupList(ctx, driver.GroupListParams{AppName: appName})
	if err != nil {
		return fmt.Errorf("admin group app name: %w", err)
	}
	for _, o := range gs {
		if o.AppName == appName && o.ID != id {
			return invalid("appname", "%q is the app name of group %d already", appName, o.ID)
		}
	}
	return nil
}

// prepareGroup validates g and, for an automatic group, replaces its
// address list with the live executors of its app.
func (s *Service) prepareGroup(ctx context.Context, g *xjob.Group) error {
	if g.AddressType == xjob.AddressAuto {
		g.AddressList = nil // the server's to build: a GET's copy sent back is ignored
	}
	if err := g.Validate(); err != nil {
		return err
	}
	if g.AddressType != xjob.AddressAuto {
		return nil
	}
	live, err := s.liveExecutors(ctx, g.AppName)
	if err != nil {
		return err
	}
	g.AddressList = make([]string, len(live))
	for i, e := range live {
		g.AddressList[i] = e.Address
	}
	return nil
}

// DeleteGroup removes a group. It is refused with xjob.ErrConflict while
// jobs use it, as in xxl-job. (A job created in the group between the check
// and the delete is not prevented; its triggers then fail with "executor
// group does not exist".)
func (s *Service) DeleteGroup(ctx context.Context, id int64) error {
	if _, err := s.GetGroup(ctx, id); err != nil {
		return err
	}
	page, err := s.cfg.Store.JobList(ctx, driver.JobListParams{GroupID: id, Limit: 1})
	if err != nil {
		return fmt.Errorf("admin group delete %d: %w", id, err)
	}
	if len(page.Jobs) > 0 {
		return fmt.Errorf("group %d is used by job %d (and maybe others); delete or move its jobs first: %w",
			id, page.Jobs[0].ID, xjob.ErrConflict)
	}
	if err := s.cfg.Store.GroupDelete(ctx, id); err != nil {
		return mapNotFound(err, "group", id, "admin group delete")
	}
	return nil
}

// Executor is one live executor of a group: its address and last beat.
type Executor struct {
	Address   string `json:"address"`
	UpdatedAt int64  `json:"updateTime"`
}

// GroupExecutors lists the executors registered under the group's app
// name that beat within DeadAfter, sorted by address.
func (s *Service) GroupExecutors(ctx context.Context, id int64) ([]Executor, error) {
	g, err := s.GetGroup(ctx, id)
	if err != nil {
		return nil, err
	}
	return s.liveExecutors(ctx, g.AppName)
}

func (s *Service) liveExecutors(ctx context.Context, appName string) ([]Executor, error) {
	since := s.cfg.Clock.Now().Add(-s.cfg.DeadAfter).UnixMilli()
	entries, err := s.cfg.Store.RegistryList(ctx, driver.RegistryListParams{Key: appName, Since: since})
	if err != nil {
		return nil, fmt.Errorf("admin executors of %s: %w", appName, err)
	}
	out := []Executor{}
	for _, e := range entries {
		if e.Group != xjob.RegistryGroupExecutor || e.Key != appName || e.UpdatedAt < since {
			continue
		}
		if i := slices.IndexFunc(out, func(x Executor) bool { return x.Address == e.Value }); i >= 0 {
			out[i].UpdatedAt = max(out[i].UpdatedAt, e.UpdatedAt)
			continue
		}
		out = append(out, Executor{Address: e.Value, UpdatedAt: e.UpdatedAt})
	}
	slices.SortFunc(out, func(a, b Executor) int { return strings.Compare(a.Address, b.Address) })
	return out, nil
}
