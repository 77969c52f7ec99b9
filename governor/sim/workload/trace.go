package workload

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// record is a job as written in a JSON-lines trace: times in seconds.
type record struct {
	ID          string  `json:"id"`
	SubmitS     float64 `json:"submit_s"`
	Tenant      string  `json:"tenant"`
	Class       string  `json:"class,omitempty"`
	Pool        string  `json:"pool,omitempty"`
	DurationS   float64 `json:"duration_s"`
	CheckpointS float64 `json:"checkpoint_s,omitempty"`
	Gang        *bool   `json:"gang,omitempty"`
	SavesOnStop bool    `json:"saves_on_stop,omitempty"`
	Groups      []Group `json:"groups"`
}

func seconds(s float64) (time.Duration, error) {
	if math.IsNaN(s) || math.IsInf(s, 0) || math.Abs(s) > 1e9 {
		return 0, fmt.Errorf("%v is not a usable number of seconds", s)
	}
	return time.Duration(s * float64(time.Second)), nil
}

func (r *record) job() (*Job, error) {
	j := &Job{ID: r.ID, Tenant: r.Tenant, Class: r.Class, Pool: r.Pool, Groups: r.Groups, Gang: true, SavesOnStop: r.SavesOnStop}
	if r.Gang != nil {
		j.Gang = *r.Gang
	}
	var err1, err2, err3 error
	j.Submit, err1 = seconds(r.SubmitS)
	j.Duration, err2 = seconds(r.DurationS)
	j.Checkpoint, err3 = seconds(r.CheckpointS)
	if err := errors.Join(err1, err2, err3); err != nil {
		return nil, err
	}
	j.fill()
	return j, j.Validate()
}

// ReadFile reads a trace: JSON lines when the file name ends in .jsonl,
// .ndjson or .json, CSV otherwise. Jobs come back sorted by submit time
// (then ID). Every error names the file and line.
func ReadFile(path string) ([]*Job, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("reading trace: %w", err)
	}
	defer f.Close()
	switch strings.ToLower(filepath.Ext(path)) {
	case ".jsonl", ".ndjson", ".json":
		return ReadJSONL(path, f)
	}
	return ReadCSV(path, f)
}

// ReadJSONL reads one job object per line; blank lines and lines starting
// with # are skipped. name is used in errors.
func ReadJSONL(name string, r io.Reader) ([]*Job, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 4*1024*1024)
	var jobs []*Job
	seen := map[string]int{}
	for line := 1; sc.Scan(); line++ {
		text := bytes.TrimSpace(sc.Bytes())
		if len(text) == 0 || text[0] == '#' {
			continue
		}
		var rec record
		dec := json.NewDecoder(bytes.NewReader(text))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&rec); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", name, line, err)
		}
		j, err := rec.job()
		if err == nil {
			err = unique(seen, j.ID, line)
		}
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", name, line, err)
		}
		jobs = append(jobs, j)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	Sort(jobs)
	return jobs, nil
}

func unique(seen map[string]int, id string, line int) error {
	if prev, ok := seen[id]; ok {
		return fmt.Errorf("job id %q already used on line %d", id, prev)
	}
	seen[id] = line
	return nil
}

// CSVColumns are the columns of a CSV trace; the header row names them in
// any order. id, submit_s, tenant, gpus and duration_s are required.
var CSVColumns = []string{"id", "submit_s", "tenant", "class", "pool", "count", "gpus", "device",
	"cpu_mhz", "memory_mib", "duration_s", "checkpoint_s", "gang", "saves_on_stop"}

var requiredCSV = []string{"id", "submit_s", "tenant", "gpus", "duration_s"}

