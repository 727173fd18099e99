# Llama-4 style chunked attention: causal inside fixed chunks.
def generate_chunked(chunk_size: int):
    def chunked(b, h, q_idx, kv_idx):
        same_chunk = (q_idx // chunk_size) == (kv_idx // chunk_size)
        return same_chunk & (q_idx >= kv_idx)
    return chunked

attention chunked {
    mask = generate_chunked(64)
}
