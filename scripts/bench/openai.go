package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/tactcli/tact/llm"
	"github.com/tactcli/tact/llm/llamacpp"
	"github.com/tactcli/tact/llm/openai"
)

// The openai section (-only openai): the same 8-step ReAct run on the bench
// model in-process and through ollama's OpenAI-compatible API (the openai
// backend talking to `ollama serve` on loopback), alternating, in one run
// of the benchmark. Both get the same messages, action schema, sampling,
// context, batch and threads; every run starts with a prompt prefix neither
// server has cached.

var ollamaFlag = flag.String("ollama", os.Getenv("TACT_TEST_OLLAMA"), "ollama binary for -only openai (make bench builds it and sets TACT_TEST_OLLAMA)")

const openaiMaxTokens = 48

type apiRun struct {
	label   string
	best    reactResult
	calls   int
	ttft    time.Duration // median time to the first streamed piece
	walls   []time.Duration
	noCache bool // the server does not report reused tokens
}

func openaiBench(path string, threads int) error {
	if *ollamaFlag == "" {
		return errors.New("-only openai needs ollama: run it through make bench (which builds it), or give -ollama PATH")
	}
	lockDir, err := os.MkdirTemp("", "tact-bench-lock-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(lockDir)
	local, err := newBackend(llamacpp.Options{ModelPath: path, Threads: threads, CtxSize: ctxSize, BatchSize: batchSize, Verbose: *verboseFlag, CPULockDir: lockDir})
	if err != nil {
		return err
	}
	defer local.Close()

	progress("openai: starting ollama serve with the bench model")
	baseURL, stop, err := startOllama(*ollamaFlag, path, threads)
	if err != nil {
		return err
	}
	defer stop()
	api, err := openai.New(openai.Options{BaseURL: baseURL, Model: "bench", Retries: 2, Timeout: 5 * time.Minute, CtxSize: ctxSize})
	if err != nil {
		return err
	}
	defer api.Close()

	// The same texts for both: the filler is measured with the model's own
	// tokenizer.
	f := newFiller()
	system := "You are tact. Tools: read_file(path), run_command(argv). Reply with one JSON action per turn.\n" + f.text(local, *systemFlag-30)
	var obs []string
	for step := range *stepsFlag {
		obs = append(obs, fmt.Sprintf("Observation %d: ", step+1)+f.text(local, 100))
	}
	sysTokens := 0
	if t, err := local.Tokenize(system); err == nil {
		sysTokens = len(t)
	}

	// Warm-up: the weights paged in and the graphs allocated on both sides.
	progress("openai: warming up")
	for _, b := range []llm.Backend{local, api} {
		if _, err := apiReact(b, "warm-up", system, obs[:1]); err != nil {
			return err
		}
	}
	runs := []*apiRun{
		{label: "in-process (llama backend)"},
		{label: "ollama's API (openai backend, streamed)", noCache: true},
	}
	backends := []llm.Backend{local, api}
	for i := range *reactRepeatFlag {
		for j := range 2 {
			k := (i + j) % 2 // each goes first every other round
			progress("openai: ReAct run %d/%d, %s", i+1, *reactRepeatFlag, runs[k].label)
			r, err := apiReact(backends[k], fmt.Sprintf("run %d", i), system, obs)
			if err != nil {
				return fmt.Errorf("%s: %w", runs[k].label, err)
			}
			runs[k].walls = append(runs[k].walls, r.wall)
			if runs[k].best.wall == 0 || r.wall < runs[k].best.wall {
				runs[k].best = r.reactResult
				runs[k].ttft = r.ttft
			}
			runs[k].calls = len(obs)
		}
	}
	reportOpenAI(runs, sysTokens)
	return nil
}

type apiReactResult struct {
	reactResult
	ttft time.Duration
}

// apiReact is the ReAct-like loop of react(): the system prompt (tagged, so
// no cache holds its prefix) and the query, then per step the model's
// action under the action schema and an observation.
func apiReact(b llm.Backend, tag, system string, obs []string) (apiReactResult, error) {
	msgs := []llm.Message{
		{Role: llm.RoleSystem, Content: "[" + tag + "] " + system},
		{Role: llm.RoleUser, Content: "Query: which function parses the configuration, and what does it do on errors?"},
	}
	var res apiReactResult
	var firsts []time.Duration
	start := time.Now()
	for step, o := range obs {
		callStart := time.Now()
		var first time.Duration
		r, err := b.Complete(context.Background(), llm.Request{Kind: llm.KindAction, Messages: msgs, Schema: json.RawMessage(actionSchema),
			Sampling: llm.Sampling{Temperature: 0.8, TopK: 40, TopP: 0.95, MinP: 0.05, Seed: step}, MaxTokens: openaiMaxTokens,
			OnToken: func(string) {
				if first == 0 {
					first = time.Since(callStart)
				}
			}})
		if err != nil {
			return res, err
		}
		firsts = append(firsts, first)
		res.evaluated += r.Usage.PromptTokens
		res.cached += r.Usage.CachedTokens
		res.gen += r.Usage.CompletionTokens
		msgs = append(msgs, llm.Message{Role: llm.RoleAssistant, Content: r.Text}, llm.Message{Role: llm.RoleUser, Content: o})
	}
	res.wall = time.Since(start)
	res.ttft = median(firsts)
	return res, nil
}

// startOllama serves model as "bench" on a free loopback port with the
// bench's context, batch and threads, until stop.
func startOllama(bin, model string, threads int) (baseURL string, stop func(), err error) {
	dir, err := os.MkdirTemp("", "tact-bench-ollama-")
	if err != nil {
		return "", nil, err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	host := l.Addr().String()
	l.Close()
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "OLLAMA_HOST=" + host,
		"OLLAMA_MODELS=" + filepath.Join(dir, "models"), "OLLAMA_NUM_PARALLEL=1", "OLLAMA_KEEP_ALIVE=-1"}
	logf, err := os.Create(filepath.Join(dir, "serve.log"))
	if err != nil {
		return "", nil, err
	}
	serve := exec.Command(bin, "serve")
	serve.Env, serve.Stdout, serve.Stderr = env, logf, logf
	serve.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := serve.Start(); err != nil {
		return "", nil, err
	}
	done := make(chan struct{})
	go func() { _ = serve.Wait(); close(done) }()
	stop = func() {
		_ = syscall.Kill(-serve.Process.Pid, syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
		}
		_ = syscall.Kill(-serve.Process.Pid, syscall.SIGKILL)
		logf.Close()
		os.RemoveAll(dir)
	}
	fail := func(err error) (string, func(), error) {
		log, _ := os.ReadFile(filepath.Join(dir, "serve.log"))
		stop()
		return "", nil, fmt.Errorf("%w\nollama serve log:\n%s", err, log)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		if resp, err := http.Get("http://" + host + "/api/version"); err == nil {
			resp.Body.Close()
			break
		}
		if time.Now().After(deadline) {
			return fail(errors.New("ollama serve did not answer within 30s"))
		}
		time.Sleep(100 * time.Millisecond)
	}
	modelfile := filepath.Join(dir, "Modelfile")
	// ollama's OpenAI API takes no top_k or min_p: the Modelfile sets them
	// as the in-process run has them.
	mf := fmt.Sprintf("FROM %s\nPARAMETER num_ctx %d\nPARAMETER num_batch %d\nPARAMETER num_thread %d\nPARAMETER top_k 40\nPARAMETER min_p 0.05\n",
		model, ctxSize, batchSize, threads)
	if err := os.WriteFile(modelfile, []byte(mf), 0o644); err != nil {
		return fail(err)
	}
	create := exec.Command(bin, "create", "bench", "-f", modelfile)
	create.Env = env
	if out, err := create.CombinedOutput(); err != nil {
		return fail(fmt.Errorf("ollama create: %v\n%s", err, out))
	}
	return "http://" + host + "/v1", stop, nil
}

func reportOpenAI(runs []*apiRun, sysTokens int) {
	fmt.Printf("| %d-step ReAct run, %d-token system prompt, action schema, ≤ %d tokens a reply (fastest of %d) | wall time | all runs | per call | median time to first token | prompt tokens | reused | generated |\n|---|---|---|---|---|---|---|---|\n",
		*stepsFlag, sysTokens, openaiMaxTokens, *reactRepeatFlag)
	for _, r := range runs {
		var all []string
		for _, w := range r.walls {
			all = append(all, fmt.Sprintf("%.1f", w.Seconds()))
		}
		reused := fmt.Sprint(r.best.cached)
		if r.noCache {
			reused = "not reported"
		}
		fmt.Printf("| %s | %.1f s | %s s | %.0f ms | %.0f ms | %d | %s | %d |\n", r.label, r.best.wall.Seconds(), strings.Join(all, ", "),
			float64(r.best.wall.Milliseconds())/float64(max(r.calls, 1)), float64(r.ttft.Microseconds())/1000,
			r.best.evaluated+r.best.cached, reused, r.best.gen)
	}
	if len(runs) == 2 && runs[0].best.wall > 0 {
		fmt.Printf("| **API / in-process wall time** | **%.2fx** | | | | | | |\n\n", runs[1].best.wall.Seconds()/runs[0].best.wall.Seconds())
	}
}
