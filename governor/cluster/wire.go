package cluster

import (
	"encoding/json"
	"fmt"

	"github.com/hashicorp/nomad/api"
)

// The wire types decode Nomad's JSON into api types while stepping over
// the parts the governor never reads: a job's update/migrate/reschedule
// blocks, its tasks' driver config, env, services, templates and
// artifacts; an allocation's embedded copy of its job and its placement
// metrics; an evaluation's per-group failure metrics. A field of the
// outer struct shadows the embedded api field of the same name
// (encoding/json prefers the shallower field), so everything else still
// lands in the api struct. These payloads arrive for every job, on the
// event stream and in proxied submissions, and building the skipped parts
// was most of the cost of reading them.

// skipped is a JSON value the governor does not read: the decoder scans
// over it and builds nothing.
type skipped struct{}

// UnmarshalJSON ignores the value.
func (*skipped) UnmarshalJSON([]byte) error { return nil }

type wireJob struct {
	*api.Job
	TaskGroups []*wireGroup

	Update, Multiregion, Reschedule, Migrate, Payload skipped
	// Spreads and Affinities keep only whether there are any
	// (engine.Job.NoPin).
	Spreads, Affinities presence
}

type wireGroup struct {
	*api.TaskGroup
	Tasks []*wireTask
	// Scaling keeps only its bounds: a group without count runs min.
	Scaling *wireScaling

	Volumes, RestartPolicy, ReschedulePolicy, EphemeralDisk skipped
	Update, Migrate, Networks, Consul                       skipped
	// Spreads and Affinities keep only whether there are any
	// (engine.Job.NoPin).
	Spreads, Affinities presence
	// Services keeps only providers (wire_token.go).
	Services []wireService
}

// wireScaling is what the governor reads of a group's scaling block.
type wireScaling struct {
	Min, Max *int64
}

type wireTask struct {
	*api.Task
	// Vault, Templates and Services keep only whether they are there and
	// the service providers (wire_token.go).
	Vault, Templates presence
	Services         []wireService

	// Affinities keeps only whether there are any (engine.Job.NoPin).
	Affinities presence

	Lifecycle, Config, Env, RestartPolicy, LogConfig skipped
	Artifacts, DispatchPayload, VolumeMounts         skipped
	CSIPluginConfig, ScalingPolicies, Identity       skipped
}

// job returns the decoded api.Job (nil for a JSON null).
func (w *wireJob) job() *api.Job {
	if w == nil {
		return nil
	}
	j := w.Job
	if j == nil {
		j = &api.Job{}
	}
	j.TaskGroups, j.Spreads, j.Affinities = nil, spreadsIf(w.Spreads), affinitiesIf(w.Affinities)
	if w.TaskGroups != nil {
		j.TaskGroups = make([]*api.TaskGroup, 0, len(w.TaskGroups))
	}
	for _, g := range w.TaskGroups {
		if g == nil {
			continue
		}
		tg := g.TaskGroup
		if tg == nil {
			tg = &api.TaskGroup{}
		}
		tg.Tasks, tg.Scaling, tg.Spreads, tg.Affinities = nil, nil, spreadsIf(g.Spreads), affinitiesIf(g.Affinities)
		tg.Services = services(g.Services)
		if g.Scaling != nil {
			tg.Scaling = &api.ScalingPolicy{Min: g.Scaling.Min, Max: g.Scaling.Max}
		}
		if g.Tasks != nil {
			tg.Tasks = make([]*api.Task, 0, len(g.Tasks))
		}
		for _, t := range g.Tasks {
			switch {
			case t == nil:
			case t.Task == nil:
				tg.Tasks = append(tg.Tasks, &api.Task{})
			default:
				t.keepTokenParts()
				t.Task.Affinities = affinitiesIf(t.Affinities)
				tg.Tasks = append(tg.Tasks, t.Task)
			}
		}
		j.TaskGroups = append(j.TaskGroups, tg)
	}
	return j
}

// spreadsIf is a placeholder spread when some were present: the
// governor reads only whether a job spreads.
func spreadsIf(p presence) []*api.Spread {
	if !p {
		return nil
	}
	return []*api.Spread{{}}
}

// affinitiesIf is a placeholder affinity when some were present: the
// governor reads only whether a job states placement preferences.
func affinitiesIf(p presence) []*api.Affinity {
	if !p {
		return nil
	}
	return []*api.Affinity{{}}
}

// DecodeJob decodes a job's JSON with what the governor reads of it (see
// the wire types); the driver config, services, templates and the like
// are left out.
func DecodeJob(data []byte) (*api.Job, error) {
	var w *wireJob
	if err := json.Unmarshal(data, &w); err != nil {
		return nil, fmt.Errorf("decoding job: %w", err)
	}
	if w == nil {
		return nil, fmt.Errorf("decoding job: null")
	}
	return w.job(), nil
}

type wireAlloc struct {
	*api.Allocation

	Job, Metrics, Resources, TaskResources, NetworkStatus, RescheduleTracker skipped
}

func (w *wireAlloc) alloc() *api.Allocation {
	if w == nil {
		return nil
	}
	if w.Allocation == nil {
		return &api.Allocation{}
	}
	return w.Allocation
}

type wireEval struct {
	*api.Evaluation

	RelatedEvals, FailedTGAllocs, ClassEligibility, QueuedAllocations skipped
}

func (w *wireEval) eval() *api.Evaluation {
	if w == nil {
		return nil
	}
	if w.Evaluation == nil {
		return &api.Evaluation{}
	}
	return w.Evaluation
}
