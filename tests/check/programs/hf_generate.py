"""HF inference as people write it: a tiny GPT-2 from its config (random init, no hub), greedy
`generate()`; `python hf_generate.py static` uses a static KV cache."""
import sys

import torch
from transformers import GPT2Config, GPT2LMHeadModel

torch.manual_seed(0)
config = GPT2Config(vocab_size=64, n_positions=64, n_embd=32, n_layer=2, n_head=2)
model = GPT2LMHeadModel(config).to("neuron").eval()
prompt = torch.randint(0, 64, (1, 6), device="neuron")
cache = {"cache_implementation": "static"} if sys.argv[1:] == ["static"] else {}
with torch.no_grad():
    out = model.generate(prompt, max_new_tokens=8, do_sample=False, pad_token_id=0, **cache)
print(out.shape)
