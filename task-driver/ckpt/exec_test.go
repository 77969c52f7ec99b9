package ckpt

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/hashicorp/nomad/drivers/shared/executor"
	"github.com/hashicorp/nomad/plugins/drivers"
	dproto "github.com/hashicorp/nomad/plugins/drivers/proto"
	"github.com/shoenig/test/must"
)

// streamingExecutor is an executor whose streaming exec replays a script;
// the embedded nil Executor makes any other call panic.
type streamingExecutor struct {
	executor.Executor
	gotCmd []string
	run    func(ctx context.Context, s drivers.ExecTaskStream) error
}

func (e *streamingExecutor) ExecStreaming(ctx context.Context, cmd []string, tty bool, s drivers.ExecTaskStream) error {
	e.gotCmd = cmd
	return e.run(ctx, s)
}

func TestExecAsTaskUser(t *testing.T) {
	t.Run("output and exit code", func(t *testing.T) {
		e := &streamingExecutor{run: func(_ context.Context, s drivers.ExecTaskStream) error {
			must.NoError(t, s.Send(&drivers.ExecTaskStreamingResponseMsg{Stdout: &dproto.ExecTaskStreamingIOOperation{Data: []byte("uid=65534\n")}}))
			must.NoError(t, s.Send(&drivers.ExecTaskStreamingResponseMsg{Stderr: &dproto.ExecTaskStreamingIOOperation{Data: []byte("warn\n")}}))
			return s.Send(&drivers.ExecTaskStreamingResponseMsg{Exited: true, Result: &dproto.ExitResult{ExitCode: 3}})
		}}
		res, err := execAsTaskUser(context.Background(), e, []string{"id", "-u"}, time.Minute)
		must.NoError(t, err)
		must.Eq(t, []string{"id", "-u"}, e.gotCmd)
		must.Eq(t, "uid=65534\nwarn\n", string(res.Stdout))
		must.Eq(t, 3, res.ExitResult.ExitCode)
	})
	t.Run("timeout", func(t *testing.T) {
		e := &streamingExecutor{run: func(ctx context.Context, s drivers.ExecTaskStream) error {
			<-ctx.Done()
			return ctx.Err()
		}}
		_, err := execAsTaskUser(context.Background(), e, []string{"sleep", "1000"}, 10*time.Millisecond)
		must.True(t, errors.Is(err, ErrExecTimeout), must.Sprintf("error %v", err))
	})
	t.Run("no exit result", func(t *testing.T) {
		e := &streamingExecutor{run: func(context.Context, drivers.ExecTaskStream) error { return nil }}
		res, err := execAsTaskUser(context.Background(), e, []string{"true"}, time.Minute)
		must.NoError(t, err)
		must.Error(t, res.ExitResult.Err)
	})
}
