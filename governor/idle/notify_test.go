package idle

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/shoenig/test/must"
)

// TestNoticeQueueOverflow: 10,000 warnings in one period while the sender
// is stuck (a slow Nomad) never block the ladder: the queue keeps
// noticeQueue of them in order, the rest are dropped and logged as one
// line with their count, not one line each.
func TestNoticeQueueOverflow(t *testing.T) {
	var buf bytes.Buffer
	s := NewService(Options{Notifier: &fakeNotifier{got: map[string][]string{}},
		Log: hclog.New(&hclog.LoggerOptions{Output: &buf, Level: hclog.Warn})})
	s.notices = make(chan pendingNotice, noticeQueue) // as Run makes it, with no sender draining it
	const warnings = 10000
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; i < warnings; i++ {
			s.notify(context.Background(), s.o.Log, Candidate{Watch: Watch{AllocID: string(rune('a' + i%26))}}, Warn, ActionCheckpoint)
		}
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("notify blocked on a full queue")
	}
	must.Eq(t, noticeQueue, len(s.notices))
	must.Eq(t, "a", (<-s.notices).c.AllocID, must.Sprint("the oldest notice is sent first"))
	must.Eq(t, warnings-noticeQueue, s.noticesDropped)

	s.logDroppedNotices()
	s.logDroppedNotices() // nothing new dropped: no second line
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	must.Len(t, 1, lines, must.Sprint(buf.String()))
	must.StrContains(t, lines[0], "dropped=8976")
	must.Zero(t, s.noticesDropped)
}
