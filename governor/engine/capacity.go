package engine

import (
	"fmt"
	"path"
	"sort"
	"strconv"
	"strings"

	"github.com/allot-sh/allot/governor/quota"
)

// freeNode is the capacity of one node left free in this cycle.
type freeNode struct {
	node     *Node
	cpu, mem int64
	dev      []int // free instances, parallel to node.Devices
	// ids holds node.Devices' "vendor/type/model", computed once.
	ids []string
	// slots are the node's places in the freeIndex of every node list it
	// is in (all nodes, its pool's); dev changes through addDev once built.
	slots []slot
}

// take is one reservation on a node, kept so a failed gang can be undone.
type take struct {
	fn       *freeNode
	cpu, mem int64
	dev      []devTake
	// group is the index of the task group the allocation belongs to
	// (the pin of an admission is per group, pin.go).
	group int
}

// devTake is a number of instances taken from one device group of a node.
type devTake struct{ idx, n int }

// taken returns how many instances of device group idx tk already holds.
func (tk *take) taken(idx int) int {
	for _, d := range tk.dev {
		if d.idx == idx {
			return d.n
		}
	}
	return 0
}

// capacity is the free-capacity snapshot of a cycle. It only shrinks
// during a cycle, so a job shape that did not fit never fits later in the
// same cycle; failed remembers those shapes.
type capacity struct {
	nodes  []*freeNode
	byID   map[string]*freeNode
	byPool map[string][]*freeNode
	m      *matcher
	failed map[string]string
	// cursor holds, per group shape, the index of the first node of its
	// pool that may still take one more allocation of that shape: capacity
	// only shrinks, so a node that could not take it once never can.
	cursor map[string]int
	// sys caches, per group key, the nodes a system job's group runs on.
	sys map[string][]*freeNode
	// placedOn tells the nodes where group gi of system job j already
	// has an allocation that counts as placed (set by the cycle).
	placedOn func(j *Job, gi int) map[string]bool
	// exclude, while set, holds nodes a fit must not use (a starving
	// head's reservation, reserve.go).
	exclude map[string]bool
	// closed holds nodes no later fit of the cycle may use: a move
	// (move.go) clears them for its head.
	closed map[string]bool
	// allIndex and poolIndex index nodes and byPool by free device
	// counts for bestFit (freeindex.go).
	allIndex  *freeIndex
	poolIndex map[string]*freeIndex
}

// newCapacity builds the free capacity: node capacity minus every live
// or stopping allocation on it (Nomad frees an allocation's resources
// only once its client reports it terminal).
func newCapacity(nodes []*Node, allocs []*Alloc, m *matcher) *capacity {
	c := &capacity{byID: map[string]*freeNode{}, byPool: map[string][]*freeNode{}, m: m, failed: map[string]string{}, cursor: map[string]int{}, sys: map[string][]*freeNode{}}
	for _, n := range nodes {
		fn := &freeNode{node: n, cpu: n.CPU, mem: n.MemoryMB, dev: make([]int, len(n.Devices)), ids: make([]string, len(n.Devices))}
		for i := range n.Devices {
			fn.dev[i], fn.ids[i] = n.Devices[i].Healthy, n.Devices[i].ID()
		}
		c.nodes = append(c.nodes, fn)
	}
	sort.Slice(c.nodes, func(i, j int) bool { return c.nodes[i].node.ID < c.nodes[j].node.ID })
	for _, fn := range c.nodes {
		c.byID[fn.node.ID] = fn
		c.byPool[fn.node.Pool] = append(c.byPool[fn.node.Pool], fn)
	}
	for _, a := range allocs {
		if fn := c.byID[a.NodeID]; fn != nil && a.holds() {
			fn.cpu -= a.CPU
			fn.mem -= a.MemoryMB
			for i, id := range fn.ids {
				fn.dev[i] -= a.Devices[id]
			}
		}
	}
	c.index()
	return c
}

// candidates returns the nodes of the job's pool in a stable order.
func (c *capacity) candidates(j *Job) []*freeNode {
	if p := poolOf(j); p != allPools {
		return c.byPool[p]
	}
	return c.nodes
}

