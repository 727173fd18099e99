package hipsrc

import (
	"slices"
	"strings"
	"testing"
)

// TestDecodeConstantsMirrorSource keeps attn_decode.h's launch shape equal to
// the Go constants launchers read.
func TestDecodeConstantsMirrorSource(t *testing.T) {
	for _, c := range []struct {
		name string
		want int
	}{{"MASKC_DEC_WARPS", DecodeWarps}, {"MASKC_DEC_ROWS", DecodeRows}, {"MASKC_DEC_MAX_SQ", DecodeMaxSq}} {
		if got := define(t, AttnDecode, c.name); got != c.want {
			t.Errorf("%s = %d, Go has %d", c.name, got, c.want)
		}
	}
	if NVIDIA.DecodeThreads() != 128 || AMD.DecodeThreads() != 256 || NVIDIAWGMMA.DecodeThreads() != 128 {
		t.Errorf("decode threads %d / %d / %d", NVIDIA.DecodeThreads(), AMD.DecodeThreads(), NVIDIAWGMMA.DecodeThreads())
	}
}

// TestDecodeEntries checks the decode entry points' parameters (the
// kernel's C signature, in order) and grids: n blocks of key splits and row
// blocks per (kv head, batch) for the kernel, one block per output row for
// the merge.
func TestDecodeEntries(t *testing.T) {
	names := func(e Entry) []string {
		var out []string
		for _, p := range e.Params {
			out = append(out, p.Name+" "+p.CType)
		}
		return out
	}
	get := func(name string) Entry {
		i := slices.IndexFunc(Entries, func(e Entry) bool { return e.Name == name })
		if i < 0 {
			t.Fatalf("no entry %s", name)
		}
		return Entries[i]
	}
	dec, merge := get(DecodeEntry), get(DecodeMergeEntry)
	want := []string{"Q const T*", "K const T*", "V const T*", "O T*", "LSE float*", "shape MaskcShape", "buf MaskcBuffers",
		"ws_o float*", "ws_lse float*", "n_split int"}
	if got := names(dec); !slices.Equal(got, want) {
		t.Errorf("%s params %q, want %q", DecodeEntry, got, want)
	}
	if got := names(merge); !slices.Equal(got, []string{"O T*", "LSE float*", "shape MaskcShape", "ws_o float*", "ws_lse float*", "n_split int"}) {
		t.Errorf("%s params %q", DecodeMergeEntry, got)
	}
	sz := LaunchSizes{B: 3, H: 32, HKV: 4, Sq: 4, Skv: 1 << 15, N: 12}
	if g := dec.Eval(sz, BlockN); g != [3]int{12, 4, 3} {
		t.Errorf("decode grid %v", g)
	}
	if g := merge.Eval(sz, BlockN); g != [3]int{4, 32, 3} {
		t.Errorf("merge grid %v", g)
	}
	if dec.When != "decode" || merge.When != "decode" || dec.SharedMem || merge.SharedMem {
		t.Errorf("when %q %q, shared memory %v %v", dec.When, merge.When, dec.SharedMem, merge.SharedMem)
	}
	// The kernels' C signatures name the same parameters in the same order.
	for _, e := range []Entry{dec, merge} {
		i := strings.Index(AttnDecode, "maskc_attn_decode"+map[bool]string{true: "(", false: "_merge("}[e.Name == DecodeEntry])
		if i < 0 {
			t.Fatalf("attn_decode.h defines no %s", e.Name)
		}
		sig := AttnDecode[i:]
		sig = sig[:strings.Index(sig, ")")]
		at := 0
		for _, p := range e.Params {
			j := strings.Index(sig[at:], " "+p.Name+",")
			if j < 0 {
				j = strings.Index(sig[at:], " "+p.Name)
			}
			if j < 0 {
				t.Errorf("%s: parameter %s missing or out of order in %q", e.Name, p.Name, sig)
				break
			}
			at += j + 1
		}
	}
}
