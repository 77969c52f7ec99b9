//go:build e2e

package e2e

import (
	"testing"
	"time"

	"github.com/shoenig/test/must"
)

// TestE2E_HAWriteLogChecker: the failover tests' checker finds what it
// must (no cluster needed): a write of an older term after a newer term's
// first write, a job write without a term, a header that disagrees with
// the sealed meta; and counts admissions.
func TestE2E_HAWriteLogChecker(t *testing.T) {
	at := func(s int) time.Time { return time.Unix(1000, 0).Add(time.Duration(s) * time.Second) }
	w := func(s int, epoch uint64, state string) nomadWrite {
		return nomadWrite{Gov: "g", At: at(s), Method: "PUT", Path: "/v1/jobs", Job: "ha/j", Epoch: epoch, MetaEpoch: epoch,
			State: state, Status: 200}
	}
	cases := map[string]struct {
		log  []nomadWrite
		want int
	}{
		"terms in order":               {log: []nomadWrite{w(1, 5, "admitted"), w(2, 5, "queued"), w(3, 9, "admitted")}},
		"older term after a newer one": {log: []nomadWrite{w(1, 5, "admitted"), w(2, 9, "admitted"), w(3, 5, "queued")}, want: 1},
		"no term":                      {log: []nomadWrite{w(1, 0, "admitted")}, want: 1},
		"header and meta disagree": {log: []nomadWrite{func() nomadWrite {
			x := w(1, 5, "admitted")
			x.MetaEpoch = 4
			return x
		}()}, want: 1},
		"writes that are not job writes are not judged": {log: []nomadWrite{w(1, 9, ""), {At: at(2), Method: "PUT", Path: "/v1/var/x"}}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			must.SliceLen(t, tc.want, fencingViolations(tc.log))
		})
	}
	refused := w(4, 9, "admitted")
	refused.Status = 409
	held := w(2, 9, "queued")
	held.Stop = true
	must.Eq(t, map[string]int{"ha/j": 2}, admissions([]nomadWrite{w(1, 5, "admitted"), held, w(3, 9, "admitted"), refused}))

	// A write its governor gave up on (lease deadline) counts only as the
	// one Nomad stored: same job, admitting, the stored term.
	gaveUp := w(5, 7, "admitted")
	gaveUp.Status, gaveUp.Unanswered = 502, true
	must.MapEmpty(t, admissions([]nomadWrite{gaveUp}), must.Sprint("not an answered admission"))
	must.True(t, unansweredAdmission([]nomadWrite{held, gaveUp}, "ha/j", 7))
	must.False(t, unansweredAdmission([]nomadWrite{gaveUp}, "ha/j", 8), must.Sprint("Nomad holds another term's write"))
	must.False(t, unansweredAdmission([]nomadWrite{gaveUp}, "ha/k", 7), must.Sprint("another job"))
	must.False(t, unansweredAdmission([]nomadWrite{refused}, "ha/j", 9), must.Sprint("answered, refused: not stored"))
	heldGaveUp := w(6, 7, "queued")
	heldGaveUp.Unanswered = true
	must.False(t, unansweredAdmission([]nomadWrite{heldGaveUp}, "ha/j", 7), must.Sprint("a hold admits nothing"))
}
