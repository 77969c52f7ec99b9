package cmdutil

import (
	"strings"

	"github.com/urfave/cli/v2"
)

// Args returns the command's positional arguments. urfave/cli stops
// parsing flags at the first positional argument; Args also accepts the
// command's flags after positionals (`quota set ns gpu=8 -limit gpu=16`),
// setting them on c. Arguments after "--" are positional.
func Args(c *cli.Context) ([]string, error) {
	var pos []string
	args := c.Args().Slice()
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return append(pos, args[i+1:]...), nil
		}
		if !strings.HasPrefix(a, "-") || a == "-" {
			pos = append(pos, a)
			continue
		}
		name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		f := lookupFlag(c.Command.Flags, name)
		if f == nil {
			return nil, UsageError(c, "unknown flag %s", a)
		}
		if _, isBool := f.(*cli.BoolFlag); isBool && !hasValue {
			value, hasValue = "true", true
		}
		if !hasValue {
			if i+1 >= len(args) {
				return nil, UsageError(c, "flag %s needs a value", a)
			}
			i++
			value = args[i]
		}
		if err := c.Set(name, value); err != nil {
			return nil, UsageError(c, "flag %s: %v", a, err)
		}
	}
	return pos, nil
}

func lookupFlag(flags []cli.Flag, name string) cli.Flag {
	for _, f := range flags {
		for _, n := range f.Names() {
			if n == name {
				return f
			}
		}
	}
	return nil
}
