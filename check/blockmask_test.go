package check

import "testing"

// TestCreateBlockMask: create_block_mask(mask_mod, ...) is mask_mod, where
// a pasted factory returns FlexAttention's BlockMask of its inner def (the
// usual helper's shape) or a setting passes one; its other arguments do not
// change which pairs are kept. A keyword it does not take, or no mod, is a
// positioned error.
func TestCreateBlockMask(t *testing.T) {
	const src = `from torch.nn.attention.flex_attention import create_block_mask

def causal(b, h, q_idx, kv_idx):
    return q_idx >= kv_idx

def banded(n, w):
    def keep(b, h, q_idx, kv_idx):
        return (q_idx >= kv_idx) & (q_idx - kv_idx <= w)

    bm = create_block_mask(keep, B=None, H=None, Q_LEN=n, KV_LEN=n, _compile=True)
    return bm

def direct(n):
    def inner(b, h, q_idx, kv_idx):
        return kv_idx < n
    return create_block_mask(inner, None, None, 4096, 4096, "cuda", 128)

`
	for _, tc := range []struct{ setting, want string }{
		{"mask = banded(8192, 64)", "(q >= kv) & (q - kv <= 64)"},
		{"mask = direct(16)", "kv < 16"},
		{"mask = create_block_mask(causal, None, None, 1024, 1024)", "q >= kv"},
		{"mask = create_block_mask(noop_mask, None, None, 1024, 1024)", "True"},
		{"mask = create_block_mask(mask_mod=causal, B=2)", "q >= kv"},
		{"mask = create_block_mask(causal, block_size=64)", "E075 create_block_mask takes no keyword argument block_size="},
		{"mask = create_block_mask(B=2)", "E023 create_block_mask needs its mask mod"},
	} {
		t.Run(tc.setting, func(t *testing.T) { checkSetting(t, src, tc.setting, tc.want) })
	}
}
