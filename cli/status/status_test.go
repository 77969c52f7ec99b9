package status

import (
	"bytes"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/allot-sh/allot/governor/allotapi"
)

func TestWrite(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	a := allotapi.Member{ID: "gov-a", URL: "http://127.0.0.1:4680", Leader: true}
	b := allotapi.Member{ID: "gov-b", URL: "http://127.0.0.1:4681"}
	cases := map[string]struct {
		st   allotapi.Status
		want string
	}{
		"single": {st: allotapi.Status{Ready: true, Reason: "ok"}, want: `Mode  = single governor (no ha block)
Ready = yes (ok)
`},
		"standby": {st: allotapi.Status{HA: true, Member: "gov-b", Term: 7, Leader: &a, Since: now.Add(-90 * time.Second),
			Members: []allotapi.Member{a, b}, Ready: true, Reason: "ok: standby, leader gov-a"},
			want: `Mode        = HA
Answered by = gov-b (standby)
Leader      = gov-a http://127.0.0.1:4680
Term        = 7
Since       = 2026-01-01T11:58:30Z (1m30s ago)
Ready       = yes (ok: standby, leader gov-a)

Member  URL                    Role
gov-a   http://127.0.0.1:4680  leader
gov-b   http://127.0.0.1:4681  standby
`},
		"no leader, no consul": {st: allotapi.Status{HA: true, Member: "gov-b", MembersError: "connection refused",
			Reason: "no leader elected"},
			want: `Mode        = HA
Answered by = gov-b (standby)
Leader      = (none)
Term        = 0
Since       = -
Ready       = no (no leader elected)

Members: cannot be listed: connection refused
`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var buf bytes.Buffer
			must.NoError(t, write(&buf, &tc.st, now))
			must.Eq(t, tc.want, buf.String())
		})
	}
}
