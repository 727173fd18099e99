# Python that real FlexAttention code carries (issue 28): fmt keeps it.
buffer document_id: i32[KV]

@lru_cache
def causal(
    b,
    h,
    q_idx,
    kv_idx,
):
    return q_idx >= kv_idx

def generate_doc_mask_mod(document_id, offset: int = 0, pair: tuple[int, int] = (1, 2)):
    """Documents."""
    def doc_mask_mod(b, h, q_idx, kv_idx):
        same = document_id[q_idx] == document_id[kv_idx]
        "a string statement"
        return same
    doc_mask_mod.__name__ = f"doc_{offset}"
    return doc_mask_mod

attention a {
    mask = and_masks(causal, generate_doc_mask_mod(document_id))
}
