package cli

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/pkg/adminclient"
)

func (a *app) groupCommand() *cobra.Command {
	cmd := parentCommand("group", "Manage executor groups")
	cmd.AddCommand(a.groupCreate(), a.groupList(), a.groupGet(), a.groupUpdate(), a.groupDelete())
	return cmd
}

// groupFlags are a group's fields as flags; only those set are applied.
type groupFlags struct {
	appName, title, addressType string
	addresses                   []string
}

func (f *groupFlags) register(cmd *cobra.Command) {
	fs := cmd.Flags()
	fs.StringVar(&f.appName, "appname", "", "AppName the executors register under (4-64 characters)")
	fs.StringVar(&f.title, "title", "", "title shown to people")
	fs.StringSliceVar(&f.addresses, "address", nil, "executor address(es) of a manual group (makes it manual)")
	fs.StringVar(&f.addressType, "address-type", "", "auto (from executor heartbeats) or manual")
	_ = cmd.RegisterFlagCompletionFunc("address-type", fixedCompletion("auto,manual"))
}

func (f *groupFlags) apply(cmd *cobra.Command, g *xjob.Group) (changed bool, err error) {
	fs := cmd.Flags()
	if fs.Changed("appname") {
		g.AppName, changed = f.appName, true
	}
	if fs.Changed("title") {
		g.Title, changed = f.title, true
	}
	if fs.Changed("address") {
		g.AddressList, g.AddressType, changed = f.addresses, xjob.AddressManual, true
	}
	if fs.Changed("address-type") {
		switch strings.ToLower(f.addressType) {
		case "auto", "automatic", "0":
			g.AddressType = xjob.AddressAuto
			if !fs.Changed("address") {
				g.AddressList = nil
			}
		case "manual", "1":
			g.AddressType = xjob.AddressManual
		default:
			return false, usagef("--address-type must be auto or manual, got %q", f.addressType)
		}
		changed = true
	}
	return changed, nil
}

func (a *app) groupCreate() *cobra.Command {
	var f groupFlags
	cmd := &cobra.Command{
		Use:   "create --appname NAME --title TITLE [--address URL]...",
		Short: "Create an executor group (automatic unless addresses are given)",
		Args:  noArgs,
	}
	f.register(cmd)
	cmd.RunE = a.do(func(ctx context.Context, c *adminclient.Client, _ []string) error {
		var g xjob.Group
		if _, err := f.apply(cmd, &g); err != nil {
			return err
		}
		created, err := c.GroupCreate(ctx, g)
		if err != nil {
			return fmt.Errorf("create group: %w", err)
		}
		return a.emit(created, func(w io.Writer) { a.groupDetail(w, &created) })
	})
	return cmd
}

func (a *app) groupList() *cobra.Command {
	var p adminclient.GroupListParams
	cmd := &cobra.Command{Use: "list [--appname A] [--title T]", Short: "List executor groups", Args: noArgs}
	cmd.Flags().StringVar(&p.AppName, "appname", "", "only groups whose AppName contains this")
	cmd.Flags().StringVar(&p.Title, "title", "", "only groups whose title contains this")
	cmd.RunE = a.do(func(ctx context.Context, c *adminclient.Client, _ []string) error {
		groups, err := c.GroupList(ctx, p)
		if err != nil {
			return fmt.Errorf("list groups: %w", err)
		}
		if groups == nil {
			groups = []xjob.Group{}
		}
		return a.emit(map[string]any{"items": groups}, func(w io.Writer) {
			row(w, "ID", "APPNAME", "TITLE", "TYPE", "ADDRESSES")
			for i := range groups {
				g := &groups[i]
				row(w, itoa(g.ID), g.AppName, oneLine(g.Title, 32), addressTypeText(g.AddressType),
					oneLine(dash(strings.Join(g.AddressList, ",")), 60))
			}
		})
	})
	return cmd
}

func (a *app) groupGet() *cobra.Command {
	cmd := &cobra.Command{Use: "get ID", Short: "Show one executor group", Args: cobra.ExactArgs(1)}
	cmd.RunE = a.doID(func(ctx context.Context, c *adminclient.Client, id int64) error {
		g, err := c.GroupGet(ctx, id)
		if err != nil {
			return fmt.Errorf("get group %d: %w", id, err)
		}
		return a.emit(g, func(w io.Writer) { a.groupDetail(w, &g) })
	})
	return cmd
}

func (a *app) groupUpdate() *cobra.Command {
	var f groupFlags
	cmd := &cobra.Command{
		Use:   "update ID [flags]",
		Short: "Change the fields given as flags; the rest stay as they are",
		Args:  cobra.ExactArgs(1),
	}
	f.register(cmd)
	cmd.RunE = a.doID(func(ctx context.Context, c *adminclient.Client, id int64) error {
		g, err := c.GroupGet(ctx, id)
		if err != nil {
			return fmt.Errorf("read group %d: %w", id, err)
		}
		changed, err := f.apply(cmd, &g)
		if err != nil {
			return err
		}
		if !changed {
			return usagef("nothing to change: give --appname, --title, --address or --address-type")
		}
		if g.AddressType == xjob.AddressAuto {
			// The server builds an automatic group's list from the live
			// executors; sending its last copy back only risks a refusal.
			g.AddressList = nil
		}
		updated, err := c.GroupUpdate(ctx, id, g)
		if err != nil {
			return fmt.Errorf("update group %d: %w", id, err)
		}
		return a.emit(updated, func(w io.Writer) { a.groupDetail(w, &updated) })
	})
	return cmd
}

func (a *app) groupDelete() *cobra.Command {
	return a.deleteCmd("group", "Delete an executor group no job uses", (*adminclient.Client).GroupDelete)
}

func (a *app) groupDetail(w io.Writer, g *xjob.Group) {
	detail(w, []field{
		{"ID", itoa(g.ID)},
		{"AppName", g.AppName},
		{"Title", g.Title},
		{"Type", addressTypeText(g.AddressType)},
		{"Addresses", dash(strings.Join(g.AddressList, "\n\t"))},
		{"Version", itoa(g.Version)},
		{"Updated", a.ms(g.UpdatedAt, detailTime)},
	})
}

func addressTypeText(t xjob.AddressType) string {
	switch t {
	case xjob.AddressAuto:
		return "auto"
	case xjob.AddressManual:
		return "manual"
	}
	return itoa(t)
}

func (a *app) executorCommand() *cobra.Command {
	cmd := parentCommand("executor", "See the executors of a group")
	var group int64
	list := &cobra.Command{Use: "list --group ID", Short: "List the live executors of a group", Args: noArgs}
	list.Flags().Int64Var(&group, "group", 0, "executor group id")
	_ = list.MarkFlagRequired("group")
	list.RunE = a.do(func(ctx context.Context, c *adminclient.Client, _ []string) error {
		if group <= 0 {
			return usagef("--group must be a group id")
		}
		execs, err := c.GroupExecutors(ctx, group)
		if err != nil {
			return fmt.Errorf("list executors of group %d: %w", group, err)
		}
		if execs == nil {
			execs = []adminclient.Executor{}
		}
		now := a.clock.Now()
		return a.emit(map[string]any{"items": execs}, func(w io.Writer) {
			row(w, "ADDRESS", "LAST HEARTBEAT", "AGE")
			for _, e := range execs {
				age := now.Sub(msTime(e.UpdateTime)).Round(1e9)
				row(w, e.Address, a.ms(e.UpdateTime, tableTime), age.String())
			}
		})
	})
	cmd.AddCommand(list)
	return cmd
}
