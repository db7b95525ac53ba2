package xjob

import (
	"net/url"
	"strconv"
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
		if why := addressProblem(a); why != "" {
			p.add("addressList", "%s", why)
		}
	}
	return p.err()
}

// ValidateAddress checks an executor address: an absolute http(s) URL with
// a host, and nothing a base address has no use for. User-info is refused
// (a password would be stored and logged in clear), and so are a query and
// a fragment (the client appends "run", "beat"…, so a "?" or "#" would turn
// the path into something else), white space and control characters.
func ValidateAddress(a string) error {
	if why := addressProblem(a); why != "" {
		return &ValidationError{Problems: []FieldProblem{{Field: "address", Message: why}}}
	}
	return nil
}

// addressProblem says what is wrong with address a, or "".
func addressProblem(a string) string {
	if len(a) > MaxAddressLen {
		return "longer than 255 bytes"
	}
	shown := strconv.QuoteToASCII(a)
	if strings.IndexFunc(a, func(r rune) bool { return r <= ' ' || r == 0x7f || r > 0x7e }) >= 0 {
		return shown + " contains white space, control or non-ASCII characters"
	}
	u, err := url.Parse(a)
	switch {
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Opaque != "":
		return shown + " is not an http(s) URL"
	case u.User != nil:
		return "an address must not carry user-info (user:password@)"
	case u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || strings.ContainsAny(a, "?#"):
		return shown + " must not have a query or a fragment"
	case u.Port() != "" && !validPort(u.Port()):
		return shown + " has no valid port"
	}
	return ""
}

func validPort(p string) bool {
	n, err := strconv.Atoi(p)
	return err == nil && n >= 1 && n <= 65535
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
	if !validAppNameChars(r.Key) {
		p.add("registryKey", "must be printable ASCII without white space, '<', '>' or commas")
	}
	before := len(p)
	checkLen(&p, "registryValue", r.Value, 1, MaxAddressLen)
	if len(p) == before {
		if why := addressProblem(r.Value); why != "" {
			p.add("registryValue", "%s", why)
		}
	}
	return p.err()
}

// validAppNameChars reports an app name of printable ASCII without white
// space, '<', '>' or commas: it becomes a /metrics label, a log field and
// a console cell, so NUL, invalid UTF-8 and markup are refused.
func validAppNameChars(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c <= ' ' || c >= 0x7f || c == '<' || c == '>' || c == ',' {
			return false
		}
	}
	return true
}
