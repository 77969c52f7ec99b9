package cluster

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/hashicorp/nomad/api"
)

// Topics are the event-stream topics the watcher follows, every key and
// every namespace.
var Topics = map[api.Topic][]string{
	api.TopicJob: {"*"}, api.TopicAllocation: {"*"}, api.TopicNode: {"*"},
	api.TopicEvaluation: {"*"}, api.TopicDeployment: {"*"},
}

// Apply applies one frame of the event stream. Frames at or below the
// store's index are applied too (upserts are idempotent), so a stream
// resumed from a listing's index loses nothing.
func (s *Store) Apply(frame *api.Events) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range frame.Events {
		if err := s.applyEvent(&frame.Events[i]); err != nil {
			return fmt.Errorf("applying %s/%s event at index %d: %w", frame.Events[i].Topic, frame.Events[i].Type, frame.Events[i].Index, err)
		}
	}
	if frame.Index > s.index {
		s.index = frame.Index
	}
	s.notify()
	return nil
}

// payload is an event's payload decoded with encoding/json. The api
// package's own Event.Job() decodes with mapstructure, which honours the
// `mapstructure:"memory"` tag of api.Resources and so loses MemoryMB.
type payload struct {
	Job        *api.Job
	Allocation *api.Allocation
	Node       *api.Node
	Evaluation *api.Evaluation
}

func decodePayload(e *api.Event) (*payload, error) {
	raw, err := json.Marshal(e.Payload)
	if err != nil {
		return nil, fmt.Errorf("re-encoding payload: %w", err)
	}
	var p payload
	if err := json.Unmarshal(raw, &p); err != nil {
		return nil, fmt.Errorf("decoding payload: %w", err)
	}
	return &p, nil
}

func (s *Store) applyEvent(e *api.Event) error {
	switch e.Topic {
	case api.TopicJob, api.TopicAllocation, api.TopicNode, api.TopicEvaluation:
	default:
		return nil
	}
	p, err := decodePayload(e)
	if err != nil {
		return err
	}
	switch e.Topic {
	case api.TopicJob:
		if p.Job == nil {
			return orMissing(nil, "job")
		}
		s.putJob(p.Job, true)
	case api.TopicEvaluation:
		// A purge deletes the job without a job event; its deregister
		// evaluation is the only trace, so the watcher checks the job.
		ev := p.Evaluation
		if ev == nil {
			return orMissing(nil, "evaluation")
		}
		if ev.TriggeredBy == "job-deregister" {
			s.verify[ev.Namespace+"/"+ev.JobID] = true
		}
	case api.TopicAllocation:
		if p.Allocation == nil {
			return orMissing(nil, "allocation")
		}
		s.putAlloc(p.Allocation)
	case api.TopicNode:
		if p.Node == nil {
			return orMissing(nil, "node")
		}
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

// lastCheckpoint finds the newest "Checkpoint saved" task event of an
// allocation (ckpt driver contract).
func lastCheckpoint(a *api.Allocation) (time.Time, bool) {
	var last time.Time
	for _, ts := range a.TaskStates {
		if ts == nil {
			continue
		}
		for _, ev := range ts.Events {
			if strings.HasPrefix(ev.DisplayMessage, "Checkpoint saved") || strings.HasPrefix(ev.Message, "Checkpoint saved") {
				if t := time.Unix(0, ev.Time); t.After(last) {
					last = t
				}
			}
		}
	}
	return last, !last.IsZero()
}
