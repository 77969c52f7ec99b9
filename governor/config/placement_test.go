package config

import (
	"testing"

	"github.com/allot-sh/allot/governor/engine"
)

func TestPlacement(t *testing.T) {
	checkSetting(t, map[string]settingCase[string]{
		"packed by default":      {file: ``, want: engine.PlacementPack},
		"pack":                   {file: `placement = "pack"`, want: engine.PlacementPack},
		"left to Nomad":          {file: `placement = "nomad"`, want: engine.PlacementNomad},
		"anything else is wrong": {file: `placement = "spread"`, wantErr: `placement "spread": must be "pack"`},
		"empty is wrong":         {file: `placement = ""`, wantErr: `placement "": must be "pack"`},
		"case matters":           {file: `placement = "Nomad"`, wantErr: `placement "Nomad": must be "pack"`},
	}, func(c Config) string { return c.Placement }, func(ec engine.Config) string { return ec.Placement })
}
