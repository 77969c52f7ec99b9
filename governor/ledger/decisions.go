package ledger

import (
	"context"
	"database/sql"
	"encoding/json"
	"sort"
	"strconv"
	"time"

	"github.com/allot-sh/allot/governor/reconcile"
)

// stateDecisions is the ledger_state key of the newest persisted
// decision's time (Unix nanoseconds).
const stateDecisions = "decision_ns"

// Decision is one governor decision to keep: a preemption, requeue, hold,
// stop or blocked write (reconcile.Record).
type Decision struct {
	Time      time.Time
	Kind      string
	Namespace string
	JobID     string
	Cause     string
	Reason    string
	// Detail is JSON: class, victims and the work they lost, submitter.
	Detail string
}

// FromJournal converts the reconciler's journal records.
func FromJournal(recs []reconcile.Record) []Decision {
	out := make([]Decision, 0, len(recs))
	for _, r := range recs {
		detail, _ := json.Marshal(struct {
			Class       string `json:"class,omitempty"`
			Victims     any    `json:"victims,omitempty"`
			SubmittedBy string `json:"submitted_by,omitempty"`
		}{r.Class, r.Victims, r.SubmittedBy})
		out = append(out, Decision{Time: r.Time, Kind: r.Kind, Namespace: r.Namespace, JobID: r.JobID,
			Cause: r.Cause, Reason: r.Reason, Detail: string(detail)})
	}
	return out
}

// PersistDecisions appends the decisions newer than the last persisted one
// to the audit chain (actor: the governor), moving the decision watermark
// in the same transaction. The journal records every decision of one
// cycle at once, so decisions that share a time are persisted together.
func (d *DB) PersistDecisions(ctx context.Context, ds []Decision) error {
	if len(ds) == 0 {
		return nil
	}
	return d.tx(ctx, func(tx *sql.Tx) error {
		wm, err := d.watermark(ctx, tx, stateDecisions)
		if err != nil {
			return err
		}
		var fresh []Decision
		for _, x := range ds {
			if uint64(x.Time.UnixNano()) > wm {
				fresh = append(fresh, x)
			}
		}
		if len(fresh) == 0 {
			return nil
		}
		sort.SliceStable(fresh, func(i, j int) bool { return fresh[i].Time.Before(fresh[j].Time) })
		entries := make([]Entry, 0, len(fresh))
		for _, x := range fresh {
			entries = append(entries, Entry{Time: x.Time, Kind: KindDecision + x.Kind, Actor: "governor",
				Namespace: x.Namespace, Subject: x.JobID, New: x.Cause, Detail: x.Reason + " " + x.Detail})
		}
		if err := d.appendTx(ctx, tx, entries); err != nil {
			return err
		}
		last := fresh[len(fresh)-1].Time.UnixNano()
		return d.setState(ctx, tx, stateDecisions, strconv.FormatInt(last, 10))
	})
}
