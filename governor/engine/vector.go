package engine

import (
	"math"
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
// model, by model. The arithmetic saturates and negative amounts count as
// zero, so a huge count can never wrap into a small or negative request
// (audit #6).
// Request is what every allocation of j asks for together (by count; a
// system job's per-node count is not known here).
func Request(j *Job) quota.Vector {
	missing := make([]int, len(j.Groups))
	for i, g := range j.Groups {
		missing[i] = g.Count
	}
	return requestVector(j, missing)
}

func requestVector(j *Job, missing []int) quota.Vector {
	v := quota.Vector{}
	addRequest(v, j, missing)
	return v
}

// addRequest adds to v what requestVector(j, missing) holds.
func addRequest(v quota.Vector, j *Job, missing []int) {
	for i, g := range j.Groups {
		n := int64(missing[i])
		if n <= 0 {
			continue
		}
		addTimes(v, quota.CPU, n, g.CPU)
		addTimes(v, quota.Memory, n, g.MemoryMB)
		for _, d := range g.Devices {
			addTimes(v, deviceNameType(d.Name), n, int64(d.Count))
			if strings.Count(d.Name, "/") == 2 {
				addTimes(v, d.Name, n, int64(d.Count))
			}
		}
	}
}

// withModels is the request of j with device counts taken from where the
// fit placed them (models holds type and model counts).
func withModels(j *Job, missing []int, models quota.Vector) quota.Vector {
	v := quota.Vector{}
	for i, g := range j.Groups {
		n := int64(missing[i])
		if n > 0 {
			addTimes(v, quota.CPU, n, g.CPU)
			addTimes(v, quota.Memory, n, g.MemoryMB)
		}
	}
	v.Add(models)
	return v
}

// maxAmount bounds every amount of a request: far above any cluster's
// capacity (2^40 MHz, MiB or devices), so a request at the bound never
// fits, and low enough that sums of millions of such requests in a
// tenant's usage cannot overflow.
const maxAmount = int64(1) << 40

// addTimes adds n·each to v[r], saturating; negative factors add nothing.
func addTimes(v quota.Vector, r string, n, each int64) {
	v[r] = satAdd64(v[r], satMul(n, each))
}

// satMul multiplies two amounts, saturating at maxAmount; a negative
// factor gives 0.
func satMul(a, b int64) int64 {
	if a <= 0 || b <= 0 {
		return 0
	}
	if a > maxAmount/b {
		return maxAmount
	}
	return min64(a*b, maxAmount)
}

// satAdd64 adds two amounts of a request, saturating at maxAmount.
func satAdd64(a, b int64) int64 {
	return min64(a+min64(b, maxAmount), maxAmount)
}

// satAdd adds two counts, saturating at MaxInt.
func satAdd(a, b int) int {
	if b > 0 && a > math.MaxInt-b {
		return math.MaxInt
	}
	return a + b
}
