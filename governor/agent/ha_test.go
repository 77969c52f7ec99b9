package agent

import (
	"context"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/shoenig/test/must"

	"github.com/allot-sh/allot/governor/config"
)

// TestLeadershipBeforeAnyTerm: a governor that has not won a term (its
// elector never reached Consul) writes nothing, admits nothing, forwards
// nowhere and says so; stepping down is harmless. The behaviour with a
// real Consul is governor/e2e's TestE2E_HAFailover.
func TestLeadershipBeforeAnyTerm(t *testing.T) {
	h := config.Default().HA
	h.Enabled, h.Consul.Address, h.MemberID, h.Advertise = true, "http://127.0.0.1:1", "gov-a", "http://127.0.0.1:4680"
	h.SessionTTL, h.LockDelay = 10*time.Second, time.Second
	l, err := leadershipFor(h, hclog.NewNullLogger())
	must.NoError(t, err)
	_, _, ok := l.Lease()
	must.False(t, ok)
	_, held := l.Hold(1)
	must.False(t, held)
	lead, epoch, _, leader := l.Admitter()
	must.False(t, lead)
	must.Zero(t, epoch)
	must.Nil(t, leader)
	must.Eq(t, "gov-a", l.MemberID())
	st := l.State()
	must.True(t, st.HA)
	must.False(t, st.Leading)
	must.Nil(t, st.Leader)
	l.setRebuilt(1) // a rebuilt term is not a lease
	_, _, ok = l.Lease()
	must.False(t, ok)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	l.stepDown(ctx, hclog.NewNullLogger())
	_, held = l.Hold(1)
	must.False(t, held)
}

func TestHAConfigMapping(t *testing.T) {
	h := config.HA{Consul: config.Consul{Address: "https://c:8501", Token: "t", CACert: "ca", ClientCert: "cert",
		ClientKey: "key", TLSServerName: "consul"}, LockKey: "k", SessionTTL: 12 * time.Second, LockDelay: 2 * time.Second,
		CheckTTL: 3 * time.Second, MemberID: "m", Advertise: "http://a:1"}
	c := haConfig(h)
	must.Eq(t, "https://c:8501", c.Address)
	must.Eq(t, "t", c.Token)
	must.Eq(t, "ca", c.TLS.CAFile)
	must.Eq(t, "cert", c.TLS.CertFile)
	must.Eq(t, "key", c.TLS.KeyFile)
	must.Eq(t, "consul", c.TLS.ServerName)
	must.Eq(t, "k", c.Key)
	must.Eq(t, 12*time.Second, c.SessionTTL)
	must.Eq(t, 2*time.Second, c.LockDelay)
	must.Eq(t, 3*time.Second, c.CheckTTL)
	must.Eq(t, "m", c.MemberID)
	must.Eq(t, "http://a:1", c.AdvertiseURL)
	l, err := leadershipFor(config.HA{}, hclog.NewNullLogger())
	must.NoError(t, err)
	must.Nil(t, l, must.Sprint("no ha block: no election"))
	must.Nil(t, proxyLeadership(nil))
}
