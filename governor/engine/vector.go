package engine

import (
	"strings"

	"github.com/allot-sh/allot/governor/quota"
)

// allocVector is what a live allocation holds, by resource.
func allocVector(a *Alloc) quota.Vector {
	v := quota.Vector{quota.CPU: a.CPU, quota.Memory: a.MemoryMB}
	for id, n := range a.Devices {
		v[id] += int64(n)
		if parts := strings.Split(id, "/"); len(parts) == 3 {
			v[parts[1]] += int64(n)
		}
	}
	return v
}

// requestVector is what missing[g] more allocations of each group of j
// need, with devices counted by type and, when the jobspec names the
// model, by model.
func requestVector(j *Job, missing []int) quota.Vector {
	v := quota.Vector{}
	for i, g := range j.Groups {
		n := int64(missing[i])
		if n <= 0 {
			continue
		}
		v[quota.CPU] += n * g.CPU
		v[quota.Memory] += n * g.MemoryMB
		for _, d := range g.Devices {
			v[deviceNameType(d.Name)] += n * int64(d.Count)
			if strings.Count(d.Name, "/") == 2 {
				v[d.Name] += n * int64(d.Count)
			}
		}
	}
	return v
}

// withModels is the request of j with device counts taken from where the
// fit placed them (models holds type and model counts).
func withModels(j *Job, missing []int, models quota.Vector) quota.Vector {
	v := quota.Vector{}
	for i, g := range j.Groups {
		n := int64(missing[i])
		if n > 0 {
			v[quota.CPU] += n * g.CPU
			v[quota.Memory] += n * g.MemoryMB
		}
	}
	v.Add(models)
	return v
}
