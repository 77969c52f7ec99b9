package allotapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// ErrNotFound is returned for a 404 answer.
var ErrNotFound = errors.New("not found")

// Client talks to a governor's /allot/v1 API.
type Client struct {
	// Address is the governor's base URL, e.g. http://127.0.0.1:4680.
	Address string
	// Token is sent as X-Nomad-Token; the governor shows only namespaces
	// it can read.
	Token string
	HTTP  *http.Client
}

// Tenants lists the governed namespaces the caller can read.
func (c *Client) Tenants(ctx context.Context) (*TenantList, error) {
	var out TenantList
	return &out, c.get(ctx, "/allot/v1/tenants", &out)
}

// Queue returns the queue in order.
func (c *Client) Queue(ctx context.Context) (*Queue, error) {
	var out Queue
	return &out, c.get(ctx, "/allot/v1/queue", &out)
}

// Why explains where job ns/id stands.
func (c *Client) Why(ctx context.Context, ns, id string) (*Why, error) {
	var out Why
	return &out, c.get(ctx, "/allot/v1/jobs/"+url.PathEscape(ns)+"/"+url.PathEscape(id)+"/why", &out)
}

// Classes lists the priority classes, highest priority first.
func (c *Client) Classes(ctx context.Context) (*ClassList, error) {
	var out ClassList
	return &out, c.get(ctx, "/allot/v1/classes", &out)
}

// Decisions lists recent preemptions, requeues and holds, newest first.
func (c *Client) Decisions(ctx context.Context) (*DecisionList, error) {
	var out DecisionList
	return &out, c.get(ctx, "/allot/v1/decisions", &out)
}

// Healthy returns nil when the governor reports itself ready (GET
// /readyz: synced, and under HA leading or a standby that knows the
// leader).
func (c *Client) Healthy(ctx context.Context) error {
	var out map[string]string
	return c.get(ctx, "/readyz", &out)
}

// get reads path and decodes a 200 answer into out.
func (c *Client) get(ctx context.Context, path string, out any) error {
	resp, body, err := c.do(ctx, http.MethodGet, path, nil)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		var e Error
		_ = json.Unmarshal(body, &e)
		if resp.StatusCode == http.StatusNotFound {
			return fmt.Errorf("GET %s: %w: %s", path, ErrNotFound, e.Error)
		}
		return fmt.Errorf("GET %s: status %d: %s", path, resp.StatusCode, strings.TrimSpace(e.Error+" "+string(body)))
	}
	if err := json.Unmarshal(body, out); err != nil {
		return fmt.Errorf("GET %s: decoding: %w", path, err)
	}
	return nil
}

// do sends one request to the governor with the client's token (and a
// JSON content type when it has a body) and returns the answer, its body
// already read and closed.
func (c *Client) do(ctx context.Context, method, path string, body io.Reader) (*http.Response, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimRight(c.Address, "/")+path, body)
	if err != nil {
		return nil, nil, fmt.Errorf("building request: %w", err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.Token != "" {
		req.Header.Set("X-Nomad-Token", c.Token)
	}
	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, nil, fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, nil, fmt.Errorf("%s %s: reading body: %w", method, path, err)
	}
	return resp, raw, nil
}

// ErrorText is what a refusal's body says: its JSON error field, or else
// the body itself, trimmed.
func ErrorText(body []byte) string {
	var e Error
	if json.Unmarshal(body, &e) != nil || e.Error == "" {
		return strings.TrimSpace(string(body))
	}
	return e.Error
}
