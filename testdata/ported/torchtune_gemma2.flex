# torchtune's Gemma 2 flex mods (pytorch/torchtune,
# torchtune/models/gemma2/_attention_utils.py), pasted as written: the causal
# sliding window (None for plain causal) and the tanh soft cap with Gemma's
# query_pre_attn_scalar**-0.5 scaling (Gemma 2's window is 4096; 96 here so
# that the torch sample sees it).
def flex_causal_sliding_window(sliding_window_size):
    def sliding_window_causal_mask(b, h, q_idx, kv_idx):
        """Causal mask and sliding window as proposed here:
        https://github.com/pytorch-labs/attention-gym/blob/main/examples/flex_attn.ipynb
        """
        causal_mask = q_idx >= kv_idx
        if sliding_window_size is None:
            # if no sliding window return causal mask
            return causal_mask
        else:
            windowed_mask = q_idx - kv_idx <= sliding_window_size

            return causal_mask & windowed_mask

    return sliding_window_causal_mask

def flex_tanh_soft_capping_with_scaling(softcapping, query_pre_attn_scalar):
    def tanh_soft_capping_with_scaling(score, b, h, q_idx, kv_idx):
        """
        This handle both simple tanh soft capping and custom scaling
        """
        if query_pre_attn_scalar is None:
            # usual scaling included in FlexAttention
            # TODO: could be made faster with approximate tanh ?
            # https://github.com/pytorch-labs/attention-gym/blob/f7c93ded4abf9fd8d7dc9d8bcbf57e420b891e2d/examples/flex_attn.ipynb#L733
            score = score / softcapping
            score = torch.tanh(score)
            return score * softcapping
        else:
            score = score / softcapping * query_pre_attn_scalar**-0.5
            score = torch.tanh(score)
            return score * softcapping

    return tanh_soft_capping_with_scaling

attention gemma2_local {
    mask = flex_causal_sliding_window(96)
    score = flex_tanh_soft_capping_with_scaling(50.0, 256)
}

attention gemma2_global {
    mask = flex_causal_sliding_window(None)
    score = flex_tanh_soft_capping_with_scaling(50.0, None)
}
