"""A tiny Llama-style causal LM with a Hugging Face-like loading API.

`TinyLlamaForCausalLM.from_pretrained(name, torch_dtype=..., device_map=...)`
mirrors the transformers call. Checkpoints are not downloaded: the named
preset builds the architecture and initialises it from a seed derived from the
name, so the same name always gives the same weights.
"""
import zlib
from dataclasses import dataclass, replace

import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass
class LlamaConfig:
    vocab_size: int = 512
    hidden_size: int = 64
    intermediate_size: int = 176
    num_hidden_layers: int = 2
    num_attention_heads: int = 4
    num_key_value_heads: int = 2
    max_position_embeddings: int = 256
    rms_norm_eps: float = 1e-6
    rope_theta: float = 10000.0
    bos_token_id: int = 1
    eos_token_id: int = 2
    pad_token_id: int = 0
    initializer_range: float = 0.02


PRESETS = {
    "acme/tiny-llama-64": LlamaConfig(),
    "acme/tiny-llama-128": LlamaConfig(hidden_size=128, intermediate_size=344, num_hidden_layers=4,
                                       num_attention_heads=8, num_key_value_heads=4),
}


class LlamaRMSNorm(nn.Module):
    def __init__(self, hidden_size, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden_size))
        self.variance_epsilon = eps

    def forward(self, hidden_states):
        input_dtype = hidden_states.dtype
        hidden_states = hidden_states.to(torch.float32)
        variance = hidden_states.pow(2).mean(-1, keepdim=True)
        hidden_states = hidden_states * torch.rsqrt(variance + self.variance_epsilon)
        return self.weight * hidden_states.to(input_dtype)


class LlamaRotaryEmbedding(nn.Module):
    def __init__(self, dim, base=10000.0):
        super().__init__()
        inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.float32) / dim))
        self.register_buffer("inv_freq", inv_freq, persistent=False)

    @torch.no_grad()
    def forward(self, x, position_ids):
        # position_ids: (batch, seq)
        freqs = position_ids[:, :, None].float() * self.inv_freq[None, None, :]
        emb = torch.cat((freqs, freqs), dim=-1)
        return emb.cos().to(x.dtype), emb.sin().to(x.dtype)


def rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


def apply_rotary_pos_emb(q, k, cos, sin):
    cos, sin = cos.unsqueeze(1), sin.unsqueeze(1)
    return q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin


class LlamaAttention(nn.Module):
    def __init__(self, config: LlamaConfig):
        super().__init__()
        self.num_heads = config.num_attention_heads
        self.num_kv_heads = config.num_key_value_heads
        self.head_dim = config.hidden_size // config.num_attention_heads
        self.q_proj = nn.Linear(config.hidden_size, self.num_heads * self.head_dim, bias=False)
        self.k_proj = nn.Linear(config.hidden_size, self.num_kv_heads * self.head_dim, bias=False)
        self.v_proj = nn.Linear(config.hidden_size, self.num_kv_heads * self.head_dim, bias=False)
        self.o_proj = nn.Linear(self.num_heads * self.head_dim, config.hidden_size, bias=False)

    def forward(self, hidden_states, cos, sin, past_key_value=None):
        bsz, q_len, _ = hidden_states.shape
        q = self.q_proj(hidden_states).view(bsz, q_len, self.num_heads, self.head_dim).transpose(1, 2)
        k = self.k_proj(hidden_states).view(bsz, q_len, self.num_kv_heads, self.head_dim).transpose(1, 2)
        v = self.v_proj(hidden_states).view(bsz, q_len, self.num_kv_heads, self.head_dim).transpose(1, 2)
        q, k = apply_rotary_pos_emb(q, k, cos, sin)

        if past_key_value is not None:
            k = torch.cat([past_key_value[0], k], dim=2)
            v = torch.cat([past_key_value[1], v], dim=2)
        present = (k, v)

        groups = self.num_heads // self.num_kv_heads
        k = k.repeat_interleave(groups, dim=1)
        v = v.repeat_interleave(groups, dim=1)
        # causal only while there is more than one query (prefill); a single
        # decode query attends to the whole cache
        attn = F.scaled_dot_product_attention(q, k, v, is_causal=q_len > 1)
        attn = attn.transpose(1, 2).reshape(bsz, q_len, -1)
        return self.o_proj(attn), present


class LlamaMLP(nn.Module):
    def __init__(self, config: LlamaConfig):
        super().__init__()
        self.gate_proj = nn.Linear(config.hidden_size, config.intermediate_size, bias=False)
        self.up_proj = nn.Linear(config.hidden_size, config.intermediate_size, bias=False)
        self.down_proj = nn.Linear(config.intermediate_size, config.hidden_size, bias=False)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class LlamaDecoderLayer(nn.Module):
    def __init__(self, config: LlamaConfig):
        super().__init__()
        self.self_attn = LlamaAttention(config)
        self.mlp = LlamaMLP(config)
        self.input_layernorm = LlamaRMSNorm(config.hidden_size, config.rms_norm_eps)
        self.post_attention_layernorm = LlamaRMSNorm(config.hidden_size, config.rms_norm_eps)

    def forward(self, hidden_states, cos, sin, past_key_value=None):
        attn_out, present = self.self_attn(self.input_layernorm(hidden_states), cos, sin, past_key_value)
        hidden_states = hidden_states + attn_out
        hidden_states = hidden_states + self.mlp(self.post_attention_layernorm(hidden_states))
        return hidden_states, present