// allPools is the node pool name that selects every node (Nomad's
// built-in "all" pool, which holds no node of its own).
const allPools = "all"

// poolOf returns the node pool a job's allocations may use: its own,
// "default" when it names none, or allPools.
func poolOf(j *Job) string {
	if j.NodePool == "" {
		return "default"
	}
	return j.NodePool
}

// fitResult is the outcome of fitting a whole job (gang).
type fitResult struct {
	ok     bool
	takes  []take
	models quota.Vector // device instances by vendor/type/model
	detail string
}

// fit places every missing allocation of job j (missing[g] per group) on
// the free capacity, all or nothing. On success the capacity is reduced.
func (c *capacity) fit(j *Job, missing []int) fitResult {
	key := shapeKey(j, missing)
	return c.fitKeyed(j, missing, key)
}

// fitKeyed is fit with the job's shape key already computed.
func (c *capacity) fitKeyed(j *Job, missing []int, key string) fitResult {
	if detail, failed := c.failed[key]; failed {
		return fitResult{detail: detail}
	}
	if j.System {
		return c.fitSystem(j, missing, key)
	}
	res := fitResult{ok: true, models: quota.Vector{}}
	nodes, x := c.candidates(j), c.indexOf(j)
	for gi := range j.Groups {
		if missing[gi] <= 0 {
			continue
		}
		g := &j.Groups[gi]
		gkey := groupKey(j, g)
		if c.exclude != nil {
			gkey += "|x"
		}
		first := len(res.takes)
		placed := c.fitGroup(j, g, gkey, missing[gi], nodes, x, &res)
		for k := first; k < len(res.takes); k++ {
			res.takes[k].group = gi
		}
		if placed < missing[gi] {
			c.undo(res.takes)
			res = fitResult{detail: fitDetail(j, g, placed, missing[gi], nodes)}
			c.failed[key] = res.detail
			return res
		}
	}
	return res
}

// fitGroup places up to n allocations of g onto nodes, each on the
// eligible node it fits most tightly (bestFit), and returns how many it
// placed.
func (c *capacity) fitGroup(j *Job, g *Group, key string, n int, nodes []*freeNode, x *freeIndex, res *fitResult) int {
	placed := 0
	for placed < n {
		i := c.bestFit(j, g, key, nodes, x, res.takes)
		if i < 0 {
			break
		}
		fn := nodes[i]
		tk, _ := c.place(fn, g)
		res.takes = append(res.takes, tk)
		for _, dt := range tk.dev {
			d := &fn.node.Devices[dt.idx]
			res.models[fn.ids[dt.idx]] += int64(dt.n)
			res.models[d.Type] += int64(dt.n)
		}
		placed++
	}
	return placed
}

// bestFit returns the index of the node one allocation of g fits most
// tightly: the fewest device instances left free in the device groups it
// takes, then the smallest such groups (a 2-GPU job goes to a 4-GPU node
// before an empty 8-GPU one, which stays whole for a gang), then node
// order; -1 when it fits none. A fit that leaves nothing free ends the
// search. Nodes at the shape's cursor that do not fit, and that the
// job's own takes have not touched, move the cursor. A group of one
// device request is fitted from x, nodes' index by free device counts,
// with the same outcome (bestFitIndexed).
func (c *capacity) bestFit(j *Job, g *Group, key string, nodes []*freeNode, x *freeIndex, takes []take) int {
	if x != nil && len(g.Devices) == 1 && g.Devices[0].Count > 0 {
		return c.bestFitIndexed(j, g, g.Devices[0].Count, nodes, x)
	}
	best := fitChoice{i: -1}
	start := c.cursor[key]
	cursor := start
	for i := start; i < len(nodes); i++ {
		f, ok := c.weigh(j, g, nodes, i)
		if !ok {
			if i == cursor && !touched(takes, nodes[i]) {
				cursor = i + 1
			}
			continue
		}
		if f.beats(best) {
			best = f
		}
		if f.slack == 0 {
			break
		}
	}
	if cursor != start {
		c.cursor[key] = cursor
	}
	return best.i
}

// fitChoice is a node bestFit weighed: its index in the node list, the
// device instances one allocation would leave free in the groups it
// takes there, and the size of those groups.
type fitChoice struct{ i, slack, size int }

