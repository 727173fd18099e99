# Packed documents with a sliding window inside each document.
buffer document_id: i32[KV] segments

def doc_mask(b, h, q_idx, kv_idx):
    return document_id[q_idx] == document_id[kv_idx]

def generate_sliding_window(window_size: int):
    def sliding_window(b, h, q_idx, kv_idx):
        return (q_idx >= kv_idx) & (q_idx - kv_idx < window_size)
    return sliding_window

attention packed_swa {
    mask = and_masks(doc_mask, generate_sliding_window(32))
}
