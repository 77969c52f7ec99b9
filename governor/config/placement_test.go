package config

import (
	"testing"

	"github.com/shoenig/test/must"

	"github.com/allot-sh/allot/governor/engine"
)

func TestPlacement(t *testing.T) {
	cases := map[string]struct {
		file    string
		want    string
		wantErr string
	}{
		"packed by default":      {file: ``, want: engine.PlacementPack},
		"pack":                   {file: `placement = "pack"`, want: engine.PlacementPack},
		"left to Nomad":          {file: `placement = "nomad"`, want: engine.PlacementNomad},
		"anything else is wrong": {file: `placement = "spread"`, wantErr: `placement "spread": must be "pack"`},
		"empty is wrong":         {file: `placement = ""`, wantErr: `placement "": must be "pack"`},
		"case matters":           {file: `placement = "Nomad"`, wantErr: `placement "Nomad": must be "pack"`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := loadFile(t, tc.file, tc.wantErr)
			if c == nil {
				return
			}
			must.Eq(t, tc.want, c.Placement)
			must.Eq(t, tc.want, c.Engine().Placement, must.Sprint("the engine decides with it"))
		})
	}
}
