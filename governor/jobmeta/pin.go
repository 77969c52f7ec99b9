package jobmeta

import (
	"encoding/json"
	"sort"
	"strings"

	"github.com/hashicorp/nomad/api"
)

// PinKey is the governor-owned meta key that records the placement pin
// the governor wrote into the job: canonical JSON {"group":"id1,id2"}
// (Record.Pin). It is sealed with the rest of the record, so only a pin
// the governor wrote is ever removed again.
const PinKey = "allot.pin"

// The pin constraint: LTarget, Operand and RTarget = the node IDs the
// engine packed the group onto, comma-separated (Nomad 1.6.1 reads
// set_contains_any's RTarget as a comma list).
const (
	PinTarget  = "${node.unique.id}"
	PinOperand = "set_contains_any"
)

// Pin is a placement pin: per task group name, the RTarget of the
// constraint the governor added to that group (sorted distinct node IDs,
// comma-separated). nil: no pin.
type Pin map[string]string

// NewPin builds the pin of nodes (engine.Decision.Nodes: per group, the
// node IDs the engine's fit packed it onto): IDs sorted and deduplicated,
// groups without IDs (or with an empty name) left out; nil when nothing
// is left. IDs with a comma or blank are dropped: Nomad node IDs are
// UUIDs, and a comma would change the set Nomad reads.
func NewPin(nodes map[string][]string) Pin {
	var out Pin
	for g, ids := range nodes {
		set := map[string]bool{}
		for _, id := range ids {
			if id != "" && strings.TrimSpace(id) == id && !strings.Contains(id, ",") {
				set[id] = true
			}
		}
		if g == "" || len(set) == 0 {
			continue
		}
		list := make([]string, 0, len(set))
		for id := range set {
			list = append(list, id)
		}
		sort.Strings(list)
		if out == nil {
			out = Pin{}
		}
		out[g] = strings.Join(list, ",")
	}
	return out
}

// Nodes returns the node IDs pinned for group g (nil when none).
func (p Pin) Nodes(g string) []string {
	if p[g] == "" {
		return nil
	}
	return strings.Split(p[g], ",")
}

// encode renders the pin as its meta value ("" for no pin). encoding/json
// sorts map keys, so equal pins encode alike.
func (p Pin) encode() string {
	if len(p) == 0 {
		return ""
	}
	b, err := json.Marshal(map[string]string(p))
	if err != nil {
		return ""
	}
	return string(b)
}

// parsePin reads a PinKey value: nil when absent or malformed (a group
// with an empty name or no node IDs makes the whole value malformed).
func parsePin(v string) Pin {
	if v == "" {
		return nil
	}
	var m map[string]string
	if err := json.Unmarshal([]byte(v), &m); err != nil || len(m) == 0 {
		return nil
	}
	for g, ids := range m {
		if g == "" || ids == "" {
			return nil
		}
	}
	return Pin(m)
}

// isPin reports whether c is the pin constraint with RTarget ids.
func isPin(c *api.Constraint, ids string) bool {
	return c != nil && c.LTarget == PinTarget && c.Operand == PinOperand && c.RTarget == ids
}

// RemovePin removes pin from job: in each group the pin names, one
// constraint exactly equal to the governor's (the last such one: the
// governor appends its pin), so a user's own constraints stay, an
// identical-looking one of the user's included when the group holds two.
// Pass only a pin from a verified record (Sealer.Verify of the stored
// job); it reports whether anything was removed.
func RemovePin(job *api.Job, pin Pin) bool {
	removed := false
	for _, tg := range job.TaskGroups {
		if tg == nil || tg.Name == nil || pin[*tg.Name] == "" {
			continue
		}
		for i := len(tg.Constraints) - 1; i >= 0; i-- {
			if isPin(tg.Constraints[i], pin[*tg.Name]) {
				tg.Constraints = append(tg.Constraints[:i:i], tg.Constraints[i+1:]...)
				removed = true
				break
			}
		}
	}
	return removed
}

// addPin appends the pin's constraint to each group of job it names and
// returns the pin actually written (groups job does not have left out).
func addPin(job *api.Job, pin Pin) Pin {
	var out Pin
	for _, tg := range job.TaskGroups {
		if tg == nil || tg.Name == nil || pin[*tg.Name] == "" {
			continue
		}
		if out == nil {
			out = Pin{}
		}
		if _, twice := out[*tg.Name]; twice {
			continue // Nomad refuses duplicate group names; never pin one twice
		}
		tg.Constraints = append(tg.Constraints, &api.Constraint{LTarget: PinTarget, Operand: PinOperand, RTarget: pin[*tg.Name]})
		out[*tg.Name] = pin[*tg.Name]
	}
	return out
}
