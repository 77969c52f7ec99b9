// Package completion implements `allotctl completion bash|zsh`: the shell
// script that asks allotctl itself (urfave/cli's
// --generate-bash-completion) for the words that may follow.
package completion

import (
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/allot-sh/allot/cli/internal/cmdutil"
)

const bashScript = `# allotctl bash completion: eval "$(allotctl completion bash)"
_allotctl_complete() {
  local cur words
  cur="${COMP_WORDS[COMP_CWORD]}"
  if [[ "$cur" == -* ]]; then
    words=$("${COMP_WORDS[@]:0:$COMP_CWORD}" "$cur" --generate-bash-completion 2>/dev/null)
  else
    words=$("${COMP_WORDS[@]:0:$COMP_CWORD}" --generate-bash-completion 2>/dev/null)
  fi
  COMPREPLY=($(compgen -W "$words" -- "$cur"))
}
complete -o bashdefault -o default -F _allotctl_complete allotctl
`

const zshScript = `# allotctl zsh completion: eval "$(allotctl completion zsh)"
autoload -U +X bashcompinit && bashcompinit
` + bashScript

// Command returns `completion`.
func Command() *cli.Command {
	return &cli.Command{
		Name:      "completion",
		Usage:     "print the shell completion script (bash or zsh)",
		ArgsUsage: "bash|zsh",
		Description: "  eval \"$(allotctl completion bash)\"    # in ~/.bashrc\n" +
			"  eval \"$(allotctl completion zsh)\"     # in ~/.zshrc",
		BashComplete: func(c *cli.Context) {
			fmt.Fprintln(c.App.Writer, "bash\nzsh")
		},
		Action: func(c *cli.Context) error {
			switch c.Args().First() {
			case "bash":
				_, err := fmt.Fprint(c.App.Writer, bashScript)
				return err
			case "zsh":
				_, err := fmt.Fprint(c.App.Writer, zshScript)
				return err
			}
			return cmdutil.UsageError(c, "completion needs a shell: bash or zsh")
		},
	}
}
