package sim

import "time"

type eventKind int

// Events at the same time run in this order: ends free capacity before
// submissions and cycles see it; samples come last.
const (
	evFinish eventKind = iota
	evRelease
	evStart
	evSubmit
	evCycle
	evSample
)

type event struct {
	t    time.Duration
	kind eventKind
	job  *jobRun
	// alloc is the stopping allocation a release event frees.
	alloc *alloc
	// seq is the job's finishSeq for finish events and its startSeq for
	// start events (stale ones are ignored); seq2 orders events deterministically.
	seq, seq2 int
}

// eventHeap implements heap.Interface over events, earliest first.
type eventHeap []event

func (h eventHeap) Len() int { return len(h) }
func (h eventHeap) Less(a, b int) bool {
	if h[a].t != h[b].t {
		return h[a].t < h[b].t
	}
	if h[a].kind != h[b].kind {
		return h[a].kind < h[b].kind
	}
	return h[a].seq2 < h[b].seq2
}
func (h eventHeap) Swap(a, b int) { h[a], h[b] = h[b], h[a] }
func (h *eventHeap) Push(x any)   { *h = append(*h, x.(event)) }
func (h *eventHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}
