package nomadagent

import (
	"testing"

	"github.com/shoenig/test/must"
)

func TestRenderChrootEnv(t *testing.T) {
	c := Config{Name: "c1", Client: true, Servers: []string{"127.0.0.1:4647"},
		ChrootEnv: map[string]string{"/usr/bin": "/usr/bin", "/opt/x": "/x"}}
	out := c.Render()
	must.StrContains(t, out, "  chroot_env {\n    \"/opt/x\" = \"/x\"\n    \"/usr/bin\" = \"/usr/bin\"\n  }\n")
	must.StrNotContains(t, Config{Name: "c2", Client: true}.Render(), "chroot_env")
}
