package engine

import "math/bits"

// freeBuckets is the number of free-count buckets of a freeIndex: free
// counts 0 … freeBuckets-2 have one each, the last holds every larger
// one (a negative count, a node over-committed by devices that turned
// unhealthy, falls in the first).
const freeBuckets = 17

// freeIndex indexes one node list (all nodes, or one pool's, in the
// order bestFit scans them) by the free counts of the nodes' device
// groups: bucket k holds, as a bitmap of list positions, the nodes with
// a device group whose free count falls in bucket k. bestFit reads a
// single device request's candidates from the buckets of the counts
// that would leave the fewest instances free first, instead of weighing
// every node of a large pool for each allocation.
type freeIndex struct {
	bits [freeBuckets][]uint64
}

// slot is a node's place in one freeIndex.
type slot struct {
	x   *freeIndex
	pos int
}

// bucketOf returns the bucket of a free count.
func bucketOf(free int) int {
	switch {
	case free < 0:
		return 0
	case free >= freeBuckets-1:
		return freeBuckets - 1
	}
	return free
}

// newFreeIndex indexes nodes, recording in each node its slot.
func newFreeIndex(nodes []*freeNode) *freeIndex {
	x := &freeIndex{}
	words := (len(nodes) + 63) / 64
	for k := range x.bits {
		x.bits[k] = make([]uint64, words)
	}
	for i, fn := range nodes {
		fn.slots = append(fn.slots, slot{x, i})
		for _, free := range fn.dev {
			x.bits[bucketOf(free)][i/64] |= 1 << (i % 64)
		}
	}
	return x
}

// inBucket tells whether a device group of fn has a free count in
// bucket k.
func (fn *freeNode) inBucket(k int) bool {
	for _, free := range fn.dev {
		if bucketOf(free) == k {
			return true
		}
	}
	return false
}

// mark sets or clears fn's bit in bucket k of each of its indexes.
func (fn *freeNode) mark(k int) {
	in := fn.inBucket(k)
	for _, s := range fn.slots {
		w, bit := &s.x.bits[k][s.pos/64], uint64(1)<<(s.pos%64)
		if in {
			*w |= bit
		} else {
			*w &^= bit
		}
	}
}

// addDev changes the free count of device group i by n and keeps the
// node's indexes in step. Every change of fn.dev after the indexes are
// built goes through it (or through capacity.reindex).
func (fn *freeNode) addDev(i, n int) {
	old := fn.dev[i]
	fn.dev[i] += n
	if ob, nb := bucketOf(old), bucketOf(fn.dev[i]); ob != nb {
		fn.mark(ob)
		fn.mark(nb)
	}
}

// index builds the indexes of c's node lists from the nodes' free
// counts.
func (c *capacity) index() {
	for _, fn := range c.nodes {
		fn.slots = fn.slots[:0]
	}
	c.allIndex = newFreeIndex(c.nodes)
	c.poolIndex = make(map[string]*freeIndex, len(c.byPool))
	for pool, nodes := range c.byPool {
		c.poolIndex[pool] = newFreeIndex(nodes)
	}
}

// reindex rebuilds the indexes in place after the nodes' free counts
// were overwritten (refill).
func (c *capacity) reindex() {
	for _, x := range c.poolIndex {
		x.zero()
	}
	c.allIndex.zero()
	for _, fn := range c.nodes {
		for _, s := range fn.slots {
			for _, free := range fn.dev {
				s.x.bits[bucketOf(free)][s.pos/64] |= 1 << (s.pos % 64)
			}
		}
	}
}

// zero clears every bucket.
func (x *freeIndex) zero() {
	for k := range x.bits {
		for w := range x.bits[k] {
			x.bits[k][w] = 0
		}
	}
}

// indexOf returns the index of the node list candidates(j) returns.
func (c *capacity) indexOf(j *Job) *freeIndex {
	if p := poolOf(j); p != allPools {
		return c.poolIndex[p]
	}
	return c.allIndex
}

// bestFitIndexed is bestFit for a group of one device request of need
// instances, reading candidates from x bucket by bucket: first the nodes
// with a device group of exactly need free (in list order, the first
// that fits leaving none free wins, as in bestFit's scan), then need+1,
// and so on. A node's slack is at least its bucket's count less need, so
// once every bucket up to the best slack found has been read no unread
// node can fit more tightly; the winner is the scan's (fewest left free,
// then the smaller group, then list order).
func (c *capacity) bestFitIndexed(j *Job, g *Group, need int, nodes []*freeNode, x *freeIndex) int {
	best := fitChoice{i: -1}
	for k := bucketOf(need); k < freeBuckets; k++ {
		for w, word := range x.bits[k] {
			for ; word != 0; word &= word - 1 {
				f, ok := c.weigh(j, g, nodes, w*64+bits.TrailingZeros64(word))
				if !ok {
					continue
				}
				if f.slack == 0 {
					return f.i // the first exact fit in list order: all are in bucket need
				}
				if f.beats(best) {
					best = f
				}
			}
		}
		if best.i >= 0 && best.slack <= k-need {
			return best.i
		}
	}
	return best.i
}
