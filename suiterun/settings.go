package suiterun

import (
	"fmt"
	"strings"

	"github.com/tactcli/tact/config"
	"github.com/tactcli/tact/internal/filekind"
	"github.com/tactcli/tact/react"
	"github.com/tactcli/tact/testsuite"
)

// runtimeSettings are base with the case's flags that the runtime holds
// (a job cannot change them): approvals, policy, hooks, the tools offered,
// run_command's sandbox and environment. Trials run unattended; each is
// kept in the run history (unless the settings say not to), so a report's
// run ids can be looked up with tact log show.
func runtimeSettings(base *config.Settings, f testsuite.Flags) *config.Settings {
	s := *base
	s.NoInput, s.Trace, s.Output, s.JSON = true, "", "", false
	s.Yes = s.Yes || f.Yes
	s.ReadOnly = s.ReadOnly || f.ReadOnly
	s.NoAsk = s.NoAsk || f.NoAsk
	s.NoNetwork = s.NoNetwork || f.NoNetwork
	if f.OnApproval != "" {
		s.OnApproval = f.OnApproval
	}
	if f.Sandbox != "" {
		s.Sandbox = f.Sandbox
	}
	if f.ToolTimeout > 0 {
		s.ToolTimeout = f.ToolTimeout.D()
	}
	if len(f.Env) > 0 {
		s.Env = append(append([]string(nil), s.Env...), f.Env...)
	}
	if f.Policy != "" {
		s.Policy = f.Policy
	}
	if f.Hooks != "" {
		s.Hooks = f.Hooks
	}
	return &s
}

// runtimeKey tells runtimes apart: cases with the same key share one.
func runtimeKey(s *config.Settings) string {
	return fmt.Sprintf("%t %t %t %t %s %s %s %q %s %s", s.Yes, s.ReadOnly, s.NoAsk, s.NoNetwork, s.OnApproval, s.Sandbox, s.ToolTimeout, s.Env, s.Policy, s.Hooks)
}

// jobSettings are the runtime's settings with the case's flags a job
// takes: the allow-list, budgets, sampling, the answer schema and the
// run's --timeout. A live trial after the first varies the seed.
func jobSettings(rs *config.Settings, f testsuite.Flags, trial int, live bool) *config.Settings {
	s := *rs
	if len(f.AllowTools) > 0 {
		s.AllowTools = f.AllowTools
	}
	s.NoPlan = s.NoPlan || f.NoPlan
	setInt := func(dst *int, v *int) {
		if v != nil {
			*dst = *v
		}
	}
	setInt(&s.MaxIterations, f.MaxIterations)
	setInt(&s.RetryBuffer, f.RetryBuffer)
	setInt(&s.ReplanThreshold, f.ReplanThreshold)
	setInt(&s.StallThreshold, f.StallThreshold)
	setInt(&s.TokenBudget, f.TokenBudget)
	setInt(&s.MaxTokens, f.MaxTokens)
	if f.Seed != nil {
		s.Seed = int(*f.Seed)
	}
	if f.Temperature != nil {
		s.Temperature = float32(*f.Temperature)
	}
	if live && trial > 1 && s.Seed >= 0 {
		s.Seed = int((int64(s.Seed) + int64(trial) - 1) % (config.MaxSeed + 1))
	}
	if f.Timeout > 0 {
		s.Timeout = f.Timeout.D()
	}
	if len(f.Schema) > 0 {
		s.Schema = string(f.Schema)
	}
	if f.StopWhen != "" {
		s.StopWhen = f.StopWhen
	}
	if len(f.SuccessPhrases) > 0 {
		s.SuccessPhrases = f.SuccessPhrases
	}
	if len(f.FailurePhrases) > 0 {
		s.FailurePhrases = f.FailurePhrases
	}
	return &s
}

// maxContextFile caps a case's -f file, as tact run's.
const maxContextFile = 64 << 20

// contextFiles reads a case's -f files.
func contextFiles(paths []string) ([]react.ContextFile, error) {
	var out []react.ContextFile
	for _, p := range paths {
		data, err := filekind.ReadFile(filekind.Spec{What: "files", Max: maxContextFile}, p)
		if err != nil {
			return nil, err
		}
		out = append(out, react.ContextFile{Name: p, Path: p, Text: strings.ToValidUTF8(string(data), "\uFFFD")})
	}
	return out, nil
}
