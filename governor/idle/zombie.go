package idle

import (
	"sort"
	"time"
)

// DeviceSample is one device's telemetry on one node for one period.
type DeviceSample struct {
	Node      string
	DeviceID  string
	At        time.Time
	Known     bool
	MemoryMiB int64
	Processes int
}

// Zombie is a device with memory held or processes running and no live
// allocation on it (none at all, or only terminal ones).
type Zombie struct {
	Node      string    `json:"node"`
	DeviceID  string    `json:"device_id"`
	Since     time.Time `json:"since"`
	LastSeen  time.Time `json:"last_seen"`
	MemoryMiB int64     `json:"memory_mib"`
	Processes int       `json:"processes"`
	// Count is how many consecutive samples showed it.
	Count int `json:"samples"`
}

// ZombieSamples is how many consecutive samples make a zombie: two, so a
// device an allocation is still releasing is not reported, and an injected
// zombie is reported within two periods.
const ZombieSamples = 2

type deviceKey struct{ node, dev string }

type zombieTracker struct {
	seen map[deviceKey]*Zombie
}

// Zombies applies one period's device samples. live reports whether a
// non-terminal allocation holds a device; memoryMiB is the memory a device
// may hold unused (driver overhead) without being a zombie. It returns the
// zombies reported for the first time this period.
func (d *Detector) Zombies(devs []DeviceSample, live func(node, dev string) bool, memoryMiB int64) []Zombie {
	d.mu.Lock()
	defer d.mu.Unlock()
	now := map[deviceKey]bool{}
	var fresh []Zombie
	for _, s := range devs {
		k := deviceKey{s.Node, s.DeviceID}
		if !s.Known || live(s.Node, s.DeviceID) || (s.MemoryMiB <= memoryMiB && s.Processes == 0) {
			continue
		}
		now[k] = true
		z := d.zombies.seen[k]
		if z == nil {
			z = &Zombie{Node: s.Node, DeviceID: s.DeviceID, Since: s.At}
			d.zombies.seen[k] = z
		}
		z.LastSeen, z.MemoryMiB, z.Processes = s.At, s.MemoryMiB, s.Processes
		z.Count++
		if z.Count == ZombieSamples {
			fresh = append(fresh, *z)
		}
	}
	for k := range d.zombies.seen {
		if !now[k] {
			delete(d.zombies.seen, k)
		}
	}
	return fresh
}

// ZombieList lists the devices reported as zombies, by node and device.
func (d *Detector) ZombieList() []Zombie {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []Zombie
	for _, z := range d.zombies.seen {
		if z.Count >= ZombieSamples {
			out = append(out, *z)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Node != out[j].Node {
			return out[i].Node < out[j].Node
		}
		return out[i].DeviceID < out[j].DeviceID
	})
	return out
}
