package xjob

import (
	"net/url"
	"slices"
	"strings"
)

// Group is an executor group (xxl_job_group): the AppName executors register
// under, and the addresses triggers are routed to.
type Group struct {
	ID          int64       `json:"id"`
	AppName     string      `json:"appname"`
	Title       string      `json:"title"`
	AddressType AddressType `json:"addressType"`
	// AddressList is typed by a person for manual groups, and rebuilt from
	// live registry entries (sorted) for automatic ones.
	AddressList []string `json:"addressList"`
	Version     int64    `json:"version"`
	UpdatedAt   int64    `json:"updateTime"`
}

// Group field limits (xxl-job: appname 4–64, title up to 64 since 3.4.0).
const (
	MinAppNameLen = 4
	MaxAppNameLen = 64
	MaxTitleLen   = 64
	MaxAddresses  = 1000
	MaxAddressLen = 255
)

// Validate checks a group as a person submits it.
func (g *Group) Validate() error {
	var p problems
	switch n := len(g.AppName); {
	case n < MinAppNameLen || n > MaxAppNameLen:
		p.add("appname", "must be %d to %d characters", MinAppNameLen, MaxAppNameLen)
	case strings.ContainsAny(g.AppName, "<>, \t\r\n"):
		p.add("appname", "must not contain '<', '>', commas or white space")
	}
	checkLen(&p, "title", g.Title, 1, MaxTitleLen)
	switch g.AddressType {
	case AddressAuto:
	case AddressManual:
		if len(g.AddressList) == 0 {
			p.add("addressList", "a manual group needs at least one address")
		}
	default:
		p.add("addressType", "must be 0 (automatic) or 1 (manual)")
	}
	if len(g.AddressList) > MaxAddresses {
		p.add("addressList", "at most %d addresses", MaxAddresses)
	}
	for _, a := range g.AddressList {
		if err := ValidateAddress(a); err != nil {
			p.add("addressList", "%v", err)
		}
	}
	return p.err()
}

// ValidateAddress checks an executor address: an absolute http(s) URL.
func ValidateAddress(a string) error {
	if len(a) > MaxAddressLen {
		return &ValidationError{Problems: []FieldProblem{{Field: "address", Message: "longer than 255 bytes"}}}
	}
	u, err := url.Parse(a)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return &ValidationError{Problems: []FieldProblem{{Field: "address", Message: a + " is not an http(s) URL"}}}
	}
	return nil
}

// RegistryEntry is one executor heartbeat (xxl_job_registry): executor Value
// (its address) is alive for app Key while UpdatedAt is recent.
type RegistryEntry struct {
	Group     string `json:"registryGroup"`
	Key       string `json:"registryKey"`
	Value     string `json:"registryValue"`
	UpdatedAt int64  `json:"updateTime"`
}

// Validate rejects blank fields, as xxl-job's "Illegal Argument." does.
func (r *RegistryEntry) Validate() error {
	var p problems
	checkLen(&p, "registryGroup", r.Group, 1, 32)
	checkLen(&p, "registryKey", r.Key, 1, MaxAppNameLen)
	checkLen(&p, "registryValue", r.Value, 1, MaxAddressLen)
	return p.err()
}

// LiveAddresses returns the sorted, de-duplicated addresses of entries for
// appName seen at or after since: an automatic group's address list.
func LiveAddresses(entries []RegistryEntry, appName string, since int64) []string {
	var out []string
	for _, e := range entries {
		if e.Group == RegistryGroupExecutor && e.Key == appName && e.UpdatedAt >= since {
			out = append(out, e.Value)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}
