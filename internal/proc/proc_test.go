package proc

import (
	"context"
	"errors"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shoenig/test/must"
)

func TestWaitHTTP_FailsFastWhenTheProcessExits(t *testing.T) {
	p, err := Start("/bin/sh", []string{"-c", "echo bye; exit 3"}, nil, filepath.Join(t.TempDir(), "log"))
	must.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err = p.WaitHTTP(ctx, "http://127.0.0.1:1/never")
	must.True(t, errors.Is(err, ErrExited), must.Sprintf("got %v", err))
}

func TestWaitHTTP_ReturnsOnceHealthy(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	must.NoError(t, err)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {})}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })

	p, err := Start("/bin/sleep", []string{"600"}, nil, filepath.Join(t.TempDir(), "log"))
	must.NoError(t, err)
	t.Cleanup(p.Kill)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	must.NoError(t, p.WaitHTTP(ctx, "http://"+l.Addr().String()+"/healthz"))
}

// TestPoll: Poll returns once check succeeds, and a context that ends
// first names what was awaited and check's last error.
func TestPoll(t *testing.T) {
	p, err := Start("/bin/sleep", []string{"600"}, nil, filepath.Join(t.TempDir(), "log"))
	must.NoError(t, err)
	t.Cleanup(p.Kill)
	calls := 0
	must.NoError(t, p.Poll(context.Background(), "three calls", time.Millisecond, func() error {
		if calls++; calls < 3 {
			return errors.New("not yet")
		}
		return nil
	}))
	must.Eq(t, 3, calls)

	ctx, cancel := context.WithCancel(context.Background())
	err = p.Poll(ctx, "a leader", time.Millisecond, func() error { cancel(); return errors.New("no leader yet") })
	must.ErrorIs(t, err, context.Canceled)
	must.EqError(t, err, "waiting for a leader: context canceled: no leader yet")
}

func TestStop_EscalatesToKill(t *testing.T) {
	// The shell ignores SIGTERM, so Stop must fall back to SIGKILL.
	log := filepath.Join(t.TempDir(), "log")
	p, err := Start("/bin/sh", []string{"-c", "trap '' TERM; echo ready; while :; do sleep 1; done"}, nil, log)
	must.NoError(t, err)
	waitForLog(t, log, "ready")
	err = p.Stop(200 * time.Millisecond)
	must.Error(t, err)
	select {
	case <-p.Exited():
	default:
		t.Fatal("process still running after Stop")
	}
}

func waitForLog(t *testing.T, path, want string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if data, _ := os.ReadFile(path); strings.Contains(string(data), want) {
			return
		}
		time.Sleep(10 * time.Millisecond) // poll with a deadline
	}
	t.Fatalf("%q never appeared in %s", want, path)
}
