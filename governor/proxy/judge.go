package proxy

import (
	"fmt"
	"net/http"
	"sort"
	"strings"

	"github.com/hashicorp/nomad/api"

	"github.com/allot-sh/allot/governor/jobmeta"
	"github.com/allot-sh/allot/governor/quota"
)

// Bounds on what one job may ask for. Nomad accepts far larger numbers
// (a device count is a uint64); the governor refuses them at the door
// rather than count them in arithmetic that could overflow.
const (
	// MaxGroupCount bounds a group's count and its scaling min and max.
	MaxGroupCount = 10000
	// MaxDeviceCount bounds the instances one device request asks for.
	MaxDeviceCount = 1024
	// MaxTaskCPU bounds a task's cpu (MHz) and MaxTaskMemory its memory
	// and memory_max (MiB); MaxTaskCores its cores.
	MaxTaskCPU    = 1 << 24
	MaxTaskMemory = 1 << 24
	MaxTaskCores  = 4096
)

// canonical turns job into what Nomad will store, as Nomad's HTTP agent
// does (ApiJobToStructJob runs api.Job.Canonicalize) after resolving the
// namespace and region: defaults filled in (group count 1 or scaling.min,
// device count 1, cpu 100 and memory 300 for tasks without resources),
// the read-only fields Nomad drops (status, dispatched, parent, indexes,
// submit time) cleared. It refuses jobs whose numbers the governor will
// not count (bounds above) and jobs it cannot read.
func canonical(j *api.Job, ns, region string) (err error) {
	if err := noNulls(j); err != nil {
		return err
	}
	defer func() {
		if v := recover(); v != nil {
			err = badRequest(fmt.Sprintf("the job cannot be read: %v", v))
		}
	}()
	j.Namespace, j.Region = &ns, &region
	j.Status, j.StatusDescription, j.ParentID = nil, nil, nil
	j.Dispatched, j.Stable, j.Version = false, nil, nil
	j.SubmitTime, j.CreateIndex, j.ModifyIndex, j.JobModifyIndex = nil, nil, nil, nil
	j.Canonicalize()
	return bounds(j)
}

// noNulls refuses the JSON nulls in lists that Canonicalize would
// dereference.
func noNulls(j *api.Job) error {
	for gi, tg := range j.TaskGroups {
		if tg == nil {
			return badRequest(fmt.Sprintf("TaskGroups[%d] is null", gi))
		}
		for ti, t := range tg.Tasks {
			if t == nil {
				return badRequest(fmt.Sprintf("TaskGroups[%d].Tasks[%d] is null", gi, ti))
			}
			if t.Resources == nil {
				continue
			}
			for di, d := range t.Resources.Devices {
				if d == nil {
					return badRequest(fmt.Sprintf("TaskGroups[%d].Tasks[%d].Resources.Devices[%d] is null", gi, ti, di))
				}
			}
		}
	}
	return nil
}

// bounds refuses counts and amounts outside the governor's bounds.
func bounds(j *api.Job) error {
	for _, tg := range j.TaskGroups {
		name := *tg.Name
		if err := within(fmt.Sprintf("group %q count", name), int64(*tg.Count), MaxGroupCount); err != nil {
			return err
		}
		if s := tg.Scaling; s != nil {
			if err := withinPtr(fmt.Sprintf("group %q scaling min", name), s.Min, MaxGroupCount); err != nil {
				return err
			}
			if err := withinPtr(fmt.Sprintf("group %q scaling max", name), s.Max, MaxGroupCount); err != nil {
				return err
			}
		}
		for _, t := range tg.Tasks {
			if err := taskBounds(name, t); err != nil {
				return err
			}
		}
	}
	return nil
}

func taskBounds(group string, t *api.Task) error {
	r := t.Resources
	if r == nil {
		return nil
	}
	what := fmt.Sprintf("group %q task %q ", group, t.Name)
	for _, c := range []struct {
		name string
		v    *int
		max  int64
	}{{"cpu", r.CPU, MaxTaskCPU}, {"cores", r.Cores, MaxTaskCores}, {"memory", r.MemoryMB, MaxTaskMemory}, {"memory_max", r.MemoryMaxMB, MaxTaskMemory}} {
		if c.v == nil {
			continue
		}
		if err := within(what+c.name, int64(*c.v), c.max); err != nil {
			return err
		}
	}
	for _, d := range r.Devices {
		if d.Count != nil && *d.Count > MaxDeviceCount {
			return badRequest(fmt.Sprintf("%sdevice %q count %d is over the governor's bound of %d", what, d.Name, *d.Count, MaxDeviceCount))
		}
	}
	return nil
}

func within(what string, v, max int64) error {
	if v < 0 || v > max {
		return badRequest(fmt.Sprintf("%s %d is outside the governor's bounds [0, %d]", what, v, max))
	}
	return nil
}

func withinPtr(what string, v *int64, max int64) error {
	if v == nil {
		return nil
	}
	return within(what, *v, max)
}

// classOf is the class a job of namespace ns with meta runs at (its
// allot.class, else the tenant's default class) and that class's Nomad
// priority. A class that does not exist or that the tenant may not use
// is refused with the classes it may use.
func (p *Proxy) classOf(ns string, meta map[string]string) (string, int, error) {
	t, _ := p.tenant(ns)
	name := meta[jobmeta.Class]
	if name == "" {
		name = t.DefaultClass
	}
	if name == "" {
		name = quota.DefaultClassName
	}
	classes := p.rec.Config.Classes
	cl, ok := classes[name]
	if ok && t.MayUse(name, cl.Restricted) {
		return name, cl.Priority, nil
	}
	var allowed []string
	for c, def := range classes {
		if t.MayUse(c, def.Restricted) {
			allowed = append(allowed, c)
		}
	}
	sort.Strings(allowed)
	why := "is not a class"
	if ok {
		why = "may not be used by tenant " + ns
	}
	return "", 0, badRequest(fmt.Sprintf("class %s %s; classes tenant %s may use: %s", jobmeta.Quote(name), why, ns, strings.Join(allowed, ", ")))
}

// Judge returns the job a register request would make Nomad store, as the
// proxy judges it (the same decoding, namespace and region resolution,
// canonicalization and bounds as the register route, with the
// governor-owned meta dropped), or why the proxy refuses it. r carries
// the path's query and headers; pathID is the ID in the path ("" for
// /v1/jobs); region is the governor's region ("" = "global"). It reads
// nothing from Nomad (PreserveCounts is not applied) and checks no token:
// for differential tests against what Nomad stores.
func Judge(r *http.Request, body []byte, pathID, region string) (*api.Job, error) {
	p := &Proxy{region: region}
	if p.region == "" {
		p.region = api.GlobalRegion
	}
	sub, err := p.parseSubmission(r, body, pathID, false)
	if err != nil {
		return nil, err
	}
	j := sub.req.Job
	if err := canonical(j, sub.t.Namespace, sub.t.Region); err != nil {
		return nil, err
	}
	j.Meta = jobmeta.StripOwned(j.Meta)
	return j, nil
}
