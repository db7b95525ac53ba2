package auth

import (
	"fmt"

	"github.com/xjobdev/xjob"
)

// GluePolicy says who may create and edit GLUE jobs. A GLUE job carries
// its source code (shell, Python, …) to the executor, which runs it: on a
// Java executor a GLUE_SHELL job is a shell on that machine. xxl-job lets
// any user of a group write one; xjob limits it to admins unless told.
type GluePolicy string

// GLUE policies.
const (
	// GlueAdmins: only admins (and the admin token) create GLUE jobs or
	// edit them, source included. The default of a new installation.
	GlueAdmins GluePolicy = "admins"
	// GlueEveryone: any user of the job's group may, as in xxl-job (what an
	// installation imported from xxl-job keeps, unless told otherwise).
	GlueEveryone GluePolicy = "everyone"
	// GlueOff: nobody creates a GLUE job or saves a GLUE source; existing
	// GLUE jobs may only be changed to BEAN or deleted.
	GlueOff GluePolicy = "off"
)

// ParseGluePolicy reads a policy name ("" is GlueAdmins).
func ParseGluePolicy(s string) (GluePolicy, error) {
	switch p := GluePolicy(s); p {
	case "":
		return GlueAdmins, nil
	case GlueAdmins, GlueEveryone, GlueOff:
		return p, nil
	}
	return "", fmt.Errorf("GLUE policy %q: want admins, everyone or off", s)
}

// The refusals of CheckGlue; both are ErrForbidden.
var (
	ErrGlueAdminsOnly = fmt.Errorf("only an admin creates or edits GLUE jobs on this installation: %w", ErrForbidden)
	ErrGlueOff        = fmt.Errorf("GLUE jobs are turned off on this installation: %w", ErrForbidden)
)

// isGlue: source an executor runs. An HTTP job runs no code anywhere (the
// scheduler makes one call, under the egress rule), so the policy leaves it
// to the group's users as a BEAN job.
func isGlue(t xjob.GlueType) bool { return t.Script() }

// CheckGlue reports whether p may save a job whose GLUE type goes from
// old ("" for a new job) to next; ErrForbidden when not. A save that
// touches no GLUE type is always allowed here.
func (s *Service) CheckGlue(p Principal, old, next xjob.GlueType) error {
	if !isGlue(old) && !isGlue(next) {
		return nil
	}
	switch s.cfg.Glue {
	case GlueOff:
		if isGlue(next) {
			return ErrGlueOff
		}
	case GlueAdmins:
		if !p.Admin() {
			return ErrGlueAdminsOnly
		}
	}
	return nil
}

// Glue is the policy in effect.
func (s *Service) Glue() GluePolicy { return s.cfg.Glue }
