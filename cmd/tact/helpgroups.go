package main

import (
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// Help groups a command's flags by purpose, as gh's help does: run has
// some 75 flags, and one alphabetical block of them hides the few a reader
// wants. Each flag group function (flags.go) names its group; the usage
// template prints the command's own flags first (under its name), then
// the groups in helpGroupOrder, each under its heading and aligned on its
// own, then --help.

// flagGroupAnn is the pflag annotation naming a flag's help group.
const flagGroupAnn = "tact/help-group"

// helpGroupOrder is the order of the groups in help, most used first.
var helpGroupOrder = []string{
	"Input and output",
	"Workspace and tools",
	"Model",
	"Sampling",
	"Model server (openai backend)",
	"Executor: budgets and stopping",
	"Safety: approval, policy, sandbox",
	"Run history",
	"Server",
}

// helpGroup marks the flags f gains from now until the returned function
// is called as help group title:
//
//	defer helpGroup(f, "Model")()
func helpGroup(f *pflag.FlagSet, title string) func() {
	before := map[string]bool{}
	f.VisitAll(func(fl *pflag.Flag) { before[fl.Name] = true })
	return func() {
		f.VisitAll(func(fl *pflag.Flag) {
			if !before[fl.Name] {
				_ = f.SetAnnotation(fl.Name, flagGroupAnn, []string{title})
			}
		})
	}
}

// groupedFlagUsages is the local flags of c by help group, each group under
// its heading (upper case, as gh's), "" when c has no grouped flags.
func groupedFlagUsages(c *cobra.Command) string {
	sets := map[string]*pflag.FlagSet{}
	var order []string
	grouped := false
	c.LocalFlags().VisitAll(func(fl *pflag.Flag) {
		if fl.Hidden {
			return
		}
		// The command's own flags (plan --from, batch --ordered) are what
		// set it apart: first, under its name; --help last.
		title := c.Name() + " flags"
		if g := fl.Annotations[flagGroupAnn]; len(g) == 1 {
			title, grouped = g[0], true
		} else if fl.Name == "help" {
			title = "Help"
		}
		if sets[title] == nil {
			sets[title] = pflag.NewFlagSet(title, pflag.ContinueOnError)
			order = append(order, title)
		}
		sets[title].AddFlag(fl)
	})
	if !grouped {
		return ""
	}
	var b strings.Builder
	write := func(title string) {
		if fs := sets[title]; fs != nil {
			b.WriteString("\n" + strings.ToUpper(title) + "\n" + strings.TrimRight(fs.FlagUsages(), " \n") + "\n")
			delete(sets, title)
		}
	}
	write(c.Name() + " flags")
	for _, title := range helpGroupOrder {
		write(title)
	}
	for _, title := range order {
		if title != "Help" {
			write(title)
		}
	}
	write("Help")
	return b.String()
}

// groupedUsageTemplate is cobra's usage template with the local flags
// printed by group (groupedFlagUsages) for commands that have groups.
func groupedUsageTemplate(base string) string {
	cobra.AddTemplateFunc("groupedFlagUsages", groupedFlagUsages)
	const flags = "{{if .HasAvailableLocalFlags}}\n\nFlags:\n{{.LocalFlags.FlagUsages | trimTrailingWhitespaces}}{{end}}"
	grouped := "{{if .HasAvailableLocalFlags}}{{with groupedFlagUsages .}}\n{{. | trimTrailingWhitespaces}}{{else}}\n\nFlags:\n{{$.LocalFlags.FlagUsages | trimTrailingWhitespaces}}{{end}}{{end}}"
	if !strings.Contains(base, flags) {
		return base // another cobra: the flags stay in one block
	}
	return strings.Replace(base, flags, grouped, 1)
}
