package testcluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/hashicorp/nomad/api"
	"github.com/hashicorp/nomad/jobspec2"
)

// ParseHCL parses a jobspec with Nomad's own parser, as `nomad job run`
// does. vars are HCL2 variables ("name=value").
func ParseHCL(path string, src []byte, vars ...string) (*api.Job, error) {
	job, err := jobspec2.ParseWithConfig(&jobspec2.ParseConfig{
		Path:     path,
		BaseDir:  filepath.Dir(path),
		Body:     src,
		ArgVars:  vars,
		AllowFS:  true,
		Strict:   true,
		Envs:     os.Environ(),
		VarFiles: nil,
	})
	if err != nil {
		return nil, fmt.Errorf("parsing jobspec %s: %w", path, err)
	}
	return job, nil
}

// RegisterHCLFile parses the jobspec at path and registers it. It returns
// the job as parsed and the registration's evaluation ID.
func (c *Cluster) RegisterHCLFile(path string, vars ...string) (*api.Job, string) {
	c.t.Helper()
	src, err := os.ReadFile(path)
	if err != nil {
		c.t.Fatalf("testcluster: reading jobspec: %v", err)
	}
	return c.RegisterHCL(path, string(src), vars...)
}

// RegisterHCL parses src (named path in errors) and registers the job.
func (c *Cluster) RegisterHCL(path, src string, vars ...string) (*api.Job, string) {
	c.t.Helper()
	job, err := ParseHCL(path, []byte(src), vars...)
	if err != nil {
		c.t.Fatalf("testcluster: %v", err)
	}
	resp, _, err := c.API.Jobs().Register(job, &api.WriteOptions{Namespace: ns(job)})
	if err != nil {
		c.t.Fatalf("testcluster: registering job %s: %v", *job.ID, err)
	}
	return job, resp.EvalID
}

func ns(job *api.Job) string {
	if job.Namespace == nil || *job.Namespace == "" {
		return api.DefaultNamespace
	}
	return *job.Namespace
}

// TaskEvents returns the events of one task of an allocation.
func (c *Cluster) TaskEvents(allocID, task string) []*api.TaskEvent {
	c.t.Helper()
	alloc, _, err := c.API.Allocations().Info(allocID, nil)
	if err != nil {
		c.t.Fatalf("testcluster: reading alloc %s: %v", allocID, err)
	}
	state := alloc.TaskStates[task]
	if state == nil {
		return nil
	}
	return state.Events
}

// TaskLogs returns the whole stdout or stderr ("stdout"/"stderr") of a task.
func (c *Cluster) TaskLogs(allocID, task, stream string) string {
	c.t.Helper()
	alloc, _, err := c.API.Allocations().Info(allocID, nil)
	if err != nil {
		c.t.Fatalf("testcluster: reading alloc %s: %v", allocID, err)
	}
	cancel := make(chan struct{})
	defer close(cancel)
	frames, errCh := c.API.AllocFS().Logs(alloc, false, task, stream, "start", 0, cancel, nil)
	var b strings.Builder
	for {
		select {
		case f, ok := <-frames:
			if !ok {
				return b.String()
			}
			b.Write(f.Data)
		case err := <-errCh:
			if err != nil && !errors.Is(err, io.EOF) {
				c.t.Fatalf("testcluster: reading %s logs of %s: %v", stream, allocID, err)
			}
			return b.String()
		}
	}
}

// EnablePreemption turns on Nomad's scheduler preemption for batch,
// service and sysbatch jobs (system jobs always preempt).
func (c *Cluster) EnablePreemption() {
	c.t.Helper()
	cfg, _, err := c.API.Operator().SchedulerGetConfiguration(nil)
	if err != nil {
		c.t.Fatalf("testcluster: reading scheduler config: %v", err)
	}
	sc := cfg.SchedulerConfig
	sc.PreemptionConfig.BatchSchedulerEnabled = true
	sc.PreemptionConfig.ServiceSchedulerEnabled = true
	sc.PreemptionConfig.SysBatchSchedulerEnabled = true
	sc.PreemptionConfig.SystemSchedulerEnabled = true
	if _, _, err := c.API.Operator().SchedulerSetConfiguration(sc, nil); err != nil {
		c.t.Fatalf("testcluster: enabling preemption: %v", err)
	}
}

// RestartClient stops a client agent gracefully (its tasks keep running),
// starts it again with the same config, ports and data dir, and waits until
// its node is ready again.
func (c *Cluster) RestartClient(cl *Client) {
	c.t.Helper()
	c.StopClient(cl)
	c.StartClient(cl)
}

// StopClient stops a client agent gracefully; its tasks keep running.
func (c *Cluster) StopClient(cl *Client) {
	c.t.Helper()
	if err := cl.Stop(30 * time.Second); err != nil {
		c.t.Fatalf("testcluster: stopping %s: %v", cl.Name(), err)
	}
}

// StartClient starts a stopped client agent again on its old ports and data
// dir, and waits until its node is ready.
func (c *Cluster) StartClient(cl *Client) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := cl.Start(ctx, false); err != nil {
		c.t.Fatalf("testcluster: starting %s: %v", cl.Name(), err)
	}
	oldID := cl.NodeID
	if err := c.waitClientReady(ctx, cl); err != nil {
		c.t.Fatalf("testcluster: %v", err)
	}
	if oldID != "" && cl.NodeID != oldID {
		c.t.Fatalf("testcluster: client %s came back as node %s, was %s", cl.Name(), cl.NodeID, oldID)
	}
}