// beats tells whether f fits more tightly than b: fewer instances left
// free, then smaller groups, then list order; any node beats none (b.i < 0).
func (f fitChoice) beats(b fitChoice) bool {
	switch {
	case b.i < 0:
		return true
	case f.slack != b.slack:
		return f.slack < b.slack
	case f.size != b.size:
		return f.size < b.size
	}
	return f.i < b.i
}

// weigh tells whether one allocation of g may go to nodes[i] and, when
// it may, how tightly it fits there.
func (c *capacity) weigh(j *Job, g *Group, nodes []*freeNode, i int) (fitChoice, bool) {
	if !c.eligible(nodes[i], j, g) {
		return fitChoice{}, false
	}
	slack, size, ok := c.slack(nodes[i], g)
	return fitChoice{i, slack, size}, ok
}

// slack tells whether one allocation of g fits fn (as place) and, when
// it does, how many device instances it leaves free in the device groups
// it takes and how large those groups are; fn is not changed.
func (c *capacity) slack(fn *freeNode, g *Group) (slack, size int, ok bool) {
	var buf [4]devTake
	tk, ok := c.fitOn(fn, g, buf[:0])
	if !ok {
		return 0, 0, false
	}
	for k, dt := range tk.dev {
		if tk.earlier(k) {
			continue // a group two requests share counts once
		}
		left := fn.dev[dt.idx]
		for _, o := range tk.dev[k:] {
			if o.idx == dt.idx {
				left -= o.n
			}
		}
		slack += left
		size += fn.node.Devices[dt.idx].Healthy
	}
	return slack, size, true
}

// earlier tells whether a take before the k-th names the same device
// group.
func (tk *take) earlier(k int) bool {
	for _, d := range tk.dev[:k] {
		if d.idx == tk.dev[k].idx {
			return true
		}
	}
	return false
}

// touched reports whether takes hold capacity on fn: a node that only
// failed because of the job's own tentative takes may fit later.
func touched(takes []take, fn *freeNode) bool {
	for i := range takes {
		if takes[i].fn == fn {
			return true
		}
	}
	return false
}

// groupKey identifies what decides whether one allocation of g fits a
// node: the job's pool, datacenters and constraints and g's request.
func groupKey(j *Job, g *Group) string {
	b := make([]byte, 0, 96)
	b = append(b, j.NodePool...)
	for _, dc := range j.Datacenters {
		b = append(append(b, '|'), dc...)
	}
	b = appendConstraints(b, j.Constraints)
	b = strconv.AppendInt(append(b, "|g"...), g.CPU, 10)
	b = strconv.AppendInt(append(b, ','), g.MemoryMB, 10)
	b = appendConstraints(b, g.Constraints)
	for _, d := range g.Devices {
		b = append(append(b, "|d"...), d.Name...)
		b = strconv.AppendInt(append(b, 'x'), int64(d.Count), 10)
		b = appendConstraints(b, d.Constraints)
	}
	return string(b)
}

func (c *capacity) eligible(fn *freeNode, j *Job, g *Group) bool {
	n := fn.node
	return n.Ready && !c.exclude[n.ID] && !c.closed[n.ID] && dcMatches(j.Datacenters, n.Datacenter) &&
		c.m.nodeOK(n, j.Constraints) && c.m.nodeOK(n, g.Constraints)
}

// place reserves one allocation of g on fn, if it fits.
func (c *capacity) place(fn *freeNode, g *Group) (take, bool) {
	tk, ok := c.fitOn(fn, g, nil)
	if !ok {
		return take{}, false
	}
	fn.cpu -= tk.cpu
	fn.mem -= tk.mem
	for _, dt := range tk.dev {
		fn.addDev(dt.idx, -dt.n)
	}
	return tk, true
}

