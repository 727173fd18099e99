# attention-gym: document (packed sequence) causal mask.
buffer document_id: i32[KV] segments

def document_causal_mask(b, h, q_idx, kv_idx):
    causal_mask = q_idx >= kv_idx
    document_mask = document_id[q_idx] == document_id[kv_idx]
    return causal_mask & document_mask

attention packed {
    mask = document_causal_mask
}