// ReadCSV reads a CSV trace with a header row (see CSVColumns): one task
// group per job, count allocations of gpus devices each. name is used in
// errors.
func ReadCSV(name string, r io.Reader) ([]*Job, error) {
	cr := csv.NewReader(r)
	cr.Comment = '#'
	cr.TrimLeadingSpace = true
	header, err := cr.Read()
	if err != nil {
		return nil, fmt.Errorf("%s:1: reading the header: %w", name, err)
	}
	col, err := csvHeader(header)
	if err != nil {
		line, _ := cr.FieldPos(0)
		return nil, fmt.Errorf("%s:%d: %w", name, line, err)
	}
	var jobs []*Job
	seen := map[string]int{}
	for {
		row, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		line, _ := cr.FieldPos(0)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		j, err := csvJob(row, col)
		if err == nil {
			err = unique(seen, j.ID, line)
		}
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", name, line, err)
		}
		jobs = append(jobs, j)
	}
	Sort(jobs)
	return jobs, nil
}

func csvHeader(header []string) (map[string]int, error) {
	known := map[string]bool{}
	for _, c := range CSVColumns {
		known[c] = true
	}
	col := map[string]int{}
	for i, h := range header {
		h = strings.TrimSpace(h)
		if !known[h] {
			return nil, fmt.Errorf("unknown column %q (columns: %s)", h, strings.Join(CSVColumns, ","))
		}
		col[h] = i
	}
	for _, c := range requiredCSV {
		if _, ok := col[c]; !ok {
			return nil, fmt.Errorf("missing column %q", c)
		}
	}
	return col, nil
}

func csvJob(row []string, col map[string]int) (*Job, error) {
	get := func(c string) string {
		if i, ok := col[c]; ok && i < len(row) {
			return strings.TrimSpace(row[i])
		}
		return ""
	}
	num := func(c string, def float64) (float64, error) {
		s := get(c)
		if s == "" {
			return def, nil
		}
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return 0, fmt.Errorf("column %s: %q is not a number", c, s)
		}
		return f, nil
	}
	var errs []error
	val := func(c string, def float64) float64 {
		f, err := num(c, def)
		errs = append(errs, err)
		return f
	}
	rec := record{ID: get("id"), Tenant: get("tenant"), Class: get("class"), Pool: get("pool"),
		SubmitS: val("submit_s", 0), DurationS: val("duration_s", 0), CheckpointS: val("checkpoint_s", 0)}
	g := Group{Count: int(val("count", 1)), GPUs: int(val("gpus", 0)), Device: get("device"),
		CPU: int64(val("cpu_mhz", 0)), MemoryMB: int64(val("memory_mib", 0))}
	if s := get("gang"); s != "" {
		b, err := strconv.ParseBool(s)
		errs = append(errs, wrapCol("gang", s, err))
		rec.Gang = &b
	}
	if s := get("saves_on_stop"); s != "" {
		b, err := strconv.ParseBool(s)
		errs = append(errs, wrapCol("saves_on_stop", s, err))
		rec.SavesOnStop = b
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	rec.Groups = []Group{g}
	return rec.job()
}

func wrapCol(c, s string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("column %s: %q is not true or false", c, s)
}

// Sort orders jobs by submit time, then ID.
func Sort(jobs []*Job) {
	sort.SliceStable(jobs, func(a, b int) bool {
		if jobs[a].Submit != jobs[b].Submit {
			return jobs[a].Submit < jobs[b].Submit
		}
		return jobs[a].ID < jobs[b].ID
	})
}

// WriteJSONL writes jobs as JSON lines, readable by ReadJSONL.
func WriteJSONL(w io.Writer, jobs []*Job) error {
	enc := json.NewEncoder(w)
	for _, j := range jobs {
		gang := j.Gang
		rec := record{ID: j.ID, SubmitS: j.Submit.Seconds(), Tenant: j.Tenant, Class: j.Class, Pool: j.Pool,
			DurationS: j.Duration.Seconds(), CheckpointS: j.Checkpoint.Seconds(), Gang: &gang, SavesOnStop: j.SavesOnStop, Groups: j.Groups}
		if err := enc.Encode(rec); err != nil {
			return fmt.Errorf("writing job %s: %w", j.ID, err)
		}
	}
	return nil
}
