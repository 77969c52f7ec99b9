package ha

import (
	"strings"
	"testing"
	"time"

	"github.com/shoenig/test/must"
)

func TestConfigDefaults(t *testing.T) {
	c := Config{Address: "127.0.0.1:8500"}.WithDefaults()
	must.Eq(t, DefaultKey, c.Key)
	must.Eq(t, 15*time.Second, c.SessionTTL)
	must.Eq(t, 15*time.Second, c.LockDelay)
	must.Eq(t, 1500*time.Millisecond, c.Margin)
	must.Eq(t, 5*time.Second, c.RenewInterval)
	must.Eq(t, DefaultAcquireRetry, c.AcquireRetry)
	must.Eq(t, DefaultRetryInterval, c.RetryInterval)
	must.RegexMatch(t, memberIDPattern, c.MemberID)
	must.NoError(t, c.Validate())

	withCheck := Config{Address: "x:1", CheckTTL: 2 * time.Second}.WithDefaults()
	must.Eq(t, 200*time.Millisecond, withCheck.Margin)
	must.Eq(t, 500*time.Millisecond, withCheck.RenewInterval)
	must.NoError(t, withCheck.Validate())
}

func TestConfigValidate(t *testing.T) {
	cases := map[string]struct {
		mod  func(*Config)
		want []string // substrings of the error; none: valid
	}{
		"defaults":           {mod: func(*Config) {}},
		"no address":         {mod: func(c *Config) { c.Address = "" }, want: []string{"address is required"}},
		"ttl under consul's": {mod: func(c *Config) { c.SessionTTL = 5 * time.Second }, want: []string{"session TTL 5s"}},
		"ttl over a day":     {mod: func(c *Config) { c.SessionTTL = 25 * time.Hour }, want: []string{"session TTL"}},
		"lock-delay over 60s": {mod: func(c *Config) { c.LockDelay = 61 * time.Second },
			want: []string{"lock-delay 1m1s"}},
		"negative lock-delay": {mod: func(c *Config) { c.LockDelay = -time.Second }, want: []string{"lock-delay"}},
		"check ttl too short": {mod: func(c *Config) { c.CheckTTL = 500 * time.Millisecond }, want: []string{"check TTL 500ms"}},
		"check ttl over the session ttl": {mod: func(c *Config) { c.CheckTTL = 20 * time.Second },
			want: []string{"check TTL 20s"}},
		"margin too large": {mod: func(c *Config) { c.Margin = 8 * time.Second }, want: []string{"margin 8s"}},
		"renew too rare":   {mod: func(c *Config) { c.RenewInterval = 14 * time.Second }, want: []string{"renew interval 14s"}},
		"bad key":          {mod: func(c *Config) { c.Key = "/abs/key" }, want: []string{"lock key"}},
		"bad member id":    {mod: func(c *Config) { c.MemberID = "a b/c" }, want: []string{"member id"}},
		"cert without key": {mod: func(c *Config) { c.TLS.CertFile = "c.pem" }, want: []string{"cert and key"}},
		"advertise":        {mod: func(c *Config) { c.AdvertiseURL = "http://127.0.0.1:4680" }},
		"advertise with credentials": {mod: func(c *Config) { c.AdvertiseURL = "http://u:p@127.0.0.1:4680" },
			want: []string{"advertised URL"}},
		"advertise not http": {mod: func(c *Config) { c.AdvertiseURL = "unix:///run/g.sock" }, want: []string{"advertised URL"}},
		"every problem at once": {mod: func(c *Config) { c.Address, c.SessionTTL, c.MemberID = "", time.Second, "" },
			want: []string{"address is required", "session TTL", "member id"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := Config{Address: "127.0.0.1:8500", MemberID: "gov-1"}.WithDefaults()
			tc.mod(&c)
			err := c.Validate()
			if len(tc.want) == 0 {
				must.NoError(t, err)
				return
			}
			must.Error(t, err)
			for _, w := range tc.want {
				must.StrContains(t, err.Error(), w)
			}
		})
	}
}

func TestNewRejectsInvalidConfig(t *testing.T) {
	_, err := New(Config{SessionTTL: time.Second}, nil)
	must.Error(t, err)
	must.True(t, strings.Contains(err.Error(), "address is required"))

	e, err := New(Config{Address: "https://127.0.0.1:8501", MemberID: "gov-1", AdvertiseURL: "http://127.0.0.1:4680",
		TLS: TLSConfig{ServerName: "consul.local"}}, nil)
	must.NoError(t, err)
	must.Eq(t, Member{ID: "gov-1", URL: "http://127.0.0.1:4680"}, e.Self())
	_, leading := e.Leading()
	must.False(t, leading)
}

func TestSanitizeID(t *testing.T) {
	must.Eq(t, "host_example.com", sanitizeID("host example.com"))
	must.Eq(t, "governor", sanitizeID(""))
	must.RegexMatch(t, memberIDPattern, sanitizeID(strings.Repeat("x", 300)))
}
