package proxy

import "encoding/json"

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
		if json.Unmarshal(data[i:keyEnd], &m.key) != nil {
			return nil, false
		}
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
