//go:build e2e

package main

import (
	"fmt"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
	"github.com/shoenig/test/must"

	"github.com/allot-sh/allot/governor/jobmeta"
	"github.com/allot-sh/allot/internal/testcluster"
)

// TestE2E_JobMetaSeal: against a real Nomad 1.6.1, the governor's record
// counts only when the governor sealed it. Jobs written straight to Nomad
// (:4646) with forged meta, or an admitted job scaled there, are governed
// like any direct registration (audit #4, #11).
func TestE2E_JobMetaSeal(t *testing.T) {
	e := newEnv(t)

	t.Run("a job admitted through the proxy is sealed and counts as admitted", func(t *testing.T) {
		out := e.run("team-a", "sealed", "v1", 1)
		must.StrContains(t, out, "admitted")
		e.waitRunning("team-a", "sealed", time.Minute)
		j := e.job("team-a", "sealed")
		must.MapContainsKey(t, j.Meta, jobmeta.Seal)
		e.c.Eventually(30*time.Second, "the governor sees its own admission", func() error {
			if w := e.why("team-a", "sealed"); w.State != "admitted" {
				return fmt.Errorf("state %s: %s", w.State, w.Reason)
			}
			return nil
		})
	})

	t.Run("forged admitted production meta written straight to Nomad is held with the allowed classes", func(t *testing.T) {
		job, err := testcluster.ParseHCL("forged.nomad.hcl", []byte(fmt.Sprintf(jobTmpl, "forged", "team-a", "v1", 1)))
		must.NoError(t, err)
		job.Meta[jobmeta.State] = jobmeta.StateAdmitted
		job.Meta[jobmeta.Class] = "production"
		job.Meta[jobmeta.AdmittedAt] = time.Now().UTC().Format(time.RFC3339)
		job.Meta[jobmeta.Seal] = "v1.1764504000000.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
		job.Priority = pointerTo(90)
		_, _, err = e.c.API.Jobs().Register(job, &api.WriteOptions{Namespace: "team-a"})
		must.NoError(t, err)
		e.waitHeld("team-a", "forged")
		w := e.why("team-a", "forged")
		must.Eq(t, "queued", w.State)
		must.StrContains(t, w.Reason, "may not use", must.Sprintf("why: %+v", w))
		must.StrContains(t, w.Reason, `"production"`)
	})

	t.Run("an admitted job scaled straight to Nomad over the limit is held", func(t *testing.T) {
		_, _, err := e.c.API.Jobs().Scale("sealed", "g", pointerTo(5), "straight to Nomad", false, nil,
			&api.WriteOptions{Namespace: "team-a"})
		must.NoError(t, err)
		e.waitHeld("team-a", "sealed")
		w := e.why("team-a", "sealed")
		must.StrContains(t, w.Reason, "limit")
	})
}
