package cmdline

import (
	"fmt"
	"slices"
	"strings"
)

// optSpec describes a wrapper's options, getopt style; options end at the
// first operand or "--".
type optSpec struct {
	flags        string   // short options without a value
	values       string   // short options with a value (attached or the next word)
	optional     string   // short options whose value can only be attached
	longFlags    []string // --name
	longValues   []string // --name=value or --name value
	longOptional []string // --name or --name=value
	numeric      bool     // "-10" is an option (nice)
}

type parsedOpt struct {
	name  string // short letter or long name
	value string
}

// parseOpts reads options from args; rest is the index of the first
// operand. problem is set for an unknown option or a word in option
// position that is only known at run time.
func parseOpts(args []Word, s optSpec) (opts []parsedOpt, rest int, problem string) {
	for i := 0; i < len(args); i++ {
		w := args[i]
		if w.Dynamic {
			return opts, i, fmt.Sprintf("option position holds %s, only known when it runs", w.Text)
		}
		t := w.Text
		switch {
		case t == "--":
			return opts, i + 1, ""
		case t == "-" || !strings.HasPrefix(t, "-"):
			return opts, i, ""
		case strings.HasPrefix(t, "--"):
			name, val, hasVal := strings.Cut(t[2:], "=")
			full, kind := matchLong(name, s)
			switch kind {
			case "":
				return opts, i, fmt.Sprintf("unknown option %s", t)
			case "ambiguous":
				return opts, i, fmt.Sprintf("ambiguous option %s", t)
			case "flag":
				if hasVal {
					return opts, i, fmt.Sprintf("option --%s takes no value", full)
				}
			case "value":
				if !hasVal {
					if i+1 >= len(args) {
						return opts, i, fmt.Sprintf("option --%s needs a value", full)
					}
					i++
					if args[i].Dynamic {
						val = ""
					} else {
						val = args[i].Text
					}
				}
			}
			opts = append(opts, parsedOpt{name: full, value: val})
		default:
			if s.numeric && len(t) > 1 && isDigits(t[1:]) {
				opts = append(opts, parsedOpt{name: "n", value: t[1:]})
				continue
			}
		cluster:
			for j := 1; j < len(t); j++ {
				ch := t[j]
				switch {
				case strings.IndexByte(s.flags, ch) >= 0:
					opts = append(opts, parsedOpt{name: string(ch)})
				case strings.IndexByte(s.values, ch) >= 0:
					val := t[j+1:]
					if val == "" {
						if i+1 >= len(args) {
							return opts, i, fmt.Sprintf("option -%c needs a value", ch)
						}
						i++
						if !args[i].Dynamic {
							val = args[i].Text
						}
					}
					opts = append(opts, parsedOpt{name: string(ch), value: val})
					break cluster
				case strings.IndexByte(s.optional, ch) >= 0:
					opts = append(opts, parsedOpt{name: string(ch), value: t[j+1:]})
					break cluster
				default:
					return opts, i, fmt.Sprintf("unknown option -%c in %s", ch, t)
				}
			}
		}
	}
	return opts, len(args), ""
}

// matchLong finds a long option by its name or an unambiguous prefix, as
// getopt_long does.
func matchLong(name string, s optSpec) (full, kind string) {
	groups := []struct {
		names []string
		kind  string
	}{{s.longFlags, "flag"}, {s.longValues, "value"}, {s.longOptional, "optional"}}
	var hits int
	for _, g := range groups {
		for _, n := range g.names {
			if n == name {
				return n, g.kind
			}
			if name != "" && strings.HasPrefix(n, name) {
				hits++
				full, kind = n, g.kind
			}
		}
	}
	switch hits {
	case 0:
		return "", ""
	case 1:
		return full, kind
	}
	return "", "ambiguous"
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

func hasOpt(opts []parsedOpt, names ...string) bool {
	for _, o := range opts {
		if slices.Contains(names, o.name) {
			return true
		}
	}
	return false
}
