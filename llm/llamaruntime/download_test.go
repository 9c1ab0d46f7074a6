package llamaruntime

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tactcli/tact/models"
)

// registryPath is where an npm registry serves the CPU package's tarball.
func registryPath() string {
	p := pinned[CPU]
	return "/" + p.Name + "/-/" + p.TarballName()
}

// TestInstallDownload installs from a registry (a local server with the
// registry's paths, as TACT_RUNTIME_URL names a mirror): the tarball is
// fetched, checked and installed, and the download is not kept.
func TestInstallDownload(t *testing.T) {
	file := craft(t, goodEntries(t))
	pinTo(t, file)
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var asked []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked = append(asked, r.URL.Path)
		if r.URL.Path != registryPath() {
			http.NotFound(w, r)
			return
		}
		w.Write(data)
	}))
	defer srv.Close()
	root := t.TempDir()
	var progress strings.Builder
	res, err := Install(context.Background(), InstallOptions{Root: root, Registry: srv.URL + "/", Progress: &progress})
	if err != nil {
		t.Fatal(err)
	}
	if res.URL != srv.URL+registryPath() {
		t.Errorf("URL %q", res.URL)
	}
	if !slices.Equal(asked, []string{registryPath()}) {
		t.Errorf("asked for %v", asked)
	}
	if !strings.Contains(progress.String(), "downloading "+pinned[CPU].Spec()) {
		t.Errorf("progress: %q", progress.String())
	}
	if got := installedDirs(t, root); !slices.Equal(got, []string{".download", Version}) {
		t.Errorf("root holds %v", got)
	}
	if left, _ := os.ReadDir(filepath.Join(root, ".download")); len(left) != 0 {
		t.Errorf("the download was kept: %v", left)
	}
}

// TestInstallDownloadFailures: an unreachable registry, a server that
// never answers, a truncated transfer and a wrong file each end in one
// line naming the URL, with nothing installed.
func TestInstallDownloadFailures(t *testing.T) {
	file := craft(t, goodEntries(t))
	pinTo(t, file)
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}

	// A port nothing listens on: connection refused at once.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + ln.Addr().String()
	ln.Close()

	// A server that accepts and never answers: the stall timeout ends it.
	silent, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	go func() {
		for {
			c, err := silent.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()

	truncated := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", strconv.Itoa(len(data)))
		w.Write(data[:len(data)/2])
		// The handler returns early: the connection closes short.
	}))
	defer truncated.Close()
	wrong := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("<html>not a tarball</html>"))
	}))
	defer wrong.Close()
	missing := httptest.NewServer(http.NotFoundHandler())
	defer missing.Close()

	tests := []struct {
		name     string
		registry string
		kind     error
		want     []string
	}{
		{"unreachable", closed, nil, []string{"runtime install: download " + closed + registryPath(), "connection refused", "TACT_RUNTIME_URL"}},
		{"stalled", "http://" + silent.Addr().String(), models.ErrStalled, []string{"no data for 300ms", "stall timeout"}},
		{"truncated", truncated.URL, nil, []string{"download interrupted", "run the same command again to resume"}},
		{"wrong file", wrong.URL, ErrIntegrity, []string{"the download of " + pinned[CPU].Spec() + " has sha512", "it was removed and nothing was installed"}},
		{"not found", missing.URL, nil, []string{"404 Not Found"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			_, err := Install(context.Background(), InstallOptions{Root: root, Registry: tc.registry, StallTimeout: 300 * time.Millisecond})
			oneLine(t, err, tc.want...)
			if tc.kind != nil && !errors.Is(err, tc.kind) {
				t.Errorf("%v is not %v", err, tc.kind)
			}
			if _, err := os.Stat(filepath.Join(root, Version)); err == nil {
				t.Error("a runtime was installed")
			}
			for _, e := range installedDirs(t, root) {
				if e != ".download" {
					t.Errorf("left %s in the runtimes directory", e)
				}
			}
		})
	}

	// The truncated download resumes on the next install from where it
	// stopped, once the server sends the rest.
	t.Run("resume", func(t *testing.T) {
		root := t.TempDir()
		half := true
		var ranges []string
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("ETag", `"v1"`)
			ranges = append(ranges, r.Header.Get("Range"))
			if half {
				w.Header().Set("Content-Length", strconv.Itoa(len(data)))
				w.Write(data[:len(data)/2])
				return
			}
			http.ServeContent(w, r, "x.tgz", time.Time{}, strings.NewReader(string(data)))
		}))
		defer srv.Close()
		if _, err := Install(context.Background(), InstallOptions{Root: root, Registry: srv.URL}); err == nil {
			t.Fatal("the truncated download installed")
		}
		half = false
		if _, err := Install(context.Background(), InstallOptions{Root: root, Registry: srv.URL}); err != nil {
			t.Fatal(err)
		}
		if len(ranges) != 2 || ranges[1] != "bytes="+strconv.Itoa(len(data)/2)+"-" {
			t.Errorf("ranges asked: %q", ranges)
		}
	})
}

// TestTarballURL: a mirror base with or without a trailing slash.
func TestTarballURL(t *testing.T) {
	p := pinned[CPU]
	for _, base := range []string{"https://mirror.example/npm", "https://mirror.example/npm/"} {
		if got, want := TarballURL(base, p), "https://mirror.example/npm/@node-llama-cpp/linux-x64/-/linux-x64-3.22.1.tgz"; got != want {
			t.Errorf("TarballURL(%q) = %q, want %q", base, got, want)
		}
	}
	if got := TarballURL("", Source); got != DefaultRegistry+"/node-llama-cpp/-/node-llama-cpp-3.22.1.tgz" {
		t.Errorf("source URL %q", got)
	}
	if got := p.PackName(); got != "node-llama-cpp-linux-x64-3.22.1.tgz" {
		t.Errorf("PackName %q", got)
	}
}