// fitOn returns what one allocation of g would take of fn, appending its
// device takes to dev; ok is false when it does not fit. fn is not
// changed.
func (c *capacity) fitOn(fn *freeNode, g *Group, dev []devTake) (take, bool) {
	if fn.cpu < g.CPU || fn.mem < g.MemoryMB || !sane(g) {
		return take{}, false
	}
	tk := take{fn: fn, cpu: g.CPU, mem: g.MemoryMB, dev: dev}
	for _, req := range g.Devices {
		idx := c.deviceFor(fn, req, &tk)
		if idx < 0 {
			return take{}, false
		}
		tk.dev = append(tk.dev, devTake{idx, req.Count})
	}
	return tk, true
}

// deviceFor finds a device group of fn that serves req after the amounts
// already taken by the same allocation; -1 when none does.
func (c *capacity) deviceFor(fn *freeNode, req DeviceRequest, tk *take) int {
	for i := range fn.node.Devices {
		d := &fn.node.Devices[i]
		if fn.dev[i]-tk.taken(i) >= req.Count && DeviceMatches(req.Name, d) && c.m.deviceOK(d, req.Constraints) {
			return i
		}
	}
	return -1
}

// undo gives back the capacity of takes.
func (c *capacity) undo(takes []take) {
	for _, tk := range takes {
		tk.fn.cpu += tk.cpu
		tk.fn.mem += tk.mem
		for _, dt := range tk.dev {
			tk.fn.addDev(dt.idx, dt.n)
		}
	}
}

func dcMatches(patterns []string, dc string) bool {
	if len(patterns) == 0 {
		return true
	}
	for _, p := range patterns {
		if ok, _ := path.Match(p, dc); ok {
			return true
		}
	}
	return false
}

// shapeKey identifies everything fit depends on, so equal shapes share
// the outcome of a failed fit.
func shapeKey(j *Job, missing []int) string {
	return string(appendShape(make([]byte, 0, 128), j, missing))
}

// shapeOf is shapeKey, built in the cycle's buffer and interned: the
// jobs of a queue share a few shapes, so a walk allocates a key per
// shape, not per job.
func (cy *cycle) shapeOf(j *Job, missing []int) string {
	b := appendShape(cy.keyBuf[:0], j, missing)
	cy.keyBuf = b
	if k, ok := cy.shapes[string(b)]; ok {
		return k
	}
	k := string(b)
	cy.shapes[k] = k
	return k
}

// appendShape appends the shape key of j to b. A system job's fit also
// depends on where its allocations already run: its key names the job.
func appendShape(b []byte, j *Job, missing []int) []byte {
	if j.System {
		b = append(append(append(b, "|sys|"...), j.Namespace...), j.ID...)
	}
	b = append(b, j.NodePool...)
	for _, dc := range j.Datacenters {
		b = append(append(b, '|'), dc...)
	}
	b = appendConstraints(b, j.Constraints)
	for i, g := range j.Groups {
		b = append(b, "|g"...)
		b = strconv.AppendInt(b, int64(missing[i]), 10)
		b = append(b, ',')
		b = strconv.AppendInt(b, g.CPU, 10)
		b = append(b, ',')
		b = strconv.AppendInt(b, g.MemoryMB, 10)
		b = appendConstraints(b, g.Constraints)
		for _, d := range g.Devices {
			b = append(append(b, "|d"...), d.Name...)
			b = strconv.AppendInt(append(b, 'x'), int64(d.Count), 10)
			b = appendConstraints(b, d.Constraints)
		}
	}
	return b
}

func appendConstraints(b []byte, cs []Constraint) []byte {
	for _, c := range cs {
		b = append(append(append(append(append(append(b, "|c"...), c.LTarget...), 0), c.Operand...), 0), c.RTarget...)
	}
	return b
}

func fitDetail(j *Job, g *Group, placed, want int, nodes []*freeNode) string {
	return fmt.Sprintf("group %q: only %d of %d allocations (each %s) fit on the free capacity of node pool %s (%d nodes)",
		g.Name, placed, want, groupShape(g), j.Pool(), len(nodes))
}

func groupShape(g *Group) string {
	parts := []string{fmt.Sprintf("cpu %d MHz", g.CPU), fmt.Sprintf("memory %d MiB", g.MemoryMB)}
	for _, d := range g.Devices {
		parts = append(parts, fmt.Sprintf("%d %s", d.Count, d.Name))
	}
	return strings.Join(parts, ", ")
}
