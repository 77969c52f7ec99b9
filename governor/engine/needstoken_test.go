package engine

import (
	"testing"

	"github.com/shoenig/test/must"
)

// TestAudit19_TokenJobsAreNeverVictims: a job Nomad would refuse to
// re-register without its submitter's Vault/Consul token cannot be
// requeued, so reclaim passes it over and takes the other borrower.
func TestAudit19_TokenJobsAreNeverVictims(t *testing.T) {
	sc := twoTenants().run("a", "vault", "low", "n1", 4, 1).run("a", "plain", "low", "n2", 4, 50).
		queue(gpuJob("b", "boss", "standard", 4))
	sc.jobs[0].NeedsToken = true
	must.Eq(t, []string{"plain<-b/boss"}, victimsOf(Decide(testConfig(), sc.snap())))

	control := twoTenants().run("a", "vault", "low", "n1", 4, 1).run("a", "plain", "low", "n2", 4, 50).
		queue(gpuJob("b", "boss", "standard", 4))
	must.Eq(t, []string{"vault<-b/boss"}, victimsOf(Decide(testConfig(), control.snap())), must.Sprint("control: the cheaper victim"))
}
