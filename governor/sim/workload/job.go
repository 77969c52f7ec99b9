// Package workload describes the jobs a simulation replays: a seeded
// generator whose distributions follow published GPU-cluster trace studies,
// and readers and writers for traces in CSV or JSON lines.
package workload

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"time"
)

// DefaultDevice is the device request of groups that name none.
const DefaultDevice = "nvidia/gpu"

// Job is one submitted batch job.
type Job struct {
	ID string `json:"id"`
	// Submit is the submission time as an offset from the start of the trace.
	Submit time.Duration `json:"-"`
	Tenant string        `json:"tenant"`
	// Class is the job's allot.class; empty means the tenant's default.
	Class string `json:"class,omitempty"`
	// Pool is the Nomad node pool; empty means "default".
	Pool   string  `json:"pool,omitempty"`
	Groups []Group `json:"groups"`
	// Duration is the work the job does once all its allocations run.
	Duration time.Duration `json:"-"`
	// Checkpoint is how often the job saves a checkpoint; 0 means never
	// (a preempted job then restarts from scratch).
	Checkpoint time.Duration `json:"-"`
	// Gang asks for all allocations to be admitted together (allot.gang).
	Gang bool `json:"gang"`
	// MaxRuntime is the job's allot.max-runtime (0: none set).
	MaxRuntime time.Duration `json:"-"`
	// SavesOnStop: the job runs under the ckpt driver, which asks it to
	// checkpoint before each stop; a preemption then loses none of its
	// work (the engine's Group.SavesOnStop).
	SavesOnStop bool `json:"saves_on_stop,omitempty"`
}

// Group is one task group: Count allocations, each with GPUs devices of
// Device plus CPU (MHz) and memory (MiB).
type Group struct {
	Name     string `json:"name,omitempty"`
	Count    int    `json:"count"`
	GPUs     int    `json:"gpus"`
	Device   string `json:"device,omitempty"`
	CPU      int64  `json:"cpu_mhz"`
	MemoryMB int64  `json:"memory_mib"`
}

// GPUs returns the devices the whole job asks for.
func (j *Job) GPUs() int {
	n := 0
	for _, g := range j.Groups {
		n += g.Count * g.GPUs
	}
	return n
}

// Allocs returns the number of allocations of the job.
func (j *Job) Allocs() int {
	n := 0
	for _, g := range j.Groups {
		n += g.Count
	}
	return n
}

// Validate reports the first problem of a job, naming the field.
func (j *Job) Validate() error {
	switch {
	case j.ID == "":
		return errors.New("id is empty")
	case j.Tenant == "":
		return errors.New("tenant is empty")
	case j.Submit < 0:
		return fmt.Errorf("submit time %v is negative", j.Submit)
	case j.Duration <= 0:
		return fmt.Errorf("duration %v must be > 0", j.Duration)
	case j.Checkpoint < 0:
		return fmt.Errorf("checkpoint interval %v is negative", j.Checkpoint)
	case len(j.Groups) == 0:
		return errors.New("job has no groups")
	}
	for i, g := range j.Groups {
		if g.Count < 1 || g.GPUs < 0 || g.CPU < 0 || g.MemoryMB < 0 {
			return fmt.Errorf("group %d: count must be ≥ 1 and gpus, cpu_mhz, memory_mib ≥ 0", i)
		}
	}
	return nil
}

// fill sets defaults: group names and devices.
func (j *Job) fill() {
	for i := range j.Groups {
		g := &j.Groups[i]
		if g.Name == "" {
			g.Name = fmt.Sprintf("g%d", i)
		}
		if g.Device == "" && g.GPUs > 0 {
			g.Device = DefaultDevice
		}
	}
}

// MarkSavesOnStop marks a share of jobs (0–1) as running under the ckpt
// driver (Job.SavesOnStop), chosen by a hash of seed and job ID: the same
// jobs for every policy, and the generator's random stream untouched, so
// a workload differs only in how its jobs stop. Jobs already marked stay
// marked.
func MarkSavesOnStop(jobs []*Job, share float64, seed int64) {
	for _, j := range jobs {
		h := sha256.Sum256([]byte(fmt.Sprintf("%d/%s", seed, j.ID)))
		if float64(binary.BigEndian.Uint64(h[:8])>>11)/(1<<53) < share {
			j.SavesOnStop = true
		}
	}
}
