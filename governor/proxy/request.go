package proxy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/hashicorp/nomad/api"

	"github.com/allot-sh/allot/governor/auth"
)

// decodeFirst decodes body the way Nomad 1.6.1's decodeBody does
// (json.NewDecoder(body).Decode: the first JSON value, keys matched
// without regard to case, whatever follows ignored) and returns the bytes
// of that first value: what the proxy judges is what Nomad will read.
func decodeFirst(body []byte, out any) ([]byte, error) {
	if len(bytes.TrimSpace(body)) == 0 {
		return nil, badRequest("Request body is empty")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(out); err != nil {
		return nil, badRequest("decoding the request body as Nomad does: " + err.Error())
	}
	return body[:dec.InputOffset()], nil
}

// writeFields are the members of Nomad's WriteRequest a request body may
// carry and Nomad reads: Region, Namespace, and the token (SecretID in
// the api types, AuthToken in Nomad's structs).
type writeFields struct{ Region, Namespace, Token string }

// nomadWrite mirrors Nomad 1.6.1's structs.WriteRequest as it decodes from
// a body (embedded, its members are top-level keys).
type nomadWrite struct {
	Region, Namespace, AuthToken, IdempotencyToken string
	Forwarded                                      bool
}

func (w nomadWrite) fields() writeFields {
	return writeFields{Region: w.Region, Namespace: w.Namespace, Token: w.AuthToken}
}

func apiWrite(w api.WriteRequest) writeFields {
	return writeFields{Region: w.Region, Namespace: w.Namespace, Token: w.SecretID}
}

// target is where Nomad will apply a write and whose token it checks;
// Accessor is that token's accessor ID once authorized.
type target struct {
	Namespace, Region, Token, Accessor string
	// redact hides, in texts answered to this caller, the namespaces and
	// jobs its token may not read (nil: nothing hidden).
	redact func(string) string
}

// Redact returns text as this caller may read it.
func (t *target) Redact(text string) string {
	if t == nil || t.redact == nil {
		return text
	}
	return t.redact(text)
}

// resolve computes namespace, region and token exactly as Nomad 1.6.1's
// HTTP agent does for every write (namespaceForJob, regionForJob,
// parseWriteRequest, parseToken): the query first, then the body's
// WriteRequest member, then the job's own field; "global" means the
// agent's region. Values that disagree are refused (400), and so is a
// region other than the governor's. Every admission route calls it; the
// job fields are empty where the route carries no job.
func (p *Proxy) resolve(r *http.Request, body writeFields, jobNS, jobRegion string) (target, error) {
	q := r.URL.Query()
	ns, err := agree("namespace", "?namespace=", q.Get("namespace"), "the request's Namespace", body.Namespace, "Job.Namespace", jobNS)
	if err != nil {
		return target{}, err
	}
	if ns == "" {
		ns = api.DefaultNamespace
	}
	region, err := agree("region", "?region=", p.regionOf(q.Get("region")), "the request's Region", p.regionOf(body.Region), "Job.Region", p.regionOf(jobRegion))
	if err != nil {
		return target{}, err
	}
	if region != "" && region != p.region {
		return target{}, badRequest(fmt.Sprintf("region %q is not the region this governor governs (%q): submit through that region's governor", region, p.region))
	}
	token := auth.Token(r)
	if token == "" {
		token = body.Token // Nomad reads the body's token only without a header
	}
	return target{Namespace: ns, Region: p.region, Token: token}, nil
}

// regionOf maps Nomad's "global" to the agent's region, as Nomad does.
func (p *Proxy) regionOf(region string) string {
	if region == api.GlobalRegion {
		return p.region
	}
	return region
}

// agree returns the first non-empty of the labelled values (in Nomad's
// order of precedence) and refuses when two non-empty ones differ.
func agree(what string, labelled ...string) (string, error) {
	var first string
	var seen []string
	for i := 0; i+1 < len(labelled); i += 2 {
		label, v := labelled[i], labelled[i+1]
		if v == "" {
			continue
		}
		seen = append(seen, fmt.Sprintf("%s %q", label, v))
		if first == "" {
			first = v
		} else if v != first {
			return "", badRequest(fmt.Sprintf("the request names two %ss (%s): Nomad would use %q; name one %s only, or the same everywhere",
				what, strings.Join(seen, ", "), first, what))
		}
	}
	return first, nil
}
