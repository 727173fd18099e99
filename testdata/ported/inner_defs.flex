# A factory with several inner defs: mods and a helper that see the
# factory's arguments and each other, combined before the return (issue 28).
buffer document_id: i32[KV] segments

def generate_local_document_mask(window: int, document_id):
    def window_mask(b, h, q_idx, kv_idx):
        return distance(q_idx, kv_idx) <= window
    def same_document(b, h, q_idx, kv_idx):
        return document_id[q_idx] == document_id[kv_idx]
    def distance(q_idx, kv_idx):
        return q_idx - kv_idx
    def causal(b, h, q_idx, kv_idx):
        return distance(q_idx, kv_idx) >= 0
    local_document = and_masks(window_mask, same_document, causal)
    local_document.__name__ = f"local_document_{window}"
    return local_document

attention local_documents {
    mask = generate_local_document_mask(64, document_id)
}
