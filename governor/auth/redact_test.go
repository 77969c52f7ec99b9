package auth

import (
	"testing"

	"github.com/shoenig/test/must"
)

// TestAudit27_ReasonsDoNotNameHiddenParties: audit #27. Reasons and
// check details shown to a caller never name a namespace it may not read,
// nor a job in one.
func TestAudit27_ReasonsDoNotNameHiddenParties(t *testing.T) {
	rd := Redactor{hidden: []string{"secret", "a"}}
	cases := map[string]struct{ in, want string }{
		"starving head": {
			in:   "order: waiting behind secret/big job, which has waited 3h0m0s (longer than the starvation timeout 10m0s) and does not fit yet",
			want: "order: waiting behind (hidden), which has waited 3h0m0s (longer than the starvation timeout 10m0s) and does not fit yet"},
		"jobs waiting for capacity": {
			in:   "order: 3 queued jobs of node pool gpu wait for capacity (first secret/big); the next cycle admits in queue order",
			want: "order: 3 queued jobs of node pool gpu wait for capacity (first (hidden)); the next cycle admits in queue order"},
		"victims": {
			in:   "preempting ml/own, secret/x1, secret/x2 (reclaim); admitted once their resources are free",
			want: "preempting ml/own, (hidden), (hidden) (reclaim); admitted once their resources are free"},
		"preemptor and its tenant": {
			in:   "preempted by secret/boss (reclaim): tenant secret reclaims its nominal quota (4 gpu) from tenants above theirs",
			want: "preempted by (hidden) (reclaim): tenant (hidden) reclaims its nominal quota (4 gpu) from tenants above theirs"},
		"own names untouched, prefixes are not names": {
			in:   "tenant ml uses 8 of limit 8; tenant secretive is fine; n/a",
			want: "tenant ml uses 8 of limit 8; tenant secretive is fine; n/a"},
		"undelimited id hides the rest of the text": {
			in:   "something about secret/x-y-z?and more",
			want: "something about (hidden)"},
		"namespace word": {
			in:   "namespace a is not governed",
			want: "namespace (hidden) is not governed"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := rd.Text(tc.in)
			must.Eq(t, tc.want, got)
			must.StrNotContains(t, got, "secret/")
		})
	}
}

func TestRedactorOfCaller(t *testing.T) {
	c, err := CallerFromRules("ml", `namespace "ml" { policy = "read" }`)
	must.NoError(t, err)
	rd := c.Redactor([]string{"ml", "secret"})
	must.Eq(t, "waiting behind (hidden), which has waited", rd.Text("waiting behind secret/x, which has waited"))
	must.Eq(t, "tenant ml uses 1", rd.Text("tenant ml uses 1"))
	must.Eq(t, "secret/x", Unrestricted().Redactor([]string{"secret"}).Text("secret/x"))
}
