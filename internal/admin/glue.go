package admin

import (
	"context"
	"fmt"

	"github.com/xjobdev/xjob"
)

// GlueVersions returns a job's saved GLUE versions, newest first, at most
// xjob.MaxGlueVersions of them.
func (s *Service) GlueVersions(ctx context.Context, jobID int64) ([]xjob.GlueVersion, error) {
	vs, err := s.cfg.Store.GlueVersionList(ctx, jobID, xjob.MaxGlueVersions)
	if err != nil {
		return nil, fmt.Errorf("admin job %d: GLUE versions: %w", jobID, err)
	}
	return vs, nil
}

// SaveGlue saves source and remark as the GLUE source of job j (as the
// caller read it), as xxl-job's GLUE editor does: the job is updated like
// UpdateJob (which saves a version when the source changed), and a save
// of the same source with a new remark is a version too.
func (s *Service) SaveGlue(ctx context.Context, j xjob.Job, source, remark string) (xjob.Job, error) {
	if j.GlueType == xjob.GlueBean {
		return xjob.Job{}, invalid("glueType", "BEAN jobs have no GLUE source")
	}
	if !j.GlueType.Script() {
		return xjob.Job{}, invalid("glueType", "an %s job's target is edited with the job, not in the GLUE editor", j.GlueType)
	}
	unchanged := source == j.GlueSource
	j.GlueSource, j.GlueRemark = source, remark
	out, err := s.UpdateJob(ctx, UpdateJobParams{Job: j})
	if err != nil || !unchanged {
		return out, err
	}
	if err := s.cfg.Store.GlueVersionAdd(ctx, xjob.GlueVersion{JobID: out.ID, GlueType: out.GlueType, Source: source,
		Remark: remark, CreatedAt: out.UpdatedAt}, xjob.MaxGlueVersions); err != nil {
		return out, fmt.Errorf("admin job %d: save GLUE version: %w", out.ID, err)
	}
	return out, nil
}
