package proxy

import (
	"encoding/json"
	"fmt"

	"github.com/hashicorp/nomad/api"
)

// The placement pin (issue 14) lives in the task groups' constraints, a
// part of the body the proxy otherwise passes on as received (rewrite
// replaces Meta, Stop and Priority only). When the governor adds its pin
// to an admission or drops the one a user sent back, setConstraints
// replaces the Constraints member of each group of the Job member with
// the judged job's, and leaves every other byte as received.

// setConstraints rewrites s.first so that each task group of its Job
// member carries exactly j's constraints of that group (j is the job
// decoded from s.first, so its groups are the body's, in order).
func (s *submission) setConstraints(j *api.Job) error {
	job := s.first[s.job.value:s.job.end]
	members, ok := objectMembers(job)
	if !ok {
		return badRequest("the Job member is not a JSON object")
	}
	var groups []member
	for _, m := range members {
		if sameKey(m.key, "TaskGroups") {
			groups = append(groups, m)
		}
	}
	switch {
	case len(groups) == 0 && len(j.TaskGroups) == 0:
		return nil
	case len(groups) != 1:
		return badRequest("the Job member must hold exactly one TaskGroups member")
	}
	g := groups[0]
	arr, err := withGroupConstraints(job[g.value:g.end], j.TaskGroups)
	if err != nil {
		return err
	}
	newJob := concat(job[:g.value], arr, job[g.end:])
	s.first = concat(s.first[:s.job.value], newJob, s.first[s.job.end:])
	s.job.end = s.job.value + len(newJob)
	return nil
}

// withGroupConstraints returns the TaskGroups array arr with each
// group's Constraints member (every member Nomad would read as it)
// replaced by tgs[i].Constraints.
func withGroupConstraints(arr []byte, tgs []*api.TaskGroup) ([]byte, error) {
	elems, ok := arrayElements(arr)
	if !ok || len(elems) != len(tgs) {
		return nil, badRequest("the TaskGroups member is not an array of the job's task groups")
	}
	out := []byte{'['}
	for i, e := range elems {
		if i > 0 {
			out = append(out, ',')
		}
		group := arr[e[0]:e[1]]
		members, ok := objectMembers(group)
		if !ok || tgs[i] == nil {
			return nil, badRequest(fmt.Sprintf("task group %d is not a JSON object", i))
		}
		out = append(out, '{')
		n := 0
		for _, m := range members {
			if sameKey(m.key, "Constraints") {
				continue
			}
			if n++; n > 1 {
				out = append(out, ',')
			}
			out = append(out, group[m.start:m.end]...)
		}
		raw, err := json.Marshal(tgs[i].Constraints)
		if err != nil {
			return nil, fmt.Errorf("encoding the constraints of task group %d: %w", i, err)
		}
		if n > 0 {
			out = append(out, ',')
		}
		out = append(append(append(out, `"Constraints":`...), raw...), '}')
	}
	return append(out, ']'), nil
}

// arrayElements lists the [start, end) offsets of the elements of the
// JSON array in data (valid JSON); ok is false when it is not an array.
func arrayElements(data []byte) ([][2]int, bool) {
	i := skipSpace(data, 0)
	if i >= len(data) || data[i] != '[' {
		return nil, false
	}
	var out [][2]int
	for i++; ; i++ {
		i = skipSpace(data, i)
		if i < len(data) && data[i] == ']' && len(out) == 0 {
			return out, true
		}
		if i >= len(data) {
			return nil, false
		}
		end := skipValue(data, i)
		out = append(out, [2]int{i, end})
		i = skipSpace(data, end)
		switch {
		case i < len(data) && data[i] == ',':
		case i < len(data) && data[i] == ']':
			return out, true
		default:
			return nil, false
		}
	}
}

// concat joins parts into a new slice.
func concat(parts ...[]byte) []byte {
	n := 0
	for _, p := range parts {
		n += len(p)
	}
	out := make([]byte, 0, n)
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}
