package mcp

import (
	"strings"
	"testing"
)

// A server that fails to start is reported by the reason its stderr gives,
// not by npm's notices printed after it.
func TestStderrReason(t *testing.T) {
	for _, tc := range []struct {
		name, stderr, want string
	}{
		{"one line", "boom\n", "boom"},
		{"nothing", "", ""},
		{"no error words: the last line", "starting\nready on stdio\n\n", "ready on stdio"},
		{"npm 404 then notices", `npm error code E404
npm error 404 Not Found - GET https://registry.npmjs.org/@x%2fnope - Not found
npm error 404
npm error 404  '@x/nope@*' is not in this registry.
npm error 404
npm error 404 Note that you can also install from a
npm error 404 tarball, folder, http url, or git url.
npm error A complete log of this run can be found in: /root/.npm/_logs/2026-11-28T00_00_00_000Z-debug-0.log
npm notice
npm notice New major version of npm available! 10.8.2 -> 11.6.2
npm notice Changelog: https://github.com/npm/cli/releases/tag/v11.6.2
npm notice To update run: npm install -g npm@11.6.2
npm notice
`, "npm error code E404 | npm error 404 Not Found - GET https://registry.npmjs.org/@x%2fnope - Not found | npm error 404  '@x/nope@*' is not in this registry."},
		{"npm offline", `npm error code ENOTFOUND
npm error syscall getaddrinfo
npm error errno ENOTFOUND
npm error network request to https://registry.npmjs.org/x failed, reason: getaddrinfo ENOTFOUND registry.npmjs.org
npm error network This is a problem related to network connectivity.
npm error network In most cases you are behind a proxy or have bad network settings.
`, "npm error code ENOTFOUND | npm error network request to https://registry.npmjs.org/x failed, reason: getaddrinfo ENOTFOUND registry.npmjs.org | npm error network This is a problem related to network connectivity."},
		{"node module missing", `node:internal/modules/cjs/loader:1228
  throw err;
  ^

Error: Cannot find module '/srv/mcp/index.js'
    at Module._resolveFilename (node:internal/modules/cjs/loader:1225:15)
    at Module._load (node:internal/modules/cjs/loader:1051:27)
    at node:internal/main/run_main_module:28:49 {
  code: 'MODULE_NOT_FOUND',
  requireStack: []
}

Node.js v20.11.0
`, "Error: Cannot find module '/srv/mcp/index.js'"},
		{"python traceback", `Traceback (most recent call last):
  File "/srv/server.py", line 1, in <module>
    import mcp
ModuleNotFoundError: No module named 'mcp'
`, "ModuleNotFoundError: No module named 'mcp'"},
		{"a long line is cut", strings.Repeat("x", 300), strings.Repeat("x", 200) + "…"},
	} {
		if got := stderrReason(strings.Split(tc.stderr, "\n")); got != tc.want {
			t.Errorf("%s:\n got %q\nwant %q", tc.name, got, tc.want)
		}
	}
}