class PreTrainedModel(nn.Module):
    """The bits of transformers.PreTrainedModel this project relies on."""

    config_class = LlamaConfig

    def __init__(self, config):
        super().__init__()
        self.config = config

    @property
    def device(self):
        return next(self.parameters()).device

    @property
    def dtype(self):
        return next(self.parameters()).dtype

    def _init_weights(self, module):
        std = self.config.initializer_range
        if isinstance(module, (nn.Linear, nn.Embedding)):
            module.weight.data.normal_(mean=0.0, std=std)

    @classmethod
    def from_pretrained(cls, pretrained_model_name_or_path, *, torch_dtype=None, device_map=None, **overrides):
        if pretrained_model_name_or_path not in PRESETS:
            raise ValueError(f"unknown model {pretrained_model_name_or_path!r}; available: {sorted(PRESETS)}")
        config = replace(PRESETS[pretrained_model_name_or_path], **overrides)
        seed = zlib.crc32(pretrained_model_name_or_path.encode())
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            model = cls(config)
            model.apply(model._init_weights)
        if torch_dtype is not None:
            model = model.to(torch_dtype)
        if device_map is not None:
            model = model.to(_resolve_device_map(device_map))
        model.eval()
        return model


def _resolve_device_map(device_map):
    """Single-device subset of accelerate's device_map handling.

    "auto" fills GPUs first and falls back to the CPU when no GPU is visible;
    an int is a CUDA ordinal; strings and torch.device are used as given.
    """
    if device_map == "auto":
        if torch.cuda.is_available():
            return torch.device("cuda", torch.cuda.current_device())
        return torch.device("cpu")
    if isinstance(device_map, dict):
        devices = set(device_map.values())
        if len(devices) != 1:
            raise NotImplementedError("multi-device maps are not supported by this loader")
        device_map = devices.pop()
    if isinstance(device_map, int):
        return torch.device("cuda", device_map)
    return torch.device(device_map)


class TinyLlamaForCausalLM(PreTrainedModel):
    def __init__(self, config: LlamaConfig):
        super().__init__(config)
        self.embed_tokens = nn.Embedding(config.vocab_size, config.hidden_size, config.pad_token_id)
        self.layers = nn.ModuleList([LlamaDecoderLayer(config) for _ in range(config.num_hidden_layers)])
        self.norm = LlamaRMSNorm(config.hidden_size, config.rms_norm_eps)
        self.rotary_emb = LlamaRotaryEmbedding(config.hidden_size // config.num_attention_heads,
                                               config.rope_theta)
        self.lm_head = nn.Linear(config.hidden_size, config.vocab_size, bias=False)

    def forward(self, input_ids, past_key_values=None, use_cache=True):
        bsz, seq_len = input_ids.shape
        past_len = 0 if past_key_values is None else past_key_values[0][0].shape[2]
        position_ids = torch.arange(past_len, past_len + seq_len, device=input_ids.device)
        position_ids = position_ids.unsqueeze(0).expand(bsz, -1)

        hidden_states = self.embed_tokens(input_ids)
        cos, sin = self.rotary_emb(hidden_states, position_ids)
        presents = []
        for i, layer in enumerate(self.layers):
            past = past_key_values[i] if past_key_values is not None else None
            hidden_states, present = layer(hidden_states, cos, sin, past)
            presents.append(present)
        logits = self.lm_head(self.norm(hidden_states)).float()
        return logits, (tuple(presents) if use_cache else None)

    @torch.inference_mode()
    def generate(self, input_ids, max_new_tokens=20, do_sample=False, temperature=1.0, top_k=50,
                 use_cache=True, eos_token_id=None):
        eos_token_id = self.config.eos_token_id if eos_token_id is None else eos_token_id
        finished = torch.zeros(input_ids.shape[0], dtype=torch.bool, device=input_ids.device)
        past = None
        tokens = input_ids
        for _ in range(max_new_tokens):
            model_input = tokens[:, -1:] if (use_cache and past is not None) else tokens
            logits, past = self(model_input, past_key_values=past if use_cache else None, use_cache=use_cache)
            next_logits = logits[:, -1, :]
            if do_sample:
                next_logits = next_logits / temperature
                if top_k:
                    kth = torch.topk(next_logits, top_k).values[:, -1, None]
                    next_logits = next_logits.masked_fill(next_logits < kth, float("-inf"))
                probs = torch.softmax(next_logits, dim=-1)
                next_token = torch.multinomial(probs, num_samples=1)
            else:
                next_token = next_logits.argmax(dim=-1, keepdim=True)
            next_token = next_token.masked_fill(finished[:, None], self.config.pad_token_id)
            tokens = torch.cat([tokens, next_token], dim=1)
            finished |= next_token.squeeze(1) == eos_token_id
            if finished.all():
                break
        return tokens
