package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/hashicorp/nomad/api"

	"github.com/allot-sh/allot/contract/ckptevent"
)

// Topics are the event-stream topics the watcher follows, every key and
// every namespace.
var Topics = map[api.Topic][]string{
	api.TopicJob: {"*"}, api.TopicAllocation: {"*"}, api.TopicNode: {"*"},
	api.TopicEvaluation: {"*"}, api.TopicDeployment: {"*"},
}

// Frame is one frame of Nomad's event stream, payloads decoded with
// encoding/json straight into api types (no float64 detour, no
// mapstructure tags) in the reader's goroutine, outside the store's lock.
type Frame struct {
	Index  uint64
	Events []Event
	// Err ends a stream: the connection or the decoding failed.
	Err error `json:"-"`
}

// Event is one event of a frame.
type Event struct {
	Topic     api.Topic
	Type      string
	Key       string
	Namespace string
	Index     uint64
	Payload   Payload
}

// Payload is what the store reads of an event's payload: the object of
// the event's topic, decoded with the wire types (the api package's own
// Event.Job() decodes with mapstructure, which honours the
// `mapstructure:"memory"` tag of api.Resources and so loses MemoryMB).
// Payloads of other topics (deployments) are scanned and dropped.
type Payload struct {
	Job        *wireJob
	Allocation *wireAlloc
	Node       *api.Node
	Evaluation *wireEval
}

// heartbeat tells whether the frame is Nomad's empty keep-alive.
func (f *Frame) heartbeat() bool { return f.Index == 0 && len(f.Events) == 0 }

// ReadFrames decodes an NDJSON event stream into out until it ends or ctx
// is done; the last frame sent carries the error that ended it.
func ReadFrames(ctx context.Context, r io.Reader, out chan<- *Frame) {
	dec := json.NewDecoder(r)
	for ctx.Err() == nil {
		f := &Frame{}
		if err := dec.Decode(f); err != nil {
			f = &Frame{Err: err}
		} else if f.heartbeat() {
			continue
		}
		select {
		case out <- f:
		case <-ctx.Done():
			return
		}
		if f.Err != nil {
			return
		}
	}
}

// Apply applies one frame of the event stream. Frames at or below the
// store's index are applied too (upserts are idempotent), so a stream
// resumed from a listing's index loses nothing.
func (s *Store) Apply(frame *Frame) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range frame.Events {
		if err := s.applyEvent(&frame.Events[i]); err != nil {
			return fmt.Errorf("applying %s/%s event at index %d: %w", frame.Events[i].Topic, frame.Events[i].Type, frame.Events[i].Index, err)
		}
	}
	if frame.Index > s.index {
		s.index = frame.Index
		s.releaseWaiters()
	}
	s.maybePrune()
	s.notify()
	return nil
}

func (s *Store) applyEvent(e *Event) error {
	p := &e.Payload
	switch e.Topic {
	case api.TopicJob:
		if p.Job == nil {
			return orMissing(nil, "job")
		}
		s.putJob(p.Job.job(), true)
	case api.TopicEvaluation:
		// A purge deletes the job without a job event; its deregister
		// evaluation is the only trace, so the watcher checks the job.
		ev := p.Evaluation.eval()
		if ev == nil {
			return orMissing(nil, "evaluation")
		}
		if ev.TriggeredBy == "job-deregister" {
			s.deregistered(ev.Namespace+"/"+ev.JobID, ev.JobModifyIndex)
		}
		s.noteEval(ev)
	case api.TopicAllocation:
		if p.Allocation == nil {
			return orMissing(nil, "allocation")
		}
		s.putAlloc(p.Allocation.alloc())
	case api.TopicNode:
		if p.Node == nil {
			return orMissing(nil, "node")
		}
		s.gen++
		if e.Type == "NodeDeregistration" {
			delete(s.nodes, p.Node.ID)
			return nil
		}
		s.nodes[p.Node.ID] = ConvertNode(p.Node)
	}
	return nil
}

func orMissing(err error, what string) error {
	if err != nil {
		return err
	}
	return fmt.Errorf("event without %s payload", what)
}

// LastSaved returns when the newest checkpoint an allocation's tasks saved
// was written, read through the ckpt driver's event contract
// (ckptevent.Parse on the event's message and annotations). A resume event
// names a checkpoint an earlier allocation saved, so it does not count.
func LastSaved(a *api.Allocation) (time.Time, bool) {
	var last time.Time
	for _, ts := range a.TaskStates {
		if ts == nil {
			continue
		}
		for _, ev := range ts.Events {
			if ev == nil {
				continue
			}
			msg := ev.DisplayMessage
			if msg == "" {
				msg = ev.DriverMessage
			}
			cp, ok := ckptevent.Parse(msg, ev.Details)
			if ok && cp.Trigger != ckptevent.TriggerResume && cp.Written.After(last) {
				last = cp.Written
			}
		}
	}
	return last, !last.IsZero()
}
