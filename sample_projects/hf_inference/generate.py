"""Greedy generation benchmark for a small causal LM.

    python generate.py --batch-size 4 --max-new-tokens 64
"""
import argparse
import time

import torch

from modeling import TinyLlamaForCausalLM


def parse_args():
    p = argparse.ArgumentParser(description="causal LM generation latency")
    p.add_argument("--model", default="acme/tiny-llama-64")
    p.add_argument("--batch-size", type=int, default=2)
    p.add_argument("--prompt-len", type=int, default=8)
    p.add_argument("--max-new-tokens", type=int, default=12)
    p.add_argument("--warmup", type=int, default=1)
    p.add_argument("--runs", type=int, default=2)
    p.add_argument("--do-sample", action="store_true")
    p.add_argument("--no-cache", action="store_true", help="recompute the full prefix every step")
    p.add_argument("--seed", type=int, default=0)
    return p.parse_args()


def main():
    args = parse_args()
    torch.manual_seed(args.seed)
    torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction = True

    model = TinyLlamaForCausalLM.from_pretrained(args.model, device_map="auto", torch_dtype=torch.float16)
    model.half()
    print(f"loaded {args.model} on {model.device} ({model.dtype}), "
          f"{sum(p.numel() for p in model.parameters()) / 1e6:.2f}M parameters")

    vocab = model.config.vocab_size
    # synthetic prompts (token ids above the special tokens)
    prompts = torch.randint(3, vocab, (args.batch_size, args.prompt_len))
    input_ids = prompts.cuda()

    gen_kwargs = dict(max_new_tokens=args.max_new_tokens, do_sample=args.do_sample,
                      use_cache=not args.no_cache)

    with torch.inference_mode():
        for _ in range(args.warmup):
            model.generate(input_ids, **gen_kwargs)

        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        latencies = []
        for _ in range(args.runs):
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            start.record()
            output = model.generate(input_ids, **gen_kwargs)
            end.record()
            torch.cuda.synchronize()
            latencies.append((time.perf_counter() - t0, start.elapsed_time(end) / 1000))

    new_tokens = output.shape[1] - input_ids.shape[1]
    wall = sum(l[0] for l in latencies) / len(latencies)
    kernel = sum(l[1] for l in latencies) / len(latencies)
    print(f"generated {new_tokens} tokens x {args.batch_size} sequences")
    print(f"latency {wall * 1000:.1f} ms (events {kernel * 1000:.1f} ms), "
          f"{new_tokens * args.batch_size / wall:.1f} tokens/s")
    print("sample:", output[0, args.prompt_len:].tolist())


if __name__ == "__main__":
    main()
