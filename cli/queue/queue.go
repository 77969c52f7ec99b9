// Package queue implements `allotctl queue`: the jobs the governor holds,
// in admission order, with what they request, how long they have waited
// and why they are not admitted yet.
package queue

import (
	"fmt"
	"time"

	"github.com/hashicorp/nomad/api"
	"github.com/urfave/cli/v2"

	"github.com/allot-sh/allot/cli/internal/cmdutil"
	gapi "github.com/allot-sh/allot/governor/api"
	gq "github.com/allot-sh/allot/governor/quota"
)

// Entry is one queued job with its request (read from Nomad).
type Entry struct {
	gapi.QueueEntry
	// Request is what the whole job asks for: cpu MHz, memory MiB and
	// devices by the names its device blocks use.
	Request gq.Vector
}

// Output is the JSON of `allotctl queue`.
type Output struct {
	// Total is the length of the whole queue, Jobs the entries shown.
	Total int
	Jobs  []Entry
}

// Command returns `queue`.
func Command() *cli.Command {
	return &cli.Command{
		Name:  "queue",
		Usage: "list queued jobs with position, class, request, wait and reason",
		Description: "Lists the jobs the governor holds, in the order it will admit them. With\n" +
			"-namespace (or NOMAD_NAMESPACE) only that tenant's jobs; \"*\" shows all.\n" +
			"  allotctl queue\n  allotctl queue -namespace ml-research",
		Flags:  cmdutil.ReadFlags(),
		Action: action,
	}
}

func action(c *cli.Context) error {
	if _, err := cmdutil.Args(c); err != nil {
		return err
	}
	q, err := cmdutil.Governor(c).Queue(c.Context)
	if err != nil {
		return fmt.Errorf("reading the queue from the governor at %s: %w", cmdutil.GovernorAddress(c), err)
	}
	nc, err := cmdutil.Nomad(c)
	if err != nil {
		return err
	}
	ns := cmdutil.Namespace(c, "*")
	out := Output{Total: q.Total, Jobs: []Entry{}}
	for _, e := range q.Jobs {
		if ns != "*" && e.Namespace != ns {
			continue
		}
		out.Jobs = append(out.Jobs, Entry{QueueEntry: e, Request: request(nc, e.Namespace, e.JobID)})
	}
	if c.Bool(cmdutil.FlagJSON) {
		return cmdutil.JSON(c.App.Writer, out)
	}
	return write(c, out, time.Now())
}

func write(c *cli.Context, out Output, now time.Time) error {
	if len(out.Jobs) == 0 {
		fmt.Fprintf(c.App.Writer, "No queued jobs (%d in the whole queue)\n", out.Total)
		return nil
	}
	rows := make([][]string, 0, len(out.Jobs))
	for _, e := range out.Jobs {
		rows = append(rows, []string{fmt.Sprint(e.Position), fmt.Sprint(e.TenantPosition), e.Namespace, e.JobID,
			e.Class, cmdutil.Compact(e.Request), Wait(now, e.QueuedAt), e.Reason})
	}
	return cmdutil.Table(c.App.Writer, []string{"Position", "In Tenant", "Namespace", "Job", "Class", "Request", "Wait", "Reason"}, rows)
}

// Wait renders how long a job has been queued, to the second.
func Wait(now, since time.Time) string {
	if since.IsZero() {
		return "-"
	}
	d := now.Sub(since)
	if d < 0 {
		d = 0
	}
	return d.Round(time.Second).String()
}

// request reads the job from Nomad and sums its request; nil when the job
// cannot be read.
func request(nc *api.Client, ns, id string) gq.Vector {
	job, _, err := nc.Jobs().Info(id, &api.QueryOptions{Namespace: ns})
	if err != nil {
		return nil
	}
	return Request(job)
}

// Request sums what a job asks for over all its allocations.
func Request(job *api.Job) gq.Vector {
	out := gq.Vector{}
	for _, tg := range job.TaskGroups {
		n := int64(1)
		if tg.Count != nil {
			n = int64(*tg.Count)
		}
		for _, task := range tg.Tasks {
			addTask(out, task.Resources, n)
		}
	}
	return out
}

func addTask(out gq.Vector, r *api.Resources, n int64) {
	if r == nil {
		return
	}
	if r.CPU != nil {
		out[gq.CPU] += int64(*r.CPU) * n
	}
	if r.MemoryMB != nil {
		out[gq.Memory] += int64(*r.MemoryMB) * n
	}
	for _, d := range r.Devices {
		count := int64(1)
		if d.Count != nil {
			count = int64(*d.Count)
		}
		out[d.Name] += count * n
	}
}
