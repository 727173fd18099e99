package codegen

import "testing"

func TestTorchExpr(t *testing.T) {
	tests := []struct{ name, decls, mask, score, want string }{
		{"causal", "", "q >= kv", "", "(q >= kv)"},
		{"window", "param W = 1024\n", "q >= kv and q - kv <= W", "", "((q >= kv) & ((q - kv) <= 1024))"},
		{"prefix", "", "kv < 2048 or q >= kv", "", "((kv < 2048) | (q >= kv))"},
		{"floor", "", "(q - kv) // 2 == q % 3", "", "(torch.div((q - kv), 2, rounding_mode='floor') == torch.remainder(q, 3))"},
		{"sizes", "", "kv < KV // 2", "", "(kv < (KV // 2))"},
		{"not", "", "not (q < kv)", "", "(~(q < kv))"},
		{"document", "buffer doc: i32[KV] segments\n", "doc[q] == doc[kv]", "", "(doc[q] == doc[kv])"},
		{"dilated", "", "abs(q - kv) <= 8 and abs(q - kv) % 2 == 0", "",
			"((torch.abs((q - kv)) <= 8) & (torch.remainder(torch.abs((q - kv)), 2) == 0))"},
		{"where", "", "", "where(q >= kv, score, -inf)", "torch.where((q >= kv), score, float('-inf'))"},
		{"softcap", "", "", "30.0 * tanh(score / 30.0)", "(30.0 * torch.tanh((score / 30.0)))"},
		{"min_scalar", "", "min(q, 40) >= kv", "", "(torch.minimum(q, torch.as_tensor(40)) >= kv)"},
		{"clamp", "", "", "clamp(score, -5.0, 5.0)", "torch.clamp(score, torch.as_tensor(-5.0), torch.as_tensor(5.0))"},
		// A step (int, floor, ceil, a comparison) of a float is taken in
		// float32, as the kernel takes it; the rest stays in the caller's
		// precision.
		{"int", "", "", "score + int(score * 4.0)", "(score + torch.nan_to_num((score.float() * 4.0).double(), nan=0.0).clamp(-9223372036854775808.0, 9223372036854774784.0).long())"},
		{"int of int", "", "", "score + int(q - kv)", "(score + torch.nan_to_num((q - kv).double(), nan=0.0).clamp(-9223372036854775808.0, 9223372036854774784.0).long())"},
		{"t5 bucket", "buffer bias: f32[H, 32]\n", "", "score + bias[h, min(8 + int(log(float(abs(kv - q)) / 8) / 2.772588722239781 * 8), 15)]",
			"(score + bias[h, torch.minimum((8 + torch.nan_to_num(((torch.log((torch.abs((kv - q)).float() / 8)) / 2.772588722239781) * 8).double(), nan=0.0).clamp(-9223372036854775808.0, 9223372036854774784.0).long()), torch.as_tensor(15))])"},
		{"int of buffer", "buffer w: f64[H]\n", "", "score * float(h) + int(w[h] * 2.0)",
			"((score * h.double()) + torch.nan_to_num((w[h].float() * 2.0).double(), nan=0.0).clamp(-9223372036854775808.0, 9223372036854774784.0).long())"},
		{"floor", "", "", "score + floor(score / 3.0)", "(score + torch.floor((score.float() / 3.0)))"},
		{"float compare", "", "log(float(kv + 1)) < 3.0", "", "(torch.log((kv + 1).float()) < 3.0)"},
		{"score compare", "", "", "where(score > 0.0, score, 0.0)", "torch.where((score.float() > 0.0), score, 0.0)"},
		{"float", "", "", "score + float(q - kv)", "(score + (q - kv).double())"},
		{"bias", "buffer bias: f32[H, 2 * KV - 1]\n", "", "score + bias[h, q - kv + KV - 1]", "(score + bias[h, (((q - kv) + KV) - 1)])"},
		// A u8/i8/i16 read is promoted to int64 as maskc's ints are:
		// torch would keep uint8 in tag[kv] + 200 and wrap at 256.
		{"narrow ints", "buffer tag: u8[KV]\nbuffer b16: i16[KV]\nbuffer doc32: i32[KV]\n", "tag[kv] + 200 >= 300 or b16[q] * 4 > 70000 or doc32[kv] == 1", "",
			"((((tag[kv].long() + 200) >= 300) | ((b16[q].long() * 4) > 70000)) | (doc32[kv] == 1))"},
		{"trig", "", "", "torch.sin(score) + cos(score) * tan(score) - erf(score)", "((torch.sin(score) + (torch.cos(score) * torch.tan(score))) - torch.erf(score))"},
		// N-D buffers: one index per dimension, as torch indexes them.
		{"3-D selection", "buffer sel: i32[H, 256, 4]\n", "sel[h, q // 128, 1] == kv // 128", "",
			"(sel[h, torch.div(q, 128, rounding_mode='floor'), 1] == torch.div(kv, 128, rounding_mode='floor'))"},
		{"4-D table", "buffer keep: bool[B, 2, 128, 128]\n", "keep[b, h % 2, q // 64, kv // 64]", "",
			"keep[b, torch.remainder(h, 2), torch.div(q, 64, rounding_mode='floor'), torch.div(kv, 64, rounding_mode='floor')]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := checkSource(t, tt.name+".flex", maskCaseSource(tt.decls, tt.mask, tt.score))
			a := p.Attentions[0]
			l := a.Mask
			if tt.score != "" {
				l = a.Score
			}
			if got := TorchExpr(l); got != tt.want {
				t.Errorf("TorchExpr = %s\n            want %s", got, tt.want)
			}
		})
	}
}
