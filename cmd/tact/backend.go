package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/tactcli/tact/config"
	"github.com/tactcli/tact/models"
)

// pullForRun makes --pull download the catalog model the run will use: the
// one --model names, or the recommended default when no model is set and
// the models directory holds none. A model already there, or a --model that
// is a path or not a catalog name, needs nothing. Without --pull it does
// nothing: a run never downloads unasked.
func pullForRun(ctx context.Context, s *config.Settings, streams *iostreams) error {
	if !s.Pull || s.Backend == "openai" || (s.Backend == "" && s.BaseURL != "" && s.Model == "") {
		return nil // no model file: the openai backend's model is on its server
	}
	dir := s.ModelsDirectory()
	var e models.CatalogEntry
	if s.Model == "" {
		if _, err := models.Resolve("", dir); !errors.Is(err, models.ErrNoModel) {
			return nil
		}
		e = models.DefaultCatalogEntry()
	} else {
		var ok bool
		if e, ok = models.LookupCatalog(s.Model); !ok {
			return nil
		}
		s.Model = e.Name // the file is NAME.gguf, whatever case --model had
		if _, err := models.Resolve(e.Name, dir); err == nil {
			return nil
		}
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
