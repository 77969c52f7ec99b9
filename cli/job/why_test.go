package job

import (
	"bytes"
	"flag"
	"testing"
	"time"

	"github.com/shoenig/test/must"
	"github.com/urfave/cli/v2"

	"github.com/allot-sh/allot/governor/allotapi"
)

func TestWriteWhy(t *testing.T) {
	var b bytes.Buffer
	c := cli.NewContext(&cli.App{Writer: &b}, flag.NewFlagSet("t", flag.ContinueOnError), nil)
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	w := &allotapi.Why{Namespace: "ml-research", JobID: "train", State: "queued", Class: "high", Position: 2, TenantPosition: 1,
		QueuedAt: now.Add(-90 * time.Second), Reason: "limit: needs 2 gpu",
		Checks: []allotapi.Check{{Name: "class", OK: true, Detail: "class high"}, {Name: "limit", Detail: "needs 2 gpu"}}}
	must.NoError(t, write(c, w, now))
	must.Eq(t, `Job       = train
Namespace = ml-research
State     = queued
Class     = high
Position  = 2 in the queue, 1 in the tenant
Queued At = 2026-01-01T11:58:30Z (1m30s ago)
Reason    = limit: needs 2 gpu

Checks
Check  Result  Detail
class  ok      class high
limit  fail    needs 2 gpu
`, b.String())

	b.Reset()
	must.NoError(t, write(c, &allotapi.Why{Namespace: "ns", JobID: "j", State: "admitted", Class: "standard"}, now))
	must.StrNotContains(t, b.String(), "Position")
	must.StrContains(t, b.String(), "Reason    = -")
}
