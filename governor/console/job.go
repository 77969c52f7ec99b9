package console

import (
	"errors"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"time"

	"github.com/hashicorp/nomad/api"

	"github.com/allot-sh/allot/governor/allotapi"
)

// checkpointPrefix starts every task event of the ckpt driver
// (contract/ckptevent: requested, saved, timed out, not saved, resume).
const checkpointPrefix = "Checkpoint "

// checkpointRow is one checkpoint event of one of the job's allocations.
type checkpointRow struct {
	Time              time.Time
	Alloc, Task, Text string
}

// jobData is the job page.
type jobData struct {
	Namespace, ID string
	// Governed is false when the governor does not govern the job; Why is
	// then empty and Nomad's status is all there is.
	Governed bool
	Why      allotapi.Why
	// NomadStatus is Nomad's own word ("dead" for a held job: the page
	// shows the governor's state first).
	NomadStatus string
	Decisions   []allotapi.Decision
	// LostWork sums the work lost in preemptions of this job.
	LostWork    time.Duration
	Checkpoints []checkpointRow
	// Note says why a part is missing.
	Note string
	// CanRelease offers the release form (Nomad decides on the POST);
	// Released is the flash after one ("audited" or "unaudited").
	CanRelease bool
	Released   string
	// CanRequeue offers the requeue form (requeue.go; the API decides on
	// the POST); Requeued is the flash after one ("audited" or
	// "unaudited").
	CanRequeue bool
	Requeued   string
}

// job serves /ui/jobs/<ns>/<id>. The namespace is checked before anything
// about the job is read: another tenant's job is a 403 page.
func (c *Console) job(w http.ResponseWriter, q *Req) {
	ns, id, ok := jobPath(q.R)
	if !ok {
		c.fail(w, q, http.StatusNotFound, q.L.T("err.notfound"))
		return
	}
	if !q.Caller.CanRead(ns) {
		c.forbidden(w, q)
		return
	}
	d := jobData{Namespace: ns, ID: id}
	err := c.api(q, "/allot/v1/jobs/"+url.PathEscape(ns)+"/"+url.PathEscape(id)+"/why", &d.Why)
	var ae *APIError
	switch {
	case err == nil:
		d.Governed = true
	case errors.As(err, &ae) && ae.Status == http.StatusNotFound:
	default:
		c.apiFail(w, q, err)
		return
	}
	var job api.Job
	if err := c.nomad(q, "/v1/job/"+url.PathEscape(id)+"?namespace="+url.QueryEscape(ns), &job); err == nil && job.Status != nil {
		d.NomadStatus = *job.Status
	} else if !d.Governed {
		c.apiFail(w, q, err)
		return
	}
	c.jobHistory(q, &d)
	d.CanRelease = (d.Governed && (d.Why.State == "queued" || d.Why.State == "admitted")) ||
		d.NomadStatus == "running" || d.NomadStatus == "pending"
	if r := q.R.URL.Query().Get("released"); r == "audited" || r == "unaudited" {
		d.Released = r
	}
	d.CanRequeue = canRequeue(q, &d)
	if r := q.R.URL.Query().Get("requeued"); r == "audited" || r == "unaudited" {
		d.Requeued = r
	}
	c.render(w, q, http.StatusOK, "job", "job.title", "", d)
}

// jobPath splits /ui/jobs/<ns>/<id> on the escaped path, so a job ID may
// hold any character, "/" included.
func jobPath(r *http.Request) (ns, id string, ok bool) {
	return splitJob(strings.TrimPrefix(r.URL.EscapedPath(), Prefix+"jobs/"))
}

// jobHistory adds the job's decisions (as preemptor, requeued job or
// victim), the work it lost, and its allocations' checkpoint events.
func (c *Console) jobHistory(q *Req, d *jobData) {
	var dl allotapi.DecisionList
	if err := c.api(q, "/allot/v1/decisions", &dl); err == nil {
		for _, dec := range dl.Decisions {
			mine := dec.Namespace == d.Namespace && dec.JobID == d.ID
			for _, v := range dec.Victims {
				if v.Namespace == d.Namespace && v.JobID == d.ID {
					mine = true
					d.LostWork += time.Duration(v.LostWorkSeconds * float64(time.Second))
				}
			}
			if mine {
				d.Decisions = append(d.Decisions, dec)
			}
		}
	}
	var allocs []*api.AllocationListStub
	if err := c.nomad(q, "/v1/job/"+url.PathEscape(d.ID)+"/allocations?namespace="+url.QueryEscape(d.Namespace), &allocs); err != nil {
		d.Note = q.L.T("job.noallocs") + ": " + err.Error()
		return
	}
	for _, a := range allocs {
		for task, st := range a.TaskStates {
			if st == nil {
				continue
			}
			for _, ev := range st.Events {
				if ev == nil || !strings.HasPrefix(checkpointText(ev), checkpointPrefix) {
					continue
				}
				d.Checkpoints = append(d.Checkpoints, checkpointRow{Time: time.Unix(0, ev.Time), Alloc: shortID(a.ID),
					Task: task, Text: checkpointText(ev)})
			}
		}
	}
	sort.Slice(d.Checkpoints, func(i, j int) bool { return d.Checkpoints[i].Time.After(d.Checkpoints[j].Time) })
}

// checkpointText is the event's message as the ckpt driver wrote it
// (contract/ckptevent: "Checkpoint saved: <path> step <n> (<duration>)").
func checkpointText(ev *api.TaskEvent) string {
	if ev.DisplayMessage != "" {
		return ev.DisplayMessage
	}
	return ev.Message
}

func shortID(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}
