package llamacpp

import "testing"

// "auto" (and unset) resolve to the provider's faster choice; on and off
// are kept whatever the case; anything else is refused naming the value.
func TestFlashAttnResolves(t *testing.T) {
	auto := "off"
	if FlashAttnDefault {
		auto = "on"
	}
	for _, tc := range []struct{ in, want, err string }{
		{"", auto, ""},
		{"auto", auto, ""},
		{"AUTO", auto, ""},
		{"on", "on", ""},
		{"Off", "off", ""},
		{"true", "", `flash attention "true": want auto, on or off`},
	} {
		o, err := withDefaults(Options{ModelPath: "m.gguf", FlashAttn: tc.in})
		if tc.err != "" {
			if err == nil || err.Error() != tc.err {
				t.Errorf("%q: err %v, want %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || o.FlashAttn != tc.want || o.flashAttnOn() != (tc.want == "on") || FlashAttnOn(tc.in) != (tc.want == "on") {
			t.Errorf("%q: %q, %v; want %q", tc.in, o.FlashAttn, err, tc.want)
		}
	}
	// A quantized KV cache is allowed by default exactly where auto means on.
	_, err := withDefaults(Options{ModelPath: "m.gguf", KVCacheType: "q8_0"})
	if (err == nil) != FlashAttnDefault {
		t.Errorf("q8_0 KV cache with flash attention auto: err %v", err)
	}
}
