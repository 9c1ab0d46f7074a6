package agent

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/tactcli/tact/config"
	"github.com/tactcli/tact/history"
	"github.com/tactcli/tact/policy"
	"github.com/tactcli/tact/react"
	"github.com/tactcli/tact/runrecord"
	"github.com/tactcli/tact/tools"
)

// TextAsker is a Prompter that can also read a free-text answer (the
// terminal's): ask_user without options needs one.
type TextAsker interface {
	AskText(ctx context.Context, question string) (string, error)
}

// ChoiceAsker is a Prompter that asks for one of options taken whole
// (ask_user's), where Ask takes an approval's first words (an MCP
// client's elicitation).
type ChoiceAsker interface {
	AskChoice(ctx context.Context, question string, options []string) (string, error)
}

// askerOf asks ask_user's questions through p, the terminal's prompter;
// nil (no terminal) makes a run pause for them.
func askerOf(p policy.Prompter) react.Asker {
	if p == nil {
		return nil
	}
	return func(ctx context.Context, question string, options []string) (string, error) {
		if c, ok := p.(ChoiceAsker); ok && len(options) > 0 {
			return c.AskChoice(ctx, question, options)
		}
		if t, ok := p.(TextAsker); ok && len(options) > 0 {
			return chooseByText(ctx, t, question, options)
		}
		if len(options) > 0 {
			return p.Ask(ctx, question, options)
		}
		if t, ok := p.(TextAsker); ok {
			return t.AskText(ctx, question)
		}
		return "", errors.New("this terminal takes only chosen answers")
	}
}

// chooseByText asks for one of options taken whole, by its number or its
// text (any case), until one is given: an approval's prompt (Ask) takes
// first words or letters, and options such as "the red one" and "the
// blue one" share both.
func chooseByText(ctx context.Context, t TextAsker, question string, options []string) (string, error) {
	var b strings.Builder
	b.WriteString(question)
	for i, o := range options {
		fmt.Fprintf(&b, "\n  %d) %s", i+1, o)
	}
	prompt := b.String() + "\nAnswer with a number or an option:"
	for {
		ans, err := t.AskText(ctx, prompt)
		if err != nil {
			return "", err
		}
		ans = strings.TrimSpace(ans)
		if n, err := strconv.Atoi(ans); err == nil && n >= 1 && n <= len(options) {
			return options[n-1], nil
		}
		for _, o := range options {
			if strings.EqualFold(ans, strings.TrimSpace(o)) {
				return o, nil
			}
		}
		prompt = fmt.Sprintf("Please answer 1 to %d, or one of the options as written.", len(options))
	}
}

// AnswerJob is the job that goes on with paused run ref (an id, a unique
// prefix, or last) with the answer in: the run's settings come back into
// s as for ResumeJob; a run that is not paused, was answered already, or
// whose workspace is gone is refused, and so is an answer that does not
// fit the question (the run stays paused).
//
// The job holds the run's answer lock (Resume.Release): Run releases it
// once the answering run is recorded; a caller that does not run the job
// releases it.
func AnswerJob(ctx context.Context, s *config.Settings, ref string, in runrecord.AnswerInput, given func(flag string) bool) (job Job, err error) {
	return answerJob(ctx, s, ref, in, given, false)
}

// AnswerJobHere is AnswerJob for a server (tact serve's POST
// /v1/runs/ID/answer, tact mcp serve's retry): the run goes on in the
// server's workspace, s.Workspace, so only a run paused there is
// answered. A run paused elsewhere (a cron job's in another project) is
// refused without naming its workspace: going on here would run the rest
// of its task in the wrong directory, and a client of the server has no
// business with the user's other runs.
func AnswerJobHere(ctx context.Context, s *config.Settings, ref string, in runrecord.AnswerInput) (Job, error) {
	return answerJob(ctx, s, ref, in, func(flag string) bool { return flag == "workspace" }, true)
}

