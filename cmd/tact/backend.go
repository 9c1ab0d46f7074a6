package main

import (
	"context"
	"fmt"

	"github.com/tactcli/tact/agent"
	"github.com/tactcli/tact/config"
	"github.com/tactcli/tact/models"
)

// pullForRun makes --pull download the catalog model the run will use
// (agent.PullTarget decides which, with the engine's own backend choice).
// Without --pull it does nothing: a run never downloads unasked.
func pullForRun(ctx context.Context, s *config.Settings, streams *iostreams) error {
	if !s.Pull {
		return nil
	}
	if e, ok := models.LookupCatalog(s.Model); ok && s.Model != "" {
		s.Model = e.Name // the file is NAME.gguf, whatever case --model had
	}
	e, ok := agent.PullTarget(s)
	if !ok {
		return nil
	}
	_, err := pullCatalogModel(ctx, s, streams, e)
	if err == nil && s.Model == "" {
		s.Model = e.Name
	}
	return err
}

// pullCatalogModel downloads catalog entry e into the models directory,
// saying so on stderr (with a progress bar on a terminal), and returns its
// path. Errors carry pull's exit codes (see pullExit).
func pullCatalogModel(ctx context.Context, s *config.Settings, streams *iostreams, e models.CatalogEntry) (string, error) {
	endpoint, err := models.HubEndpoint(s.HFEndpoint)
	if err != nil {
		return "", badInput(err)
	}
	opts := models.PullOptions{URL: e.URL(endpoint), Dir: s.ModelsDirectory(), Name: e.Name, SHA256: e.SHA256}
	if !s.Quiet {
		fmt.Fprintf(streams.ErrOut, "tact: pulling %s (%s) from %s\n", e.Name, e.SizeText(), models.SafeURL(opts.URL))
		if streams.StderrTTY {
			opts.Progress = streams.ErrOut
		}
	}
	res, err := models.PullModel(ctx, opts)
	if err != nil {
		return "", pullExit(err)
	}
	warnUnverified(streams.ErrOut, s.Quiet, e.Name, res)
	return res.Path, nil
}
