package compiler

import (
	"encoding/binary"
	"errors"
	"strings"
	"testing"

	"github.com/maskc/maskc/hipsrc"
	"github.com/maskc/maskc/runtime"
	"github.com/maskc/maskc/runtime/fake"
)

// bwdSeen is what the fake maskc_attn_bwd saw: MaskcBwdShape's dbuf and
// dsink, and the launch order.
type bwdSeen struct {
	entries []string
	dbuf    [hipsrc.MaxBuffers]uint64
	dsink   uint64
	dqAcc   uint64
}

// fakeBwdDevice records the backward launches.
func fakeBwdDevice(seen *bwdSeen) *runtime.Device {
	fb := fake.New()
	fb.Register(runtime.AttentionEntry, func(*fake.Backend, fake.Launch) error { return nil })
	fb.Register(runtime.TileFlagsEntry, func(*fake.Backend, fake.Launch) error { return nil })
	field := func(sh []byte, name string) uint64 {
		f, _ := hipsrc.BwdShapeStruct.Field(name)
		return binary.LittleEndian.Uint64(sh[f.Offset:])
	}
	for _, e := range hipsrc.BwdEntries {
		fb.Register(e.Name, func(_ *fake.Backend, l fake.Launch) error {
			seen.entries = append(seen.entries, e.Name)
			if e.Name == hipsrc.BwdMainEntry {
				sh := fake.Param[[352]byte](l.Params, 6)
				f, _ := hipsrc.BwdShapeStruct.Field("dbuf")
				for i := range seen.dbuf {
					seen.dbuf[i] = binary.LittleEndian.Uint64(sh[f.Offset+8*i:])
				}
				seen.dsink, seen.dqAcc = field(sh[:], "dsink"), field(sh[:], "dq_acc")
			}
			return nil
		})
	}
	return runtime.NewDevice(fb, runtime.Options{DisableCache: true})
}

// TestBackwardMapsGradientBuffers: Attention.Backward takes one gradient per
// GradBuffers entry (differentiable buffers, then the sink), passes them in
// the right MaskcBwdShape slots, launches the entries in order, and
// refuses a wrong count with the names it wants.
func TestBackwardMapsGradientBuffers(t *testing.T) {
	if got := int(hipsrc.BwdShapeStruct.Size); got != 352 {
		t.Fatalf("MaskcBwdShape is %d bytes; update the fake's view", got)
	}
	var seen bwdSeen
	d := fakeBwdDevice(&seen)
	p := func() runtime.DevicePtr { return alloc(t, d) }
	q, k, v, o, lse, dO, dq, dk, dv := p(), p(), p(), p(), p(), p(), p(), p(), p()

	a := loadGPTOSS(t, d) // layer_0: a sink, no buffer
	defer a.Close()
	if got := strings.Join(a.GradBuffers(), ","); got != "sinks" {
		t.Fatalf("GradBuffers() = %s", got)
	}
	sink, dsink := p(), p()
	if err := a.Bind("sinks", sink); err != nil {
		t.Fatal(err)
	}
	sz := Sizes{B: 1, H: 4, HKV: 2, Sq: 8, Skv: 8}
	err := a.Backward(0, dO, q, k, v, o, lse, 0, dq, dk, dv, []runtime.DevicePtr{dsink, p()}, sz, false)
	var re *runtime.Error
	if !errors.As(err, &re) || re.Code != runtime.CodeBuffers || !strings.Contains(err.Error(), "want 1 (sinks) or none") {
		t.Fatalf("two gradients for one: %v", err)
	}
	if err := a.Backward(0, dO, q, k, v, o, lse, 0, dq, dk, dv, []runtime.DevicePtr{dsink}, sz, true); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(seen.entries, " "); got != "maskc_attn_bwd_pre maskc_attn_bwd maskc_attn_bwd_dq maskc_attn_bwd_sink" {
		t.Errorf("deterministic launches: %s", got)
	}
	if seen.dsink != uint64(dsink) || seen.dqAcc != 0 {
		t.Errorf("dsink %#x (want %#x), dq_acc %#x in deterministic mode", seen.dsink, dsink, seen.dqAcc)
	}
	seen = bwdSeen{}
	if err := a.Backward(0, dO, q, k, v, o, lse, 0, dq, dk, dv, nil, sz, false); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(seen.entries, " "); got != "maskc_attn_bwd_pre maskc_attn_bwd maskc_attn_bwd_dq_convert" || seen.dsink != 0 || seen.dqAcc == 0 {
		t.Errorf("atomic, no sink gradient: %s, dsink %#x, dq_acc %#x", got, seen.dsink, seen.dqAcc)
	}

	u, diags, err := CompileFile(examples+"relative_bias.flex", Options{})
	if err != nil || diags.HasErrors() {
		t.Fatal(err, diags)
	}
	rb, err := u.Load(d, u.Names()[0])
	if err != nil {
		t.Fatal(err)
	}
	defer rb.Close()
	if got := strings.Join(rb.GradBuffers(), ","); got != "bias" {
		t.Fatalf("relative_bias GradBuffers() = %s", got)
	}
	for _, name := range rb.Buffers() {
		if err := rb.Bind(name, p()); err != nil {
			t.Fatal(err)
		}
	}
	seen = bwdSeen{}
	dbias := p()
	if err := rb.Backward(0, dO, q, k, v, o, lse, p(), dq, dk, dv, []runtime.DevicePtr{dbias}, Sizes{B: 1, H: 2, Sq: 8, Skv: 8}, false); err != nil {
		t.Fatal(err)
	}
	slot := rb.Kernel.GradBuffers[0].Slot
	if seen.dbuf[slot] == 0 || seen.dbuf[slot] == uint64(dbias) {
		t.Errorf("dbuf[%d] = %#x: want the fixed-point sums, not the fp32 output", slot, seen.dbuf[slot])
	}
	if got := seen.entries[len(seen.entries)-1]; got != hipsrc.BwdBufConvertEntry {
		t.Errorf("last launch %s, want the buffer gradient's conversion", got)
	}
}
