package codegen

import (
	"os/exec"
	"strings"
	"testing"
)

// TestFlaggedReadOnHost compiles the accessors of a kernel whose score
// reads tab[idx[kv]] (an index computed from buffer values) on the host and
// runs them: in range, the flagged accessor reads the element and leaves
// the status word alone; outside (below 0, at the extent, far above), it
// returns 0.0, touches no memory and sets MASKC_STATUS_READ_OUT_OF_RANGE,
// which stays set (sticky); with no status words (an older launcher) it
// returns 0.0 and does not crash. idx's own read (at kv) uses the plain
// accessor, which never flags.
func TestFlaggedReadOnHost(t *testing.T) {
	p := checkSource(t, "in.flex", "buffer idx: i32[KV]\nbuffer tab: f32[16]\nscore s(score, b, h, q, kv) = score + tab[idx[kv]]\nattention a {\n    score = s\n}\n")
	k, diags := Generate(p, p.Attentions[0], Options{})
	if diags.HasErrors() {
		t.Fatal(diags.Render())
	}
	if !strings.Contains(k.Generated, "maskc_read_tab_flagged(buf, ") || strings.Contains(k.Generated, "maskc_read_idx_flagged") {
		t.Fatalf("the score does not call tab's flagged accessor (and idx's plain one):\n%s", k.Generated)
	}
	const main = `
static int dummy[] = {FNS};
int main() {
  float tab[16];
  for (int i = 0; i < 16; ++i) tab[i] = 1.5f + i;
  MaskcBuffers buf;
  memset(&buf, 0, sizeof buf);
  unsigned status[MASKC_STATUS_WORDS] = {0};
  buf.ptr[1] = tab;
  buf.dim[1][0] = 16;
  buf.dim[1][1] = 1;
  buf.status = status;
  if (case0::maskc_read_tab_flagged(buf, 0LL) != 1.5f || case0::maskc_read_tab_flagged(buf, 15) != 16.5f || status[0] != 0) return 1;
  if (case0::maskc_read_tab(buf, 16LL) != 0.0f || status[0] != 0) return 2;  // the plain accessor never flags
  if (case0::maskc_read_tab_flagged(buf, 16LL) != 0.0f || status[0] != MASKC_STATUS_READ_OUT_OF_RANGE) return 3;
  status[0] = 0;
  if (case0::maskc_read_tab_flagged(buf, -1) != 0.0f || status[0] != MASKC_STATUS_READ_OUT_OF_RANGE) return 4;
  if (case0::maskc_read_tab_flagged(buf, 5) != 6.5f || status[0] != MASKC_STATUS_READ_OUT_OF_RANGE) return 5;  // sticky
  status[0] = 0;
  if (case0::maskc_read_tab_flagged(buf, 1LL << 40) != 0.0f || status[0] != MASKC_STATUS_READ_OUT_OF_RANGE) return 6;
  buf.status = nullptr;
  if (case0::maskc_read_tab_flagged(buf, 99) != 0.0f) return 7;
  return dummy[0];
}
`
	exe := buildHostMain(t, []hostCase{{name: "flagged", prog: p, attn: p.Attentions[0], kernel: k}}, main, func(int) string { return "0" })
	if out, err := exec.Command(exe).CombinedOutput(); err != nil {
		t.Fatalf("flagged accessor check failed: %v\n%s", err, out)
	}
}
