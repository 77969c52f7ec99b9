package jobmeta

import (
	"crypto/sha256"
	"hash"
	"sort"
	"strconv"
	"strings"

	"github.com/hashicorp/nomad/api"
)

// impliedConstraints are the constraints Nomad's servers add to a job on
// register (nomad/job_endpoint_hooks.go, job_endpoint_hook_connect.go in
// v1.6.1). The shape ignores them, so a job judged before Nomad stored it
// and the job as stored have the same shape.
var impliedConstraints = map[string]bool{
	"${attr.vault.version}":           true,
	"${attr.consul.version}":          true,
	"${attr.consul.grpc}":             true,
	"${attr.nomad.version}":           true,
	"${attr.nomad.service_discovery}": true,
}

// Shape is the admission shape of a job: a SHA-256 over everything
// admission depends on, with Nomad's defaults filled in the way Nomad
// fills them (so a canonicalized submission and the stored job agree):
// namespace, ID, type, priority, periodic/parameterized, node pool,
// datacenters, constraints, and per group its count, constraints and per
// task its cpu, cores, memory, memory max, devices (name, count,
// constraints). Job meta is not part of it: the seal covers the allot.*
// keys itself.
//
// The governor's own placement pin (allot.pin, pin.go) is part of the
// shape like any constraint, on purpose: the seal attests the job exactly
// as the governor wrote it, and the pin is what Nomad places it by. Every
// writer removes and adds the pin before it seals, so a pinned job
// verifies as stored (TestPinWriters); leaving the pin out would need the
// record to say which constraint to skip, i.e. trusting the record before
// the seal is checked. A pin edited straight in Nomad is a re-register
// (new SubmitTime: ErrStale) and changes the shape (ErrBadSeal) anyway.
func Shape(j *api.Job) [sha256.Size]byte {
	h := sha256.New()
	w := func(parts ...string) { writeField(h, parts...) }
	w("ns", orDefault(str(j.Namespace), api.DefaultNamespace), "id", str(j.ID))
	w("type", orDefault(str(j.Type), api.JobTypeService), "priority", strconv.Itoa(orInt(j.Priority, api.JobDefaultPriority)))
	w("periodic", strconv.FormatBool(j.IsPeriodic()), "parameterized", strconv.FormatBool(j.IsParameterized()))
	w("pool", orDefault(str(j.NodePool), api.NodePoolDefault))
	dcs := append([]string(nil), j.Datacenters...)
	if len(dcs) == 0 {
		dcs = []string{"*"}
	}
	sort.Strings(dcs)
	w(append([]string{"dcs"}, dcs...)...)
	w(append([]string{"constraints"}, constraintKeys(j.Constraints)...)...)
	groups := append([]*api.TaskGroup(nil), j.TaskGroups...)
	sort.SliceStable(groups, func(a, b int) bool { return str(groups[a].Name) < str(groups[b].Name) })
	for _, tg := range groups {
		shapeGroup(w, tg)
	}
	var out [sha256.Size]byte
	copy(out[:], h.Sum(nil))
	return out
}

func shapeGroup(w func(...string), tg *api.TaskGroup) {
	w("group", str(tg.Name), "count", strconv.Itoa(orInt(tg.Count, 1)))
	w(append([]string{"constraints"}, constraintKeys(tg.Constraints)...)...)
	tasks := append([]*api.Task(nil), tg.Tasks...)
	sort.SliceStable(tasks, func(a, b int) bool { return tasks[a].Name < tasks[b].Name })
	for _, t := range tasks {
		w("task", t.Name)
		w(append([]string{"constraints"}, constraintKeys(t.Constraints)...)...)
		shapeResources(w, t.Resources)
	}
}

// shapeResources writes a task's resources with api.Resources.Canonicalize's
// defaults: cpu 100 unless cores are set, memory 300, device count 1.
func shapeResources(w func(...string), r *api.Resources) {
	if r == nil {
		r = &api.Resources{}
	}
	cores := orInt(r.Cores, 0)
	cpu := 0
	if r.CPU != nil {
		cpu = *r.CPU
	} else if r.Cores == nil {
		cpu = 100
	}
	w("cpu", strconv.Itoa(cpu), "cores", strconv.Itoa(cores),
		"memory", strconv.Itoa(orInt(r.MemoryMB, 300)), "memory_max", strconv.Itoa(orInt(r.MemoryMaxMB, 0)))
	for _, d := range r.Devices {
		count := uint64(1)
		if d.Count != nil {
			count = *d.Count
		}
		w(append([]string{"device", d.Name, strconv.FormatUint(count, 10)}, constraintKeys(d.Constraints)...)...)
	}
}

// constraintKeys renders constraints as sorted strings, without the
// constraints Nomad adds itself.
func constraintKeys(cs []*api.Constraint) []string {
	var out []string
	for _, c := range cs {
		if c == nil || impliedConstraints[c.LTarget] {
			continue
		}
		out = append(out, strconv.Quote(c.LTarget)+" "+strconv.Quote(c.Operand)+" "+strconv.Quote(c.RTarget))
	}
	sort.Strings(out)
	return out
}

// writeField writes parts length-prefixed, so no two field lists encode
// alike.
func writeField(h hash.Hash, parts ...string) {
	n := 8
	for _, p := range parts {
		n += len(p) + 8
	}
	buf := make([]byte, 0, n)
	buf = strconv.AppendInt(buf, int64(len(parts)), 10)
	for _, p := range parts {
		buf = append(buf, ':')
		buf = strconv.AppendInt(buf, int64(len(p)), 10)
		buf = append(append(buf, ':'), p...)
	}
	h.Write(append(buf, '\n'))
}

func str(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func orInt(p *int, def int) int {
	if p == nil {
		return def
	}
	return *p
}

// keysOf lists a map's keys, sorted.
func keysOf(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// allotMeta is the part of meta the seal covers: every key that starts
// with "allot." in any case, except the seal itself.
func allotMeta(meta map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range meta {
		if k != Seal && len(k) >= len(Prefix) && strings.EqualFold(k[:len(Prefix)], Prefix) {
			out[k] = v
		}
	}
	return out
}
