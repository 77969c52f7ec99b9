package proxy

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/hashicorp/nomad/api"
)

// member is one member of a JSON object: its key, unquoted, and where the
// member starts (the key's opening quote), where its value starts and
// where it ends.
type member struct {
	key               string
	start, value, end int
}

// objectMembers lists the members of the JSON object in data without
// decoding their values, so the proxy can rewrite a few of them and pass
// every other byte on unchanged. data must be valid JSON (json.Valid); ok
// is false when it is not an object.
func objectMembers(data []byte) ([]member, bool) {
	i := skipSpace(data, 0)
	if i >= len(data) || data[i] != '{' {
		return nil, false
	}
	var out []member
	for i++; ; i++ {
		i = skipSpace(data, i)
		if i < len(data) && data[i] == '}' && len(out) == 0 {
			return out, true
		}
		if i >= len(data) || data[i] != '"' {
			return nil, false
		}
		m := member{start: i}
		keyEnd := skipString(data, i)
		key, ok := jsonString(data[i:keyEnd])
		if !ok {
			return nil, false
		}
		m.key = key
		i = skipSpace(data, keyEnd)
		if i >= len(data) || data[i] != ':' {
			return nil, false
		}
		m.value = skipSpace(data, i+1)
		m.end = skipValue(data, m.value)
		out = append(out, m)
		i = skipSpace(data, m.end)
		switch {
		case i < len(data) && data[i] == ',':
		case i < len(data) && data[i] == '}':
			return out, true
		default:
			return nil, false
		}
	}
}

// jsonString decodes quoted, a JSON string with its quotes, as
// encoding/json does. One without escapes, control characters or
// invalid UTF-8 is its bytes (encoding/json's own shortcut, without its
// cost per key); any other is decoded by encoding/json.
func jsonString(quoted []byte) (string, bool) {
	if n := len(quoted); n >= 2 && quoted[0] == '"' && quoted[n-1] == '"' && plain(quoted[1:n-1]) {
		return string(quoted[1 : n-1]), true
	}
	var s string
	return s, json.Unmarshal(quoted, &s) == nil
}

// plain tells whether b needs no unquoting: no quote, backslash or
// control character, and valid UTF-8.
func plain(b []byte) bool {
	for i := 0; i < len(b); {
		c := b[i]
		if c == '"' || c == '\\' || c < ' ' {
			return false
		}
		if c < utf8.RuneSelf {
			i++
			continue
		}
		r, size := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && size == 1 {
			return false
		}
		i += size
	}
	return true
}

func skipSpace(data []byte, i int) int {
	for i < len(data) && (data[i] == ' ' || data[i] == '\t' || data[i] == '\n' || data[i] == '\r') {
		i++
	}
	return i
}

// skipString returns the index after the string starting at data[i].
func skipString(data []byte, i int) int {
	for i++; i < len(data); i++ {
		switch data[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return len(data)
}

// skipValue returns the index after the value starting at data[i].
func skipValue(data []byte, i int) int {
	if i >= len(data) {
		return len(data)
	}
	switch data[i] {
	case '"':
		return skipString(data, i)
	case '{', '[':
		depth := 0
		for ; i < len(data); i++ {
			switch data[i] {
			case '"':
				i = skipString(data, i) - 1
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return i + 1
				}
			}
		}
		return len(data)
	}
	for i < len(data) && data[i] != ',' && data[i] != '}' && data[i] != ']' && skipSpace(data, i) == i {
		i++
	}
	return i
}

// rewrite returns the request body to send for job j, in pieces: the
// first JSON value of the body with the Job member's Meta, Stop and
// Priority replaced by j's (a member Nomad would read as one of them, in
// any letter case, is dropped) and every other byte as received. Whatever
// followed the first value, which Nomad ignores, is not sent.
func (s *submission) rewrite(j *api.Job) ([][]byte, error) {
	set := []field{{"Meta", j.Meta}, {"Stop", j.Stop}, {"Priority", j.Priority}}
	job := s.first[s.job.value:s.job.end]
	members, ok := objectMembers(job)
	if !ok {
		return nil, badRequest("the Job member is not a JSON object")
	}
	// Folded once here, not per member and field.
	folded := make([]string, len(set))
	for i, f := range set {
		folded[i] = fold(f.key)
	}
	out := make([][]byte, 0, 2*len(members)+8)
	out = append(out, s.first[:s.job.value], []byte{'{'})
	n := 0
	for _, m := range members {
		if replaced(fold(m.key), folded) {
			continue
		}
		if n++; n > 1 {
			out = append(out, comma)
		}
		out = append(out, job[m.start:m.end])
	}
	for _, f := range set {
		raw, err := json.Marshal(f.val)
		if err != nil {
			return nil, fmt.Errorf("encoding %s: %w", f.key, err)
		}
		if n++; n > 1 {
			out = append(out, comma)
		}
		out = append(out, []byte(`"`+f.key+`":`), raw)
	}
	return append(out, []byte{'}'}, s.first[s.job.end:]), nil
}

var comma = []byte{','}

// field is a member of the job the proxy sets.
type field struct {
	key string
	val any
}

// replaced tells whether Nomad would read a key as one of the fields
// set: key and folded (the fields' names) are folded (fold).
func replaced(key string, folded []string) bool {
	for _, f := range folded {
		if key == f {
			return true
		}
	}
	return false
}

// sameKey tells whether encoding/json, which Nomad decodes with, matches
// JSON key a to struct field b: equal once folded the way encoding/json
// folds names (ASCII letters to upper case, every other rune to the
// smallest rune of its Unicode simple-fold set, so "ſtop" is Stop).
func sameKey(a, b string) bool {
	return fold(a) == fold(b)
}

func fold(s string) string {
	return strings.Map(func(r rune) rune {
		if r < utf8.RuneSelf {
			return unicode.ToUpper(r)
		}
		for {
			r2 := unicode.SimpleFold(r)
			if r2 <= r {
				return r2
			}
			r = r2
		}
	}, s)
}