func answerJob(ctx context.Context, s *config.Settings, ref string, in runrecord.AnswerInput, given func(flag string) bool, here bool) (job Job, err error) {
	if !s.History {
		return Job{}, errNoHistoryAnswer
	}
	b, rec, err := runrecord.OpenRunIn(ctx, history.DefaultPath, ref, s.Workspace, "answer")
	if err != nil {
		return Job{}, err
	}
	defer b.Close()
	if here && (!sameWorkspace(rec.Workspace, s.Workspace) || linkedAway(rec.Workspace) != "") {
		return Job{}, badInputf("run %s did not pause in this server's workspace: answer it with tact answer %s in its own", rec.ID, rec.ID)
	}
	// One answer at a time: the lock first, then the check that nobody
	// answered it, held until the answering run is recorded (Run).
	release, err := b.ClaimAnswer(rec)
	if err != nil {
		return Job{}, err
	}
	defer func() {
		if err != nil {
			release()
		}
	}()
	r, err := b.Resumption(ctx, rec)
	if err != nil {
		return Job{}, err
	}
	p, perr := runrecord.PendingOf(rec.ID, r.Checkpoint)
	if err := b.Paused(ctx, rec, perr == nil); err != nil {
		return Job{}, err
	}
	if perr != nil {
		return Job{}, perr
	}
	if err := s.Restore([]byte(rec.Settings), ResumedSettings, func(field string) bool { return given(config.Flag(field)) }); err != nil {
		return Job{}, badInputf("run %s: %v", rec.ID, err)
	}
	if !given("workspace") {
		s.Workspace = rec.Workspace
	}
	if fi, err := os.Stat(s.Workspace); err != nil || !fi.IsDir() {
		return Job{}, badInputf("run %s cannot be answered: its workspace %s is gone", rec.ID, s.Workspace)
	}
	if to := linkedAway(rec.Workspace); to != "" && !given("workspace") {
		return Job{}, badInputf("run %s cannot be answered: its workspace %s is now a link to %s (give --workspace DIR to go on in a directory you name)", rec.ID, rec.Workspace, to)
	}
	a, err := runrecord.MakeAnswer(p.Question, in)
	if err != nil {
		return Job{}, err
	}
	return Job{Query: rec.Query, Resume: &Resume{From: rec.ID, Checkpoint: r.Checkpoint, Budget: react.BudgetKept, Answer: &a, Release: release}}, nil
}

// PendingQuestion is what paused run ref waits for (its checkpoint's
// question; redacted); a run that is not paused, or was answered
// already, is refused as AnswerJob refuses it.
func PendingQuestion(ctx context.Context, ref string) (react.Question, error) {
	b, rec, err := runrecord.OpenRun(ctx, history.DefaultPath, ref)
	if err != nil {
		return react.Question{}, err
	}
	defer b.Close()
	r, err := b.Resumption(ctx, rec)
	if err != nil {
		return react.Question{}, err
	}
	p, perr := runrecord.PendingOf(rec.ID, r.Checkpoint)
	if err := b.Paused(ctx, rec, perr == nil); err != nil {
		return react.Question{}, err
	}
	if perr != nil {
		return react.Question{}, perr
	}
	return p.Question, nil
}

// errNoHistoryAnswer refuses an answer whose run would not be recorded:
// the answering run's record is what tells a second answer "answered
// already".
var errNoHistoryAnswer = badInputf("the run history is off (TACT_HISTORY=false, --no-history) and an answer needs it: the answering run's record is what refuses a second answer")

// noHistoryAsker answers ask_user in a run that keeps no history: with no
// checkpoint to wait at, it cannot pause (exit 12 would name a run
// nobody can answer), so the model is told nobody can answer.
func noHistoryAsker(context.Context, string, []string) (string, error) {
	return "", errors.New("nobody can answer it: this run keeps no run history (--no-history), so it cannot pause for an answer")
}

// noPauseGate is a run's gate where the run keeps no history: an approval
// the gate would pause for (--on-approval pause) is denied as unattended
// instead, saying why.
type noPauseGate struct{ tools.Gate }

func (g noPauseGate) Check(ctx context.Context, env *tools.Env, calls []tools.Call) []tools.Verdict {
	vs := g.Gate.Check(ctx, env, calls)
	for i, v := range vs {
		if v.Decision == tools.DecisionNeedsInput {
			vs[i] = tools.Verdict{Decision: policy.DecisionDeny, Reason: policy.ReasonUnattended + " (--on-approval pause needs the run history to pause at: this run keeps none)"}
		}
	}
	return vs
}

// sameWorkspace reports whether a and b name one directory (as the run
// history keys workspaces).
func sameWorkspace(a, b string) bool {
	ka, err1 := runrecord.WorkspaceKey(a)
	kb, err2 := runrecord.WorkspaceKey(b)
	return err1 == nil && err2 == nil && ka == kb
}

// linkedAway is where dir, a recorded workspace (recorded resolved), leads
// now when it has become a link (or sits under one): a run answered there
// would go on in a directory it never ran in. "" when it has not.
func linkedAway(dir string) string {
	k, err := runrecord.WorkspaceKey(dir)
	if err != nil || k == filepath.Clean(dir) {
		return ""
	}
	return k
}
