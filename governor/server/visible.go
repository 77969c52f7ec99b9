package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
)

// NomadVisible asks Nomad, with the caller's own token, which namespaces
// it may read: Nomad filters GET /v1/namespaces by the token's ACL.
func NomadVisible(nomad *url.URL, client *http.Client) Visible {
	return func(r *http.Request) (map[string]bool, error) {
		u := *nomad
		u.Path = "/v1/namespaces"
		req, err := http.NewRequestWithContext(r.Context(), "GET", u.String(), nil)
		if err != nil {
			return nil, err
		}
		if tok := r.Header.Get("X-Nomad-Token"); tok != "" {
			req.Header.Set("X-Nomad-Token", tok)
		}
		resp, err := client.Do(req)
		if err != nil {
			return nil, fmt.Errorf("listing namespaces: %w", err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return nil, fmt.Errorf("listing namespaces: Nomad answered %s", resp.Status)
		}
		var nss []struct{ Name string }
		if err := json.NewDecoder(resp.Body).Decode(&nss); err != nil {
			return nil, fmt.Errorf("decoding namespaces: %w", err)
		}
		vis := map[string]bool{}
		for _, ns := range nss {
			vis[ns.Name] = true
		}
		return vis, nil
	}
}
